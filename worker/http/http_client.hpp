#pragma once
// A small libcurl client: one GET (or POST, PUT) with a bearer token, bounded by a connect and a total timeout.
// No retries inside: the caller decides (release the batch, back off).

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "http/http_response.hpp"

typedef void CURL;

namespace tweetkeeper::worker {

namespace warc {
class Recorder;
}

struct HttpOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{30'000};
  std::size_t max_body_bytes = 16u << 20;  // a 100-tweet answer is ~50 KB; refuse absurd bodies
  std::string user_agent = "tweetkeeper-worker";
  // --warc-dir: every exchange that got an answer, recorded with the bytes sent and received.
  std::shared_ptr<warc::Recorder> recorder;
};

// curl_global_init is not thread-safe: create one of these in main before any thread starts.
class CurlGlobal {
 public:
  CurlGlobal();
  ~CurlGlobal();
  CurlGlobal(const CurlGlobal&) = delete;
  CurlGlobal& operator=(const CurlGlobal&) = delete;
};

// Where a request may connect. kAny: wherever its host resolves (URLs the operator gave:
// --api-url, --instance, or any with --allow-private-hosts). kPublicOnly: public addresses only
// (a host taken from a post's URL), each address libcurl is about to connect to checked by
// IsPublicAddress (address_policy.hpp); a refused one fails the request with `refused_address`
// set, nothing sent.
enum class Reach { kAny, kPublicOnly };

// One per thread; reuses its connections (keep-alive) across requests. kPublicOnly requests go
// through a handle of their own, so they never reuse a connection another request opened
// unchecked.
class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Never throws for network trouble: a failed request has status 0 and `error` set.
  // The token goes only into the Authorization header, never into `error`.
  // `abort`, when set to true by another thread, cuts the transfer short (fast shutdown).
  HttpResponse Get(const std::string& url, const std::string& bearer_token, const std::atomic<bool>* abort = nullptr,
                   Reach reach = Reach::kAny);
  // The same with a method of its own (POST, PUT) and a body of content_type (X's compliance jobs).
  HttpResponse Send(const std::string& method, const std::string& url, const std::string& bearer_token,
                    const std::string& body, const std::string& content_type, const std::atomic<bool>* abort = nullptr,
                    Reach reach = Reach::kAny);

 private:
  HttpOptions options_;
  CURL* curl_;
  CURL* public_curl_ = nullptr;  // kPublicOnly's handle, made at its first request
};

}  // namespace tweetkeeper::worker
