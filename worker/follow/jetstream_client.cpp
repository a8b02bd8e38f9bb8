#include "follow/jetstream_client.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <memory>
#include <optional>

#include "json/write.hpp"
#include "service/backoff.hpp"
#include "text/one_line.hpp"

namespace tweetkeeper::worker::follow {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

struct Endpoint {
  bool tls = false;
  std::string host;
  std::string port;
};

std::optional<Endpoint> ParseBase(const std::string& base) {
  Endpoint e;
  std::string rest;
  if (base.rfind("wss://", 0) == 0) {
    e.tls = true;
    rest = base.substr(6);
  } else if (base.rfind("ws://", 0) == 0) {
    rest = base.substr(5);
  } else {
    return std::nullopt;
  }
  rest = rest.substr(0, rest.find('/'));
  const size_t colon = rest.rfind(':');
  e.host = colon == std::string::npos ? rest : rest.substr(0, colon);
  e.port = colon == std::string::npos ? (e.tls ? "443" : "80") : rest.substr(colon + 1);
  if (e.host.empty() || e.port.empty()) return std::nullopt;
  return e;
}

// Closes the connection under a websocket stream, whatever its state.
template <typename WS>
void CloseSocket(WS& ws) {
  beast::error_code ignored;
  beast::get_lowest_layer(ws).socket().close(ignored);
}

// The subscription's path: posts only, the DIDs sent once open (requireHello), from `cursor` (µs;
// 0: live), zstd-compressed or not.
std::string SubscribeTarget(std::int64_t cursor, bool compress) {
  return "/subscribe?wantedCollections=app.bsky.feed.post&requireHello=true" +
         (cursor > 0 ? "&cursor=" + std::to_string(cursor) : std::string()) + (compress ? "&compress=true" : "");
}

// The whole network's events of these collections (NSIDs: letters, digits, dots), from `cursor`.
std::string NetworkTarget(std::int64_t cursor, const std::vector<std::string>& collections, bool compress) {
  std::string target = "/subscribe?";
  for (std::size_t i = 0; i < collections.size(); ++i) target += (i ? "&" : "") + ("wantedCollections=" + collections[i]);
  return target + (cursor > 0 ? "&cursor=" + std::to_string(cursor) : std::string()) + (compress ? "&compress=true" : "");
}

// TLS as a client that checks the server's certificate against the system's authorities.
ssl::context VerifyingTls() {
  ssl::context tls(ssl::context::tls_client);
  tls.set_default_verify_paths();
  tls.set_verify_mode(ssl::verify_peer);
  return tls;
}

using Plain = websocket::stream<beast::tcp_stream>;
using Secure = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

// Connects `ws` to the resolved endpoints, with TLS (the server's name sent and verified) when it
// is a TLS stream, and upgrades it to a websocket at `target`: opened() once it is open, or
// fail(what, error) at the first failure. `ws`, `e` and `target` outlive the io_context's run.
template <typename WS, typename Fail, typename Opened>
void Open(WS& ws, const tcp::resolver::results_type& results, const Endpoint& e, const std::string& target, Fail fail,
          Opened opened) {
  WS* const w = &ws;
  const Endpoint* const ep = &e;
  const std::string* const path = &target;
  beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(10));
  beast::get_lowest_layer(ws).async_connect(results, [w, ep, path, fail, opened](beast::error_code ec2,
                                                                                  const tcp::endpoint&) {
    if (ec2) return fail("connect " + ep->host + ":" + ep->port, ec2);
    const auto upgrade = [w, ep, path, fail, opened] {
      WS& ws = *w;
      beast::get_lowest_layer(ws).expires_never();
      websocket::stream_base::timeout timeouts{std::chrono::seconds(10), std::chrono::seconds(40), true};
      ws.set_option(timeouts);
      ws.read_message_max(JetstreamClient::kMaxFrameBytes);
      ws.set_option(websocket::stream_base::decorator(
          [](websocket::request_type& req) { req.set(beast::http::field::user_agent, "tweetkeeper-worker"); }));
      ws.async_handshake(ep->host, *path, [ep, fail, opened](beast::error_code ec3) {
        if (ec3) return fail("websocket handshake with " + ep->host, ec3);
        opened();
      });
    };
    if constexpr (std::is_same_v<WS, Secure>) {
      if (!SSL_set_tlsext_host_name(w->next_layer().native_handle(), ep->host.c_str()))
        return fail("TLS server name", beast::error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category()));
      w->next_layer().set_verify_callback(ssl::host_name_verification(ep->host));
      w->next_layer().async_handshake(ssl::stream_base::client, [ep, fail, upgrade](beast::error_code ec4) {
        if (ec4) return fail("TLS handshake with " + ep->host, ec4);
        upgrade();
      });
    } else {
      upgrade();
    }
  });
}

}  // namespace

