#include "runner/counters.hpp"

#include <fmt/format.h>

namespace tweetkeeper::worker {

Totals Counters::Snapshot() const { return {batches, tweets, found, problems, errors, expired}; }

std::string Describe(const Totals& now, const Totals& before) {
  const auto tweets = now.tweets - before.tweets, found = now.found - before.found,
             problems = now.problems - before.problems;
  return fmt::format("{} batches, {} tweets ({} found, {} problems), {} errors, {} expired leases",
                     now.batches - before.batches, tweets, found, problems, now.errors - before.errors,
                     now.expired - before.expired);
}

}  // namespace tweetkeeper::worker
