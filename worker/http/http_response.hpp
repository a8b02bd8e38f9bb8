#pragma once
// What one HTTP exchange produced. Plain data, so the provider parsers can be tested without I/O.

#include <map>
#include <string>

namespace tweetkeeper::worker {

// Header names are stored lower-case (HTTP names are case-insensitive); the last value wins.
using Headers = std::map<std::string, std::string>;

struct HttpResponse {
  long status = 0;  // 0 when the request failed before an HTTP status arrived
  Headers headers;
  std::string body;
  std::string error;  // transport failure (DNS, connect, timeout, abort); empty on success
  bool timed_out = false;  // the failure was --http-timeout running out
  double elapsed_ms = 0;
};

}  // namespace tweetkeeper::worker
