#include "provider/refusals.hpp"

#include <string>
#include <utility>

namespace tweetkeeper::worker {
namespace {

struct Part {
  std::vector<std::int64_t> ids;
  PostKeys keys;
};

// ids[from, to) and their keys (X's batches have no keys).
Part Slice(const Part& part, std::size_t from, std::size_t to) {
  Part out;
  out.keys.endpoint = part.keys.endpoint;
  out.keys.payloads = part.keys.payloads;
  for (std::size_t i = from; i < to; ++i) {
    out.ids.push_back(part.ids[i]);
    if (i < part.keys.keys.size()) out.keys.keys.push_back(part.keys.keys[i]);
  }
  return out;
}

Part Without(const Part& part, std::size_t at) {
  Part out = Slice(part, 0, at);
  const Part tail = Slice(part, at + 1, part.ids.size());
  out.ids.insert(out.ids.end(), tail.ids.begin(), tail.ids.end());
  out.keys.keys.insert(out.keys.keys.end(), tail.keys.keys.begin(), tail.keys.keys.end());
  return out;
}

bool HasRate(const RateLimit& rate) { return rate.limit || rate.remaining || rate.reset_epoch_s; }

}  // namespace

BatchResult AnswerAroundRefusals(const std::vector<std::int64_t>& ids, const PostKeys& keys, PartAnswer first,
                                 const SendPart& send, const std::function<bool()>& stopping) {
  BatchResult merged;
  // Parts still to settle, the next one last; the first comes with its answer.
  std::vector<std::pair<Part, std::optional<PartAnswer>>> todo;
  todo.emplace_back(Part{ids, keys}, std::move(first));
  while (!todo.empty()) {
    Part part = std::move(todo.back().first);
    std::optional<PartAnswer> answer = std::move(todo.back().second);
    todo.pop_back();
    if (!answer) {
      if (stopping()) {
        BatchResult stop;
        stop.failure = FailureKind::kTransport;
        stop.reason = "worker shutting down while taking a refused key out of the batch";
        return stop;
      }
      answer = send(part.ids, part.keys);
    }
    BatchResult& r = answer->result;
    if (HasRate(r.rate_limit)) merged.rate_limit = r.rate_limit;
    if (r.ok()) {
      for (Observation& o : r.observations) merged.observations.push_back(std::move(o));
      for (Problem& p : r.problems) merged.problems.push_back(std::move(p));
      merged.omitted.insert(merged.omitted.end(), r.omitted.begin(), r.omitted.end());
      merged.ignored += r.ignored;
      continue;
    }
    if (r.failure != FailureKind::kOurRequestInvalid || part.ids.empty()) return std::move(r);
    const std::size_t n = part.ids.size();
    std::optional<std::size_t> at = answer->refused;
    if (at && *at >= n) at.reset();  // a position outside the request says nothing
    if (n == 1) at = 0;
    if (!at) {
      todo.emplace_back(Slice(part, n / 2, n), std::nullopt);
      todo.emplace_back(Slice(part, 0, n / 2), std::nullopt);
      continue;
    }
    const std::string key = *at < part.keys.keys.size() ? part.keys.keys[*at] : std::to_string(part.ids[*at]);
    merged.problems.push_back(Problem{part.ids[*at], "invalid-key", "the API refused " + key + ": " + r.reason});
    if (n > 1) todo.emplace_back(Without(part, *at), std::nullopt);
  }
  return merged;
}

}  // namespace tweetkeeper::worker
