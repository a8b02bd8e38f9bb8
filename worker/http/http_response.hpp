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
  // Not connected (Reach::kPublicOnly): the URL's host resolves to this address, which is not
  // public (loopback, private, link-local, ...). Empty otherwise.
  std::string refused_host;
  std::string refused_address;
  double elapsed_ms = 0;
};

}  // namespace tweetkeeper::worker
