#include "mock_api/jetstream_server.hpp"

#include <rapidjson/document.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <optional>
#include <queue>
#include <set>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/follow_world.hpp"
#include "mock_api/gone.hpp"
#include "mock_api/jetstream_posts.hpp"
#include "mock_api/jetstream_zstd.hpp"

namespace tweetkeeper::mock {
namespace {

using tcp = boost::asio::ip::tcp;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

constexpr std::size_t kMaxDids = 10'000;
constexpr std::size_t kMaxCollections = 100;
constexpr int64_t kLookbackUs = 36LL * 3600 * 1'000'000;  // the replay window
constexpr int64_t kSecondUs = 1'000'000;
constexpr size_t kPostsPerTick = 5'000;     // registered posts a connection takes on per tick (live)
constexpr int64_t kAheadS = 60;             // seconds generated ahead of what was sent, at most
constexpr size_t kPendingMax = 20'000;      // events generated ahead of sending, at most
constexpr size_t kOutboxMax = 10'000;       // events written ahead of the socket, at most
constexpr int64_t kTickBudgetUs = 10'000;   // a tick's generating stops after this long

int64_t NowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

std::string Decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

bool ValidNsid(const std::string& s) {
  if (s.empty() || s.size() > 317 || std::count(s.begin(), s.end(), '.') < 2) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '*'; });
}

// A subscription's filter, as the query or an options_update sets it.
struct Filter {
  std::set<std::string> dids;
  std::set<std::string> collections;
  // Whether a collection's commits pass (empty: all; "app.bsky.*" prefixes).
  bool Wants(std::string_view collection) const {
    if (collections.empty()) return true;
    for (const std::string& c : collections) {
      if (c == collection) return true;
      if (c.size() > 1 && c.back() == '*' && collection.substr(0, c.size() - 1) == std::string_view(c).substr(0, c.size() - 1))
        return true;
    }
    return false;
  }
};

