#pragma once
// Keeping a bearer token out of what an answer says. An error page may echo the request's headers
// (debugging proxies do); its text is quoted in the log and in batches.reason, so the token is cut
// out of the body before anything reads it. (The WARC writer keeps its own same-length marker.)

#include <string>

namespace tweetkeeper::worker {

// Replaces every occurrence of `token` in `text` with "***"; an empty token changes nothing.
void RedactToken(std::string& text, const std::string& token);

}  // namespace tweetkeeper::worker