std::string JetstreamOptionsUpdate(const std::vector<std::string>& dids) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("type");
  w.String("options_update");
  w.Key("payload");
  w.StartObject();
  w.Key("wantedCollections");
  w.StartArray();
  w.String("app.bsky.feed.post");
  w.EndArray();
  w.Key("wantedDids");
  w.StartArray();
  for (const std::string& d : dids) json::String(w, d);
  w.EndArray();
  w.Key("maxMessageSizeBytes");
  w.Int(0);
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

JetstreamClient::JetstreamClient(std::string base, std::function<std::int64_t()> cursor_us,
                                 std::shared_ptr<const zstd::Dictionary> dictionary, std::size_t max_queued_bytes)
    : base_(std::move(base)),
      cursor_us_(std::move(cursor_us)),
      dictionary_(std::move(dictionary)),
      max_queued_bytes_(max_queued_bytes) {
  thread_ = std::thread([this] { Loop(); });
}

JetstreamClient::~JetstreamClient() { Stop(); }

void JetstreamClient::Stop() {
  stop_ = true;
  frames_ready_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void JetstreamClient::SetDids(std::vector<std::string> dids) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (dids == dids_) return;
  dids_ = std::move(dids);
  ++dids_generation_;
}

void JetstreamClient::SetNetwork(std::vector<std::string> collections) {
  std::lock_guard<std::mutex> lock(mutex_);
  collections_ = std::move(collections);
}

void JetstreamClient::Reconnect() {
  std::lock_guard<std::mutex> lock(mutex_);
  frames_.clear();
  queued_bytes_ = 0;
  discard_below_ = connections_.load() + 1;
  reconnect_ = true;
}

std::string JetstreamClient::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

std::vector<std::string> JetstreamClient::Take(std::chrono::milliseconds wait, std::size_t max) {
  std::unique_lock<std::mutex> lock(mutex_);
  frames_ready_.wait_for(lock, wait, [this] { return !frames_.empty() || stop_; });
  std::vector<std::string> out;
  while (!frames_.empty() && out.size() < max) {
    queued_bytes_ -= frames_.front().second.size();
    if (frames_.front().first >= discard_below_) out.push_back(std::move(frames_.front().second));
    frames_.pop_front();
  }
  return out;
}

void JetstreamClient::Loop() {
  Backoff backoff = ReconnectBackoff();
  int failures = 0;
  while (!stop_) {
    std::vector<std::string> dids;
    const std::uint64_t generation = DidsNow(&dids);
    bool network = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      network = !collections_.empty();
    }
    if (dids.empty() && !network) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    const bool had_frames = Connection(dids, generation);
    if (stop_) break;
    failures = had_frames ? 1 : failures + 1;
    const Millis delay = backoff.Next(failures);
    for (auto slept = Millis(0); slept < delay && !stop_; slept += Millis(50)) std::this_thread::sleep_for(Millis(50));
  }
}

std::uint64_t JetstreamClient::DidsNow(std::vector<std::string>* dids) const {
  std::lock_guard<std::mutex> lock(mutex_);
  *dids = dids_;
  return dids_generation_;
}

bool JetstreamClient::Enqueue(std::string frame) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // (A frame alone may pass the bytes' bound, or it would never be taken.)
    if (frames_.size() >= kMaxQueued || (!frames_.empty() && queued_bytes_ + frame.size() > max_queued_bytes_))
      return false;
    queued_bytes_ += frame.size();
    frames_.emplace_back(connections_.load(), std::move(frame));
  }
  frames_ready_.notify_one();
  return true;
}

