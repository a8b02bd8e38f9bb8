#include "http/http_client.hpp"

#include "archive/warc.hpp"
#include "http/address_policy.hpp"

#include <curl/curl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>

namespace tweetkeeper::worker {
namespace {

struct Transfer {
  HttpResponse* response;
  std::size_t max_body_bytes;
  bool too_large = false;
  const std::atomic<bool>* abort;
};

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (t->response->body.size() + n > t->max_body_bytes) {
    t->too_large = true;
    return 0;  // makes curl fail with CURLE_WRITE_ERROR
  }
  t->response->body.append(data, n);
  return n;
}

std::string Trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  std::string line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->response->headers.clear();  // a new status line (after 100-continue): start over
  } else if (auto colon = line.find(':'); colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    t->response->headers[Trim(name)] = Trim(line.substr(colon + 1));
  }
  return n;
}

// --warc-dir: the bytes on the wire (curl's debug stream: headers and data as sent and as read,
// before it decodes the transfer).
struct Wire {
  std::string request;
  std::string response;
};

int OnDebug(CURL*, curl_infotype type, char* data, std::size_t size, void* user) {
  auto* w = static_cast<Wire*>(user);
  if (type == CURLINFO_HEADER_OUT || type == CURLINFO_DATA_OUT) w->request.append(data, size);
  if (type == CURLINFO_HEADER_IN || type == CURLINFO_DATA_IN) w->response.append(data, size);
  return 0;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->abort && t->abort->load() ? 1 : 0;
}

// Reach::kPublicOnly: libcurl calls this for each address it is about to connect to, once the
// name is resolved, so what is checked is what would be connected to. A refused address is
// skipped (libcurl tries the next one, then fails with CURLE_COULDNT_CONNECT); the first is kept
// for the message.
struct Guard {
  bool refused = false;
  std::string address;
};

curl_socket_t OnOpenSocket(void* user, curlsocktype purpose, curl_sockaddr* address) {
  auto* guard = static_cast<Guard*>(user);
  if (purpose != CURLSOCKTYPE_IPCXN || !IsPublicAddress(&address->addr)) {
    if (!guard->refused) guard->address = AddressText(&address->addr);
    guard->refused = true;
    return CURL_SOCKET_BAD;
  }
  int type = address->socktype;
#ifdef SOCK_CLOEXEC
  type |= SOCK_CLOEXEC;
#endif
  return socket(address->family, type, address->protocol);
}

std::string HostOf(const std::string& url) {
  std::string host;
  if (CURLU* u = curl_url()) {
    char* part = nullptr;
    if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &part, 0) == CURLUE_OK && part) {
      host = part;
    }
    curl_free(part);
    curl_url_cleanup(u);
  }
  return host;
}

}  // namespace

CurlGlobal::CurlGlobal() {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("curl_global_init failed");
}
CurlGlobal::~CurlGlobal() { curl_global_cleanup(); }

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)), curl_(curl_easy_init()) {
  if (!curl_) throw std::runtime_error("curl_easy_init failed");
}

HttpClient::~HttpClient() {
  curl_easy_cleanup(curl_);
  if (public_curl_) curl_easy_cleanup(public_curl_);
}

HttpResponse HttpClient::Get(const std::string& url, const std::string& bearer_token, const std::atomic<bool>* abort,
                             Reach reach) {
  return Send("GET", url, bearer_token, "", "", abort, reach);
}

HttpResponse HttpClient::Send(const std::string& method, const std::string& url, const std::string& bearer_token,
                              const std::string& body, const std::string& content_type, const std::atomic<bool>* abort,
                              Reach reach) {
  HttpResponse response;
  if (reach == Reach::kPublicOnly && !public_curl_) public_curl_ = curl_easy_init();
  CURL* const curl = reach == Reach::kPublicOnly ? public_curl_ : curl_;
  if (!curl) {
    response.error = "curl_easy_init failed";
    return response;
  }
  Transfer transfer{&response, options_.max_body_bytes, false, abort};
  char error_buffer[CURL_ERROR_SIZE] = {0};

  // No token, no Authorization header (Bluesky's public AppView takes none).
  const std::string auth = "Authorization: Bearer " + bearer_token;
  curl_slist* header_list = bearer_token.empty() ? nullptr : curl_slist_append(nullptr, auth.c_str());
  header_list = curl_slist_append(header_list, "Accept: application/json");
  const std::string type = "Content-Type: " + content_type;
  if (!content_type.empty()) header_list = curl_slist_append(header_list, type.c_str());

  curl_easy_reset(curl);  // keeps the connection cache, drops options of the previous request
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  if (method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    if (method != "POST") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, header_list);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  // No redirects: a request goes where its URL says (and, kPublicOnly, where the guard lets it).
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  // gzip or deflate if the server offers: encodings the WARC recorder can decode to check that a
  // body holds no token (curl's "" would offer br and zstd too).
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "gzip, deflate");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);         // required with threads
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.total_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);

  Guard guard;
  if (reach == Reach::kPublicOnly) {
    curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, OnOpenSocket);
    curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, &guard);
  }

  Wire wire;
  if (options_.recorder) {
    curl_easy_setopt(curl, CURLOPT_DEBUGFUNCTION, OnDebug);
    curl_easy_setopt(curl, CURLOPT_DEBUGDATA, &wire);
    curl_easy_setopt(curl, CURLOPT_VERBOSE, 1L);
    // HTTP/1.1 while recording: over HTTP/2 (libcurl's default for HTTPS) the wire carries binary
    // frames and compressed headers, and the debug stream only a rendering of them; a WARC
    // record is an HTTP/1.x message, and these are then the bytes that went over the wire.
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  }

  const auto sent_at = std::chrono::system_clock::now();
  const auto started = std::chrono::steady_clock::now();
  const CURLcode rc = curl_easy_perform(curl);
  response.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  curl_slist_free_all(header_list);

  if (rc != CURLE_OK) {
    response.status = 0;
    response.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    if (transfer.too_large) {
      response.error = "response body larger than " + std::to_string(options_.max_body_bytes) + " bytes";
    } else if (guard.refused && rc == CURLE_COULDNT_CONNECT) {
      response.refused_host = HostOf(url);
      response.refused_address = guard.address.empty() ? "an address of another family" : guard.address;
      response.error = "not connected: " + response.refused_host + " resolves to a private or loopback address (" +
                       response.refused_address + ")";
    } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
      response.error = "request aborted by shutdown";
    } else {
      std::string detail = Trim(error_buffer);
      response.error = curl_easy_strerror(rc) + (detail.empty() ? "" : ": " + detail);
    }
    return response;
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  if (options_.recorder && !wire.response.empty()) {
    char* ip = nullptr;
    curl_easy_getinfo(curl, CURLINFO_PRIMARY_IP, &ip);
    warc::Exchange exchange{url, ip ? ip : "", std::move(wire.request), std::move(wire.response), sent_at};
    options_.recorder->Record(exchange);
  }
  return response;
}

}  // namespace tweetkeeper::worker
