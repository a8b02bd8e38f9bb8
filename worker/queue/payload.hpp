#pragma once
// The values exchanged with the SQL API: the JSON arrays complete_batch() and complete_handles()
// take, and the bigint[] text claim_batch() returns. Pure functions, unit-tested.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "batch/batch_result.hpp"

namespace tweetkeeper::worker {

// [{"id":123,"retweet_count":1,...,"impression_count":6}, ...]; a metric not sent is null.
std::string ObservationsJson(const std::vector<Observation>& observations);

// [{"id":124,"type":"resource-not-found","detail":"..."}, ...]
std::string ProblemsJson(const std::vector<Problem>& problems);

// What resolving one handle said: its DID, or why there is none (`problem`).
struct HandleResolution {
  std::string handle;
  std::string did;  // empty: see problem
  std::string problem;
};

// complete_handles()'s [{"handle":..,"did":..} | {"handle":..,"problem":..}, ...].
std::string HandlesJson(const std::vector<HandleResolution>& resolutions);

// "{1,2,3}" -> {1,2,3}; "{}" -> {}; anything else (NULL elements, nesting, junk) -> nullopt.
std::optional<std::vector<std::int64_t>> ParseBigintArray(std::string_view text);

// The claim's kept payload hashes, "id hash id hash ..." -> {id: hash}. A malformed pair ends the
// reading (the posts after it count as having none: their payloads are sent, and complete_batch
// decides).
std::unordered_map<std::int64_t, std::string> ParseKeptHashes(std::string_view text);

// PostgreSQL array literals for bigint[] ({1,2}) and text[] ({"a","b"}, " and \ escaped).
std::string ArrayLiteral(const std::vector<std::int64_t>& ids);
std::string TextArrayLiteral(const std::vector<std::string>& items);
// A JSON array of strings (array_to_json(text[])), or nothing when it is not one.
std::optional<std::vector<std::string>> ParseStringArrayJson(std::string_view text);

}  // namespace tweetkeeper::worker
