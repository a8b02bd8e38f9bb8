#pragma once
// X API v1.1 `GET /1.1/statuses/lookup.json?id=...&map=true` (see shared/x-api/FACTS.md):
// request URL and answer parsing. v1.1 reports only retweets and likes ("favorites").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "provider/provider.hpp"

namespace tweetkeeper::worker {

// The problem type for an id statuses/lookup answered with null. v1.1 does not say whether the
// tweet was deleted, is protected or its author suspended, so this is deliberately not
// "resource-not-found" (which complete_batch takes as "deleted: stop refreshing for good"): a
// protected tweet must not be given up. complete_batch records it and keeps the schedule.
constexpr const char* kV11MissingProblem = "v1.1-missing";

class XV11Provider final : public Provider {
 public:
  // `api_url` is the validated base, e.g. "https://api.x.com" or "http://127.0.0.1:8080/mock".
  explicit XV11Provider(std::string api_url);

  std::string Name() const override { return "x-v1.1"; }
  // Its answers would need v1.1's own payload rules (the user inside the status, other count
  // names) and twarc2 exports read v2 only: with payloads on it keeps the counts alone.
  bool KeepsPayloads() const override { return false; }
  std::string RequestUrl(const std::vector<std::int64_t>& ids) const override;
  BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids) const override;

 private:
  std::string base_;
};

// Helpers, exposed for the unit tests.

// v1.1 `created_at`, "Tue Mar 21 20:50:14 +0000 2006", as Unix seconds; nullopt if malformed.
std::optional<std::int64_t> ParseV11CreatedAt(std::string_view text);

}  // namespace tweetkeeper::worker
