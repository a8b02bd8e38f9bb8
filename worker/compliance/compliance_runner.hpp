#pragma once
// An X worker's batch compliance jobs (tweetkeeper.done_recheck; docs/workers.md "Compliance
// jobs"): for each credential it holds, the credential's job from the database
// (compliance_claim()), created at X, its ids uploaded, polled every --compliance-poll, and its
// results stored (store_compliance_results()): the posts past their last refresh that X says were
// deleted, protected, suspended or deactivated are marked so, their payloads erased. A job
// survives the worker: its X job id is in the database, and the next worker resumes it. Runs
// beside the refreshing slots, in a thread of its own, until the stop signal.

#include <chrono>
#include <cstdint>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "credentials/credentials.hpp"
#include "http/http_client.hpp"
#include "stop/stop_signal.hpp"

namespace tweetkeeper::worker::compliance {

class ComplianceDb;  // its SQL calls (compliance_runner.cpp)

struct ComplianceOptions {
  std::string name;
  std::vector<std::string> dsns;  // every --dsn: each node's posts are checked by its own jobs
  std::string api_url;      // X's API base (--api-url)
  Credentials tokens;       // credential name -> bearer token
  HttpOptions http;         // never with a WARC recorder: the signed URLs grant access
  std::chrono::seconds poll{60};  // --compliance-poll: X's jobs are asked about this often
  int max_ids = 100000;     // --compliance-max-ids: ids per job
  int lease_seconds = 600;
  bool allow_private_hosts = false;  // a signed URL may name a private address (with --allow-private-hosts)
};

class ComplianceRunner {
 public:
  ComplianceRunner(ComplianceOptions options, StopSignal& stop);
  // Until the stop signal; never throws (a lost database or API is waited out).
  void Run();

 private:
  // One credential's turn: true while it has a job open (asked about again after --compliance-poll).
  bool Turn(ComplianceDb& db, HttpClient& http, const std::string& dsn, const std::string& credential,
            const std::string& token);

  ComplianceOptions options_;
  StopSignal& stop_;
  std::set<std::pair<std::string, std::int64_t>> uploaded_;  // jobs (database, job) whose ids this worker uploaded
};

}  // namespace tweetkeeper::worker::compliance
