#pragma once
// X's batch compliance jobs (POST /2/compliance/jobs, GET /2/compliance/jobs/{id}; the ids file
// PUT to the job's signed upload_url, the results read from its signed download_url): what the
// answers say, parsed as hostile input (bounded sizes and depth, clear reasons, never a crash).
// Pure: no I/O, so the parsers are tested on their own (tests/unit/worker_compliance_test.cpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tweetkeeper::worker::compliance {

// One ComplianceJob (X's OpenAPI: id, type, status, upload_url, download_url, ...).
struct Job {
  std::string id;      // X's job id: 1 to 19 digits
  std::string status;  // created, in_progress, complete, failed, expired
  std::string upload_url, download_url;  // signed: never logged, stored or recorded
};

// {"data": ComplianceJob} (POST's and GET's answer). false and why otherwise (X's error title and
// detail for a problem answer; never a URL).
bool ParseJob(std::string_view body, Job* job, std::string* why);

// The request body that creates a job of post ids named `name` (at most 64 characters).
std::string CreateJobBody(const std::string& name);

// The ids file: one id per line.
std::string IdsFile(const std::vector<std::int64_t>& ids);

// The results file: one JSON object per line, {"id", "action", "created_at", "redacted_at"?,
// "reason"}, for each id out of compliance. Lines that are not such an object (a bad id, a reason
// longer than 40 characters or with other than [a-z_], more than 4 KiB) are counted in `refused`
// and skipped. At most max_lines results are taken.
struct Results {
  std::vector<std::int64_t> ids;
  std::vector<std::string> reasons;
  std::size_t refused = 0;
  std::string first_refusal;  // why the first refused line was (no line content beyond 80 bytes)
};
Results ParseResults(std::string_view body, std::size_t max_lines);

// Whether a signed URL X gave may be fetched, and how: https:// anywhere public, or any URL on the
// host of --api-url (the mock in tests, a proxy). Empty when allowed, else why not (no URL in it).
std::string StorageUrlRefusal(const std::string& url, const std::string& api_base, bool* same_host_as_api);

}  // namespace tweetkeeper::worker::compliance
