#pragma once
// What tweetkeeper.payloads = changed compares, computed by the worker: the hex md5 of a post's
// payload and author as tweetkeeper.payload_content(payload, author)::text renders them in
// PostgreSQL (counts and viewer state left out; jsonb's text form: keys ordered by length, then
// bytes; ", " and ": " between; its string escapes). So a worker can tell, from the hashes
// tweetkeeper.payload_hashes() returns, which payloads are new, and send only those.
#include <optional>
#include <string>
#include <string_view>

namespace tweetkeeper::worker {

// The canonical text (as payload_content()::text), or nullopt when `payload` (or a non-empty
// `author`) is no JSON object.
std::optional<std::string> PayloadContent(std::string_view payload, std::string_view author);
// Its hex md5, as md5() in SQL; nullopt as above.
std::optional<std::string> ContentHash(std::string_view payload, std::string_view author);

}  // namespace tweetkeeper::worker
