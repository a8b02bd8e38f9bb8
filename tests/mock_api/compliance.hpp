#pragma once
// X's batch compliance jobs (issue 53), as X documents them (docs: batch-compliance quickstart and
// introduction; openapi.json 2.159's ComplianceJob schemas): POST /2/compliance/jobs creates a job
// ({"type":"tweets"|"users","name"?,"resumable"?}), GET /2/compliance/jobs?type=&status= lists a
// token's jobs, GET /2/compliance/jobs/:id shows one. A job's upload_url and download_url are
// signed URLs on a storage host of their own (Google Cloud Storage's XML API at X, the mock's
// --storage-port here), used without a token: PUT text/plain ids, one a line, within the upload
// URL's life (15 minutes); after --compliance-processing-ms the job is complete (or failed, for
// an upload that is not ids), and its download is JSON lines, one per id out of compliance, each
// with the reason the mock's world gives it at the moment the job completed (tweet_model.hpp's
// fates, gone.hpp's changes). One job per type may be active (created or in progress) per token.
// Without sockets: MockApi (compliance_routes.cpp) adds the token, rate limits and headers.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "mock_api/tweets_endpoint.hpp"

namespace tweetkeeper::mock {

struct ComplianceJob {
  std::string id;
  std::string type;  // tweets | users
  std::string name;  // "" : none given
  bool resumable = false;
  std::string token;  // whose job it is
  int64_t created_ms = 0;
  int64_t uploaded_ms = 0;  // 0: nothing uploaded yet
  bool unparsable = false;  // the upload held a line that is no id: the job fails
  std::vector<uint64_t> ids;  // uploaded, distinct, in upload order
};

class ComplianceJobs {
 public:
  // `storage_url`: where the storage host listens (http://host:port), for the signed URLs.
  void SetStorageUrl(const std::string& storage_url);
  void Clear();

  // The three API endpoints, for the caller's token (already accepted and counted).
  EndpointReply Create(const std::string& token, const std::string& body, const MockConfig& config, int64_t now_ms);
  EndpointReply List(const std::string& token, const QueryParams& params, const MockConfig& config, int64_t now_ms);
  EndpointReply Get(const std::string& token, const std::string& id, const QueryParams& params,
                    const MockConfig& config, int64_t now_ms);

  // A request to the storage host: PUT of an upload URL, GET of a download URL, as Cloud Storage
  // answers signed URLs (an XML error body when refused).
  EndpointReply Storage(const std::string& method, const std::string& path, const QueryParams& params,
                        const std::string& content_type, const std::string& body, const MockConfig& config,
                        int64_t now_ms);

  // created | in_progress | complete | failed | expired, at now_ms.
  static std::string Status(const ComplianceJob& job, const MockConfig& config, int64_t now_ms);
  // The download's JSON lines: one per uploaded id out of compliance when the job completed.
  static std::string Results(const ComplianceJob& job, const MockConfig& config);

 private:
  std::string SignedUrl(const ComplianceJob& job, bool upload, const MockConfig& config) const;
  void WriteJob(JsonWriter& w, const ComplianceJob& job, const MockConfig& config, int64_t now_ms) const;

  mutable std::mutex mutex_;
  std::string storage_url_ = "http://127.0.0.1:0";
  uint64_t made_ = 0;
  std::map<std::string, ComplianceJob> jobs_;  // by id
};

}  // namespace tweetkeeper::mock