// Checks a filter as Jetstream does: valid DIDs and NSIDs, at most 10,000 and 100 of them.
std::string CheckFilter(const Filter& f) {
  for (const std::string& d : f.dids)
    if (!IsDid(d)) return "invalid DID: " + d;
  for (const std::string& c : f.collections)
    if (!ValidNsid(c)) return "invalid collection: " + c;
  if (f.dids.size() > kMaxDids) return "too many wanted DIDs";
  if (f.collections.size() > kMaxCollections) return "too many wanted collections";
  return "";
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const MockConfig& config) : ws_(std::move(socket)), config_(config), timer_(ws_.get_executor()) {}

  void Start() {
    http::async_read(ws_.next_layer(), buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRequest(ec); });
  }

 private:
  void OnRequest(beast::error_code ec) {
    if (ec) return;
    const std::string target(request_.target());
    std::string error;
    const size_t q = target.find('?');
    if (target.substr(0, q) != "/subscribe") return Refuse(http::status::not_found, "404 page not found");
    bool cursor_given = false;
    int64_t cursor = 0;
    if (q != std::string::npos) {
      std::string_view query(target);
      query.remove_prefix(q + 1);
      while (!query.empty()) {
        const size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        const size_t eq = pair.find('=');
        const std::string key = Decode(pair.substr(0, eq)), value = eq == std::string_view::npos ? "" : Decode(pair.substr(eq + 1));
        if (key == "wantedDids") filter_.dids.insert(value);
        if (key == "wantedCollections") filter_.collections.insert(value);
        if (key == "requireHello") hello_ = value == "true";
        if (key == "compress" && value == "true") Compress();
        if (key == "cursor") {
          try {
            size_t used = 0;
            cursor = std::stoll(value, &used);
            if (used != value.size()) throw std::invalid_argument(value);
            cursor_given = true;
          } catch (const std::exception&) {
            return Refuse(http::status::bad_request, "invalid cursor: " + value);
          }
        }
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
      }
    }
    if (const std::string bad = CheckFilter(filter_); !bad.empty()) return Refuse(http::status::bad_request, bad);
    if (beast::iequals(request_["Socket-Encoding"], "zstd")) Compress();
    const int64_t now = NowUs();
    // A cursor in the future, or none: live. An older one than the window: clamped, silently.
    sent_from_us_ = !cursor_given || cursor > now ? now : std::max(cursor, now - kLookbackUs);
    next_second_ = FloorSecond(sent_from_us_);
    if (!websocket::is_upgrade(request_)) return Refuse(http::status::bad_request, "not a websocket upgrade");
    generation_ = JetstreamDrops();
    if (compressor_) spdlog::info("jetstream: a zstd-compressed subscription");
    ws_.async_accept(request_, [self = shared_from_this()](beast::error_code e) {
      if (e) return;
      self->Read();
      self->Tick();
    });
  }

  void Refuse(http::status status, const std::string& why) {
    auto res = std::make_shared<http::response<http::string_body>>(status, request_.version());
    res->set(http::field::content_type, "text/plain; charset=utf-8");
    res->body() = why;
    res->prepare_payload();
    res->keep_alive(false);
    http::async_write(ws_.next_layer(), *res, [self = shared_from_this(), res](beast::error_code, size_t) {
      beast::error_code ignored;
      self->ws_.next_layer().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  // Subscriber-sourced messages: {"type":"options_update","payload":{...}} replaces the filter.
  void Read() {
    ws_.async_read(incoming_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        self->closed_ = true;
        return;
      }
      const std::string text = beast::buffers_to_string(self->incoming_.data());
      self->incoming_.consume(self->incoming_.size());
      rapidjson::Document doc;
      doc.Parse(text.c_str(), text.size());
      if (doc.IsObject() && doc.HasMember("type") && doc["type"].IsString() &&
          std::string(doc["type"].GetString()) == "options_update") {
        Filter f;
        bool ok = doc.HasMember("payload") && doc["payload"].IsObject();
        if (ok) {
          for (const char* key : {"wantedDids", "wantedCollections"}) {
            if (!doc["payload"].HasMember(key)) continue;
            const auto& list = doc["payload"][key];
            if (!list.IsArray()) {
              ok = false;
              continue;
            }
            for (const auto& v : list.GetArray()) {
              if (!v.IsString()) ok = false;
              else (key[6] == 'D' ? f.dids : f.collections).insert(v.GetString());
            }
          }
        }
        const std::string bad = ok ? CheckFilter(f) : "bad options_update payload";
        if (!bad.empty()) {
          self->closed_ = true;
          self->ws_.async_close(websocket::close_reason(websocket::close_code::policy_error, bad.substr(0, 123)),
                                [self](beast::error_code) {});
          return;
        }
        self->filter_ = std::move(f);
        self->hello_ = false;
      }
      self->Read();
    });
  }

  // An event generated, not yet sent: an engagement commit (of `post`, or background when null),
  // or a posting account's (its JSON made, its DID filter applied).
  struct Pending {
    StreamEvent event;
    std::shared_ptr<const StreamedPost> post;
    std::string json;  // set: a posting account's post or delete
    bool operator<(const Pending& o) const { return event.time_us < o.event.time_us; }
  };
  using Key = std::pair<int64_t, size_t>;  // (a second at or before the post's next event, its index)

  // Takes on the posts registered since the last tick (a chunk at a time; all over again after a
  // reset). A post's events in the seconds already generated and not yet sent join the pending
  // ones. True when it has caught up.
  bool SyncPosts() {
    StreamedPosts& registry = JetstreamPosts();
    if (registry.epoch() != epoch_) {
      epoch_ = registry.epoch();
      posts_.clear();
      heap_ = {};
      pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.post != nullptr; }),
                     pending_.end());
    }
    // Each post costs a look at every second generated and not yet sent: fewer per tick when many.
    const int64_t unsent = std::max<int64_t>(0, next_second_ - FloorSecond(sent_from_us_));
    const auto added = registry.Slice(epoch_, posts_.size(), std::max<size_t>(50, 2 * kPostsPerTick / static_cast<size_t>(unsent + 1)));
    std::vector<Pending> late;
    std::vector<StreamEvent> events;
    for (const auto& post : added) {
      for (int64_t s = FloorSecond(sent_from_us_); s < next_second_; ++s) {
        events.clear();
        PostEventsIn(post->curve, s, &events);
        for (const StreamEvent& e : events)
          if (e.time_us >= sent_from_us_) late.push_back({e, post, ""});
      }
      if (const int64_t next = NextPostEventSecond(post->curve, next_second_); next != kNever)
        heap_.push({next, posts_.size()});
      posts_.push_back(post);
    }
    if (!late.empty()) {
      pending_.insert(pending_.end(), late.begin(), late.end());
      std::stable_sort(pending_.begin(), pending_.end());
    }
    return posts_.size() >= registry.size();
  }

  static int64_t FloorSecond(int64_t us) { return us / kSecondUs - (us % kSecondUs < 0); }

  // Every event of Unix second s, in time order (equal times keep the order made: registered
  // posts' engagement, then background traffic, then the posting accounts').
  void GenerateSecond(int64_t s) {
    std::vector<Pending> batch;
    std::vector<StreamEvent> events;
    while (!heap_.empty() && heap_.top().first <= s) {
      const size_t i = heap_.top().second;
      heap_.pop();
      events.clear();
      PostEventsIn(posts_[i]->curve, s, &events);
      for (const StreamEvent& e : events) batch.push_back({e, posts_[i], ""});
      if (const int64_t next = NextPostEventSecond(posts_[i]->curve, s + 1); next != kNever) heap_.push({next, i});
    }
    if (config_.jetstream_rate > 0) {
      events.clear();
      BackgroundEventsIn(config_.jetstream_rate, s, &events);
      for (const StreamEvent& e : events) batch.push_back({e, nullptr, ""});
    }
    if (filter_.Wants("app.bsky.feed.post")) {
      for (auto& [time_us, json] : JetstreamEvents(filter_.dids, s * kSecondUs - 1, s * kSecondUs + kSecondUs - 1, config_)) {
        Pending p;
        p.event.time_us = time_us;
        p.json = std::move(json);
        batch.push_back(std::move(p));
      }
    }
    for (const GoneEvent& e : config_.gone->EventsIn(gone_seen_, s * kSecondUs, s * kSecondUs + kSecondUs)) {
      if (std::optional<Pending> p = GoneJson(e)) batch.push_back(std::move(*p));
    }
    std::stable_sort(batch.begin(), batch.end());
    for (Pending& p : batch) pending_.push_back(std::move(p));
  }

  // A change POST /mock/gone made, as this connection's filter lets it through: a post's delete
  // (a commit of app.bsky.feed.post) or an account event (whatever wantedCollections says, as
  // Jetstream sends them), of a wanted DID.
  std::optional<Pending> GoneJson(const GoneEvent& e) const {
    if (!filter_.dids.empty() && !filter_.dids.count(e.did)) return std::nullopt;
    if (!e.rkey.empty() && !filter_.Wants("app.bsky.feed.post")) return std::nullopt;
    Pending p;
    p.event.time_us = e.time_us;
    p.json = e.rkey.empty() ? JetstreamAccountJson(e) : JetstreamPostDeleteJson(e.did, e.rkey, e.time_us);
    return p;
  }

  // The changes POST /mock/gone made since the last look: those in seconds already generated join
  // the pending events in time order; GenerateSecond finds the later ones. Called after the tick
  // read its clock: a change made after this look is stamped later than that clock (gone.hpp), so
  // it is never behind what was sent.
  void MergeGone() {
    size_t total = 0;
    std::vector<Pending> late;
    for (const GoneEvent& e : config_.gone->EventsFrom(gone_seen_, &total)) {
      if (e.time_us >= next_second_ * kSecondUs) continue;
      if (std::optional<Pending> p = GoneJson(e)) late.push_back(std::move(*p));
    }
    gone_seen_ = total;
    if (late.empty()) return;
    pending_.insert(pending_.end(), late.begin(), late.end());
    std::stable_sort(pending_.begin(), pending_.end());
  }

  // The pending events whose time has come into the outbox, filtered.
  void Send(int64_t now) {
    while (!pending_.empty() && pending_.front().event.time_us <= now && outbox_.size() < kOutboxMax) {
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      if (p.event.time_us < sent_from_us_) continue;  // before the cursor, in its second
      sent_from_us_ = p.event.time_us;
      if (!p.json.empty()) {
        outbox_.push_back(std::move(p.json));
        continue;
      }
      if (!filter_.Wants(EngagementCollection(p.event))) continue;
      if (!filter_.dids.empty() && !filter_.dids.count(PlcDid(p.event.actor))) continue;
      outbox_.push_back(EngagementCommitJson(p.event, p.post ? &p.post->post : nullptr));
    }
  }

  // Every 20 ms (at once while behind): the registered posts taken on, the seconds up to now
  // generated (the current one whole, ahead of its time), the events whose time has come sent.
  void Tick() {
    if (closed_) return;
    if (JetstreamDrops() != generation_) {
      beast::error_code ignored;
      ws_.next_layer().close(ignored);  // no close frame: a dropped stream
      closed_ = true;
      return;
    }
    bool behind = false;
    if (!hello_ && outbox_.size() < kOutboxMax) {
      if (SyncPosts()) {
        const int64_t now = NowUs(), started = NowUs();
        MergeGone();
        int64_t made = 0;
        // A replay goes as fast as the reader takes it, a bounded time per tick: the memory it
        // takes stays bounded and other connections go on.
        while (next_second_ <= FloorSecond(now) && pending_.size() < kPendingMax &&
               next_second_ < FloorSecond(sent_from_us_) + kAheadS) {
          GenerateSecond(next_second_++);
          if (++made % 16 == 0 && NowUs() - started > kTickBudgetUs) break;
        }
        Send(now);
        // Everything before the first unsent event (or all generated) is sent.
        const int64_t upto = pending_.empty() ? next_second_ * kSecondUs : pending_.front().event.time_us;
        sent_from_us_ = std::max(sent_from_us_, std::min(upto, now + 1));
        behind = next_second_ <= FloorSecond(now) || (!pending_.empty() && pending_.front().event.time_us <= now);
      } else {
        behind = true;
      }
      Write();
    }
    timer_.expires_after(std::chrono::milliseconds(behind && outbox_.size() < kOutboxMax ? 1 : 20));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->Tick();
    });
  }

  // compress=true, or the header Socket-Encoding: zstd: every event a binary frame, one zstd frame.
  void Compress() {
    if (!compressor_) compressor_ = std::make_unique<JetstreamCompressor>();
  }

  void Write() {
    if (writing_ || outbox_.empty() || closed_) return;
    writing_ = true;
    ws_.text(!compressor_);
    if (compressor_) wire_ = compressor_->Compress(outbox_.front());
    ws_.async_write(net::buffer(compressor_ ? wire_ : outbox_.front()), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) {
        self->closed_ = true;
        return;
      }
      self->outbox_.pop_front();
      self->Write();
    });
  }

  websocket::stream<tcp::socket> ws_;
  const MockConfig& config_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_, incoming_;
  http::request<http::string_body> request_;
  Filter filter_;
  bool hello_ = false;
  bool writing_ = false;
  bool closed_ = false;
  int64_t sent_from_us_ = 0;  // events before this are sent (or before the cursor)
  int64_t next_second_ = 0;   // seconds before this are generated
  uint64_t generation_ = 0;
  uint64_t epoch_ = ~uint64_t{0};
  size_t gone_seen_ = 0;  // the changes of POST /mock/gone looked at (GoneWorld::EventsFrom)
  std::vector<std::shared_ptr<const StreamedPost>> posts_;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap_;
  std::deque<Pending> pending_;
  std::deque<std::string> outbox_;
  std::unique_ptr<JetstreamCompressor> compressor_;  // compressed: the frame being written
  std::string wire_;
};

}  // namespace

struct JetstreamServer::Impl {
  Impl(const MockConfig& c, const std::string& address, int port)
      : config(c), acceptor(ioc, tcp::endpoint(net::ip::make_address(address), static_cast<unsigned short>(port))) {}
  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      std::make_shared<Session>(std::move(socket), config)->Start();
      Accept();
    });
  }
  const MockConfig& config;
  net::io_context ioc;
  tcp::acceptor acceptor;
};

JetstreamServer::JetstreamServer(const MockConfig& config, const std::string& address, int port) {
  try {
    impl_ = std::make_unique<Impl>(config, address, port);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot listen on " + address + ":" + std::to_string(port) + " (--jetstream-port): " + e.what());
  }
}

JetstreamServer::~JetstreamServer() = default;

int JetstreamServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void JetstreamServer::Run() {
  impl_->Accept();
  impl_->ioc.run();
}

void JetstreamServer::Stop() { impl_->ioc.stop(); }

}  // namespace tweetkeeper::mock
