#pragma once
// What tweetkeeper.payloads = changed compares, computed by the worker: the hex md5 of a post's
// payload and author as tweetkeeper.payload_content(payload, author)::text renders them in
// PostgreSQL (counts and viewer state left out; jsonb's text form: keys ordered by length, then
// bytes; ", " and ": " between; its string escapes). The claim hands out the hash of each post's
// last kept payload (the claim's payload_hashes), so a provider hands on, from the answer it
// has parsed anyway, only the payloads that complete_batch() would store: an unchanged post
// costs the worker one hash and the database nothing.
#include <rapidjson/document.h>

#include <optional>
#include <string>
#include <string_view>

#include "batch/batch_result.hpp"
#include "provider/provider.hpp"

namespace tweetkeeper::worker {

// The canonical text (as payload_content()::text), or nullopt when `payload` (or a non-empty
// `author`) is no JSON object. (Of JSON text: what the tests compare with PostgreSQL's output;
// the providers hash the values they parsed, below.)
std::optional<std::string> PayloadContent(std::string_view payload, std::string_view author);
// Its hex md5, as md5() in SQL; nullopt as above.
std::optional<std::string> ContentHash(std::string_view payload, std::string_view author);
// The same, of values already parsed (`author` null: none).
std::optional<std::string> ContentHash(const rapidjson::Value& payload, const rapidjson::Value* author);

// With keys.payloads: sets obs.payload, obs.author (JSON text) and obs.content_hash when the post
// has no kept payload yet, or (unless keys.first_only) one whose hash differs; otherwise leaves
// them empty, and complete_batch() stores the counts alone. So it does for a payload with a
// string PostgreSQL cannot store (jsonb refuses "\u0000" and lone surrogates).
void AttachPayload(Observation& obs, const rapidjson::Value& payload, const rapidjson::Value* author,
                   const PostKeys& keys);

}  // namespace tweetkeeper::worker