// One connection, until it fails or the client stops; whether it delivered any frame.
bool JetstreamClient::Connection(const std::vector<std::string>& first_dids, std::uint64_t first_generation) {
  const std::optional<Endpoint> e = ParseBase(base_);
  if (!e) {
    std::lock_guard<std::mutex> lock(mutex_);
    last_error_ = "not a ws:// or wss:// URL: " + OneLine(base_);
    return false;
  }
  net::io_context ioc;
  ssl::context tls_context = VerifyingTls();
  std::optional<Plain> plain;
  std::optional<Secure> secure;
  if (e->tls) secure.emplace(ioc, tls_context);
  else plain.emplace(ioc);
  const auto with = [&](auto&& f) {
    if (secure) f(*secure);
    else f(*plain);
  };
  std::vector<std::string> network;  // SetNetwork()'s collections, or none: the DIDs'
  {
    std::lock_guard<std::mutex> lock(mutex_);
    network = collections_;
  }
  std::string error;
  bool delivered = false;
  bool open = false;
  bool writing = false;
  std::uint64_t sent_generation = first_generation;
  std::string outgoing;
  beast::flat_buffer buffer;
  std::optional<zstd::FrameDecoder> decoder;
  if (dictionary_) decoder.emplace(dictionary_, kMaxFrameBytes);
  net::steady_timer ticker(ioc);
  const auto fail = [&](const std::string& what, beast::error_code ec) {
    if (error.empty()) error = what + ": " + ec.message();
    ticker.cancel();
    with([](auto& ws) { CloseSocket(ws); });
    // The websocket's own timers (its idle timeout and pings) would keep run() going: this
    // connection is over, whatever is still pending.
    ioc.stop();
  };
  std::function<void()> read = [&] {
    with([&](auto& ws) {
      ws.async_read(buffer, [&](beast::error_code ec, std::size_t) {
        if (ec) return fail("read", ec);
        std::string frame = beast::buffers_to_string(buffer.data());
        buffer.consume(buffer.size());
        bool binary = false;
        with([&](auto& ws) { binary = ws.got_binary(); });
        if (binary && decoder) {
          std::string text, why;
          if (!decoder->Decode(frame, &text, &why)) {
            if (error.empty()) error = "a compressed event refused: " + why;
            return fail("decode", beast::error_code());
          }
          frame = std::move(text);
        }
        delivered = true;
        if (!Enqueue(std::move(frame))) return fail("the follower is behind", beast::error_code(net::error::no_buffer_space));
        read();
      });
    });
  };
  const auto send_options = [&](const std::vector<std::string>& dids, std::uint64_t generation) {
    writing = true;
    outgoing = JetstreamOptionsUpdate(dids);
    sent_generation = generation;
    with([&](auto& ws) {
      ws.text(true);
      ws.async_write(net::buffer(outgoing), [&](beast::error_code ec, std::size_t) {
        writing = false;
        if (ec) fail("options_update", ec);
      });
    });
  };
  std::function<void()> tick = [&] {
    ticker.expires_after(std::chrono::milliseconds(100));
    ticker.async_wait([&](beast::error_code ec) {
      if (ec) return;
      // A stop, or the follower's request to connect again: this connection ends, said as such.
      const bool stopping = stop_;
      if (stopping || reconnect_.exchange(false)) {
        error = stopping ? "stopped" : "reconnecting at the follower's request";
        return fail(stopping ? "stop" : "reconnect", beast::error_code());
      }
      if (open && !writing && network.empty()) {
        std::vector<std::string> dids;
        const std::uint64_t generation = DidsNow(&dids);
        if (generation != sent_generation) {
          if (dids.empty()) return fail("no DIDs left to follow", beast::error_code());
          send_options(dids, generation);
        }
      }
      tick();
    });
  };
  const std::string target = network.empty() ? SubscribeTarget(cursor_us_(), dictionary_ != nullptr)
                                             : NetworkTarget(cursor_us_(), network, dictionary_ != nullptr);
  tcp::resolver resolver(ioc);
  resolver.async_resolve(e->host, e->port, [&](beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return fail("resolve " + e->host, ec);
    with([&](auto& ws) {
      Open(ws, results, *e, target, fail, [&] {
        open = true;
        ++connections_;
        if (network.empty()) send_options(first_dids, first_generation);
        read();
      });
    });
  });
  tick();
  ioc.run();
  std::lock_guard<std::mutex> lock(mutex_);
  last_error_ = OneLine(error);
  return delivered;
}

}  // namespace tweetkeeper::worker::follow
