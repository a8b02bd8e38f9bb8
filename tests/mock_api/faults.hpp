#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tweetkeeper::mock {

// Faults the mock injects on purpose into /2/tweets requests, so tests can check that a client
// survives an API that misbehaves. Everything here is pure: which request gets which fault is a
// function of --fault-seed and the request's sequence number, so a run can be replayed.

enum class FaultKind {
  kNone,
  kHang,         // read the request, never answer; let go when the client does (or --hang-ms)
  kSlow,         // the right answer, --slow-ms late
  kDrop,         // close the connection without an answer
  k5xx,          // 503 with a small HTML or JSON body, or 500
  kTruncated,    // a 200 whose JSON is cut in the middle
  kContentType,  // a 200 with text/html and an HTML page
  kHuge,         // a 200 of --huge-bytes: the real answer behind a giant JSON string
};

// Every kind but kNone, in the order /mock/stats lists them.
const std::vector<FaultKind>& AllFaultKinds();

// "hang", "slow", "drop", "5xx", "truncated", "content-type", "huge" ("none" for kNone).
const char* FaultKindName(FaultKind kind);

// "hang,5xx" -> {kHang, k5xx}; "all" -> AllFaultKinds(). Duplicates are dropped, order kept.
// On a bad list returns nothing and sets *error to a message that names the bad value.
std::optional<std::vector<FaultKind>> ParseFaultKinds(const std::string& list, std::string* error);

// Hangs that end the same way a drop does, and body faults that only make sense on a 200.
bool LeavesUnanswered(FaultKind kind);
bool CorruptsBody(FaultKind kind);

struct FaultConfig {
  int64_t latency_ms = 0;                          // added to every provider request
  double rate = 0;                                 // fraction of provider requests given a fault
  std::vector<FaultKind> kinds = AllFaultKinds();  // drawn from uniformly
  uint64_t seed = 1;
  int64_t hang_ms = 600'000;  // a hang lets go after this long even if the client never does
  int64_t slow_ms = 1'500;
  size_t huge_bytes = size_t{20} << 20;  // above the worker's 16 MiB body limit
  int max_hangs = 4;                     // hangs held at once; more are served as drops, so threads stay free
};

// What happens to one request besides (or instead of) its answer.
struct FaultPlan {
  FaultKind kind = FaultKind::kNone;
  int64_t delay_ms = 0;  // wait this long before answering (latency, slow)
  int64_t hold_ms = 0;   // hang: hold the connection at most this long, then close it unanswered
  uint64_t variant = 0;  // picks the 5xx body and where a truncated body is cut
};

// The plan for the request_seq-th provider request (0-based).
FaultPlan PlanFaults(const FaultConfig& config, uint64_t request_seq);

// The bodies of the faults that answer.

constexpr const char* kHtml = "text/html; charset=utf-8";

struct FaultAnswer {
  int status;
  const char* content_type;
  std::string body;
};

// By variant: 503 with an HTML page (what a proxy in front of the API sends), 503 with a JSON
// problem, or 500 with X's v1.1-style {"errors":[{"message":"Internal error","code":131}]}.
FaultAnswer ServerErrorAnswer(uint64_t variant);

// The page a 200 text/html answer carries (a captive portal, a maintenance page).
std::string HtmlPage();

// A prefix of body, cut somewhere in its middle half (never empty, never whole).
std::string TruncatedBody(const std::string& body, uint64_t variant);

// body (a JSON object) with a "padding" string member in front that makes it at least
// min_bytes long: still valid JSON, just far too big.
std::string HugeBody(const std::string& body, size_t min_bytes);

}  // namespace tweetkeeper::mock
