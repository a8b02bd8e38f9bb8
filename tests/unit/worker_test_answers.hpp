#pragma once
// Test helpers shared by the provider tests: an HTTP answer as the HTTP client would return it,
// and what every provider promises about bodies that make no sense.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http/http_response.hpp"
#include "provider/provider.hpp"

namespace tweetkeeper::worker {

inline HttpResponse Answer(long status, std::string body, Headers headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// An observation's counts in complete_batch's order (retweet, reply, like, quote, bookmark,
// impression), nullopt where the network reports none: one comparison says what a parse made.
using Counts = std::vector<std::optional<std::int64_t>>;
inline Counts CountsOf(const Metrics& m) {
  return {m.retweet_count, m.reply_count, m.like_count, m.quote_count, m.bookmark_count, m.impression_count};
}

inline HttpResponse Ok(std::string body) { return Answer(200, std::move(body)); }

// Ids for the request URL tests: small ones and one past 2^53 (exact only as text, never as a double).
inline const std::vector<std::int64_t> kUrlIds{20, 1460323737035677698, 3};

// Each body, as a 200 answer to a request for id 1, is usable, or an answer about nothing (id 1
// left out), or an unparsable failure that says why: never a crash, never anything else.
inline void ExpectGarbageHandled(const Provider& api, const std::vector<std::string>& bodies) {
  for (const std::string& body : bodies) {
    const BatchResult r = api.ParseAnswer(Answer(200, body), {1});
    EXPECT_EQ(r.ok(), !r.observations.empty() || !r.problems.empty() || r.omitted.size() == 1) << body.substr(0, 80);
    if (!r.ok()) {
      EXPECT_EQ(r.failure, FailureKind::kUnparsable) << body.substr(0, 80);
      EXPECT_FALSE(r.reason.empty()) << body.substr(0, 80);
    }
  }
}

// An answer that fails the whole request: its status and body, the failure and reason expected.
struct FailureCase {
  long status;
  std::string body;
  FailureKind kind;
  std::string reason;
};

inline void ExpectFailures(const Provider& api, const std::vector<FailureCase>& cases) {
  for (const FailureCase& c : cases) {
    const BatchResult r = api.ParseAnswer(Answer(c.status, c.body), {1});
    EXPECT_EQ(r.failure, c.kind) << c.status << " " << c.body;
    EXPECT_EQ(r.reason, c.reason);
    EXPECT_TRUE(r.observations.empty());
  }
}

}  // namespace tweetkeeper::worker
