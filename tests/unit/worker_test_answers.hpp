#pragma once
// Test helper shared by the provider tests: an HTTP answer as the HTTP client would return it.

#include <string>
#include <utility>

#include "http/http_response.hpp"

namespace tweetkeeper::worker::testing {

inline HttpResponse Answer(long status, std::string body, Headers headers = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

}  // namespace tweetkeeper::worker::testing
