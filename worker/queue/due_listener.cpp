#include "queue/due_listener.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <pqxx/pqxx>

#include "dsn/dsn.hpp"
#include "service/backoff.hpp"

namespace tweetkeeper::worker {
namespace {

constexpr const char* kChannel = "tweetkeeper_due";

class Receiver : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& c, const std::function<void(const std::string&)>& on_due)
      : pqxx::notification_receiver(c, kChannel), on_due_(on_due) {}
  void operator()(const std::string& payload, int) override { on_due_(payload); }

 private:
  const std::function<void(const std::string&)>& on_due_;
};

}  // namespace

bool NotifyIsFor(const std::string& provider, const std::string& payload) {
  const bool posts = payload == "bluesky" || payload == "mastodon";
  if (provider == "bluesky" || provider == "mastodon") return payload == provider;
  return !posts;
}

DueListener::DueListener(std::string dsn, std::function<void(const std::string&)> on_due)
    : dsn_(std::move(dsn)), on_due_(std::move(on_due)) {}

DueListener::~DueListener() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void DueListener::Start() { thread_ = std::thread([this] { Loop(); }); }

void DueListener::Loop() {
  Backoff backoff = ReconnectBackoff();
  int failures = 0;
  while (!stop_) {
    try {
      pqxx::connection conn(dsn_);
      Receiver receiver(conn, on_due_);
      if (failures > 0) spdlog::info("listener: LISTEN {} restored", kChannel);
      failures = 0;
      // Wake up every half second to notice shutdown; a notification ends the wait at once.
      while (!stop_) conn.await_notification(0, 500'000);
      return;
    } catch (const std::exception& e) {
      if (stop_) return;
      Millis wait = backoff.Next(++failures);
      // Once per outage is enough: slots log the database's state themselves.
      if (failures == 1)
        spdlog::warn("listener: LISTEN {} lost ({}); idle slots poll until it is back",
                     kChannel, RedactDsnSecrets(e.what(), dsn_).substr(0, 200));
      for (auto until = std::chrono::steady_clock::now() + wait;
           !stop_ && std::chrono::steady_clock::now() < until;)
        std::this_thread::sleep_for(Millis{100});
    }
  }
}

}  // namespace tweetkeeper::worker
