#pragma once
// A batch an API refuses whole for one key it calls malformed (HTTP 400: Bluesky's getPosts fails
// all 25 URIs for one, FACTS.md 1.2) must not be handed back to be refused again on every claim.
// AnswerAroundRefusals() takes the refused key out and sends the rest, within the same lease: by
// the position the answer names, one more request; otherwise by halves, until the key is alone
// (about 2 log2(n) more requests for one bad key). Each key refused on its own becomes a problem
// 'invalid-key' with the API's words (complete_batch makes it missing, asked again as rarely as a
// hidden post), and the batch is completed once with everything its parts answered.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "batch/batch_result.hpp"
#include "provider/provider.hpp"

namespace tweetkeeper::worker {

// One request's answer: what it says, and the refused key's position in the request when the
// answer names one (Provider::RefusedKey).
struct PartAnswer {
  BatchResult result;
  std::optional<std::size_t> refused;
};

// Sends a part of the batch (its ids and their keys) and parses the answer.
using SendPart = std::function<PartAnswer(const std::vector<std::int64_t>& ids, const PostKeys& keys)>;

// `first` answered the whole batch (ids, keys) with kOurRequestInvalid. Returns the batch's one
// result: every part's observations, problems and omissions, the refused keys as problems, the
// last answer's rate limit; or, when a part fails otherwise (transport, 429, 5xx) or `stopping`
// says so before a request, that part's failure: the batch is handed back whole (nothing of it
// was stored yet), and the next claim starts again.
BatchResult AnswerAroundRefusals(const std::vector<std::int64_t>& ids, const PostKeys& keys, PartAnswer first,
                                 const SendPart& send, const std::function<bool()>& stopping);

}  // namespace tweetkeeper::worker
