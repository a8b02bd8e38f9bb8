#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mock_api/json_fields.hpp"

namespace tweetkeeper::mock {

// Error bodies, shaped key for key as X sends them (FACTS.md); clients are tested against these.

// Live responses still use this host; the newest spec says api.x.com.
constexpr const char* kProblemsBase = "https://api.twitter.com/2/problems/";

// {"title":T,"type":"about:blank","status":S,"detail":T} for 401, 403 and 429.
std::string GenericProblem(int status, const std::string& title);

// 429 once a credential's monthly cap is spent (FACTS.md), key for key:
// {"account_id":N,"product_name":"standard-basic","title":"UsageCapExceeded","period":"Monthly",
//  "scope":"Product","detail":"Usage cap exceeded: Monthly product cap","type":".../usage-capped"}
std::string UsageCappedProblem(uint64_t account_id);

// {"errors":[{...}]}: a body of one error, whose members `members` writes.
std::string OneError(const std::function<void(JsonWriter& w)>& members);

// API v1.1 errors: {"errors":[{"code":C,"message":M}]}.
std::string V1Error(int code, const std::string& message);

// One entry of an invalid-request problem: the offending parameter, its values and why.
struct InvalidParam {
  std::string parameter;
  std::vector<std::string> values;
  std::string message;
};

std::string InvalidRequestProblem(const std::vector<InvalidParam>& errors);

// Per-id errors inside a 200 body.
void WriteNotFound(JsonWriter& w, const std::string& id);
void WriteNotAuthorized(JsonWriter& w, const std::string& id);

}  // namespace tweetkeeper::mock
