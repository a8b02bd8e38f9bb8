#include "mock_api/faults.hpp"

#include <algorithm>
#include <iterator>

#include "mock_api/mix.hpp"
#include "mock_api/problems.hpp"

namespace tweetkeeper::mock {

namespace {

struct NamedKind {
  FaultKind kind;
  const char* name;
};

// Every kind but kNone and its name, in the order /mock/stats lists them: the one list that
// AllFaultKinds, FaultKindName and ParseFaultKinds (and its message) read.
constexpr NamedKind kNamedKinds[] = {
    {FaultKind::kHang, "hang"}, {FaultKind::kSlow, "slow"},           {FaultKind::kDrop, "drop"},
    {FaultKind::k5xx, "5xx"},   {FaultKind::kTruncated, "truncated"}, {FaultKind::kContentType, "content-type"},
    {FaultKind::kHuge, "huge"},
};

}  // namespace

const std::vector<FaultKind>& AllFaultKinds() {
  static const std::vector<FaultKind> kAll = [] {
    std::vector<FaultKind> all;
    for (const NamedKind& k : kNamedKinds) all.push_back(k.kind);
    return all;
  }();
  return kAll;
}

const char* FaultKindName(FaultKind kind) {
  if (kind == FaultKind::kNone) return "none";
  for (const NamedKind& k : kNamedKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

std::optional<std::vector<FaultKind>> ParseFaultKinds(const std::string& list, std::string* error) {
  if (list == "all") return AllFaultKinds();
  std::vector<FaultKind> kinds;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto it = std::find_if(std::begin(kNamedKinds), std::end(kNamedKinds),
                                 [&](const NamedKind& k) { return name == k.name; });
    if (it == std::end(kNamedKinds)) {
      if (error) {
        std::string names;
        for (const NamedKind& k : kNamedKinds) names += (names.empty() ? "" : ", ") + std::string(k.name);
        *error = "unknown fault kind '" + name + "' in --faults; use a comma list of " + names + " (or all)";
      }
      return std::nullopt;
    }
    if (std::find(kinds.begin(), kinds.end(), it->kind) == kinds.end()) kinds.push_back(it->kind);
    if (comma == std::string::npos) return kinds;
    start = comma + 1;
  }
}

bool LeavesUnanswered(FaultKind kind) { return kind == FaultKind::kHang || kind == FaultKind::kDrop; }

bool CorruptsBody(FaultKind kind) {
  return kind == FaultKind::kTruncated || kind == FaultKind::kContentType || kind == FaultKind::kHuge;
}

FaultPlan PlanFaults(const FaultConfig& config, uint64_t request_seq) {
  FaultPlan plan;
  plan.delay_ms = config.latency_ms;
  const uint64_t draw = Mix(config.seed ^ Mix(request_seq));
  const double unit = static_cast<double>(draw >> 11) * 0x1.0p-53;  // [0, 1)
  if (config.kinds.empty() || !(unit < config.rate)) return plan;
  const uint64_t pick = Mix(draw);
  plan.kind = config.kinds[pick % config.kinds.size()];
  plan.variant = Mix(pick);
  if (plan.kind == FaultKind::kSlow) plan.delay_ms += config.slow_ms;
  if (plan.kind == FaultKind::kHang) {
    plan.delay_ms = 0;
    plan.hold_ms = config.hang_ms;
  }
  if (plan.kind == FaultKind::kDrop) plan.delay_ms = 0;
  return plan;
}

FaultAnswer ServerErrorAnswer(uint64_t variant) {
  switch (variant % 3) {
    case 0:
      return {503, kHtml,
              "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
              "<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n</body>\r\n</html>\r\n"};
    case 1:
      return {503, "application/json; charset=utf-8", GenericProblem(503, "Service Unavailable")};
    default:
      return {500, "application/json; charset=utf-8", R"({"errors":[{"message":"Internal error","code":131}]})"};
  }
}

std::string HtmlPage() {
  return "<!DOCTYPE html>\n<html><head><title>X / Over capacity</title></head>\n"
         "<body><h1>Something is technically wrong.</h1>\n"
         "<p>Thanks for noticing&mdash;we're going to fix it up and have things back to normal soon.</p>\n"
         "</body></html>\n";
}

std::string TruncatedBody(const std::string& body, uint64_t variant) {
  if (body.size() < 2) return "{";  // no JSON text is a single character long
  const size_t quarter = body.size() / 4;
  const size_t span = std::max<size_t>(body.size() / 2, 1);
  const size_t cut = std::clamp<size_t>(quarter + variant % span, 1, body.size() - 1);
  return body.substr(0, cut);
}

std::string HugeBody(const std::string& body, size_t min_bytes) {
  constexpr const char* kHead = R"({"padding":")";
  const std::string rest = body.size() > 2 && body.front() == '{' ? "\"," + body.substr(1) : "\"}";
  const size_t fixed = std::char_traits<char>::length(kHead) + rest.size();
  std::string out;
  out.reserve(std::max(min_bytes, fixed) + 1);
  out += kHead;
  out.append(min_bytes > fixed ? min_bytes - fixed : 0, 'x');
  out += rest;
  return out;
}

}  // namespace tweetkeeper::mock
