#pragma once
// LISTEN tweetkeeper_due on a connection of its own: the extension's background worker notifies
// when a batch becomes claimable, and idle slots wake at once instead of waiting for their next
// poll. Only a hint: if this connection is down, slots still poll (--poll-interval). The payload
// says whose batch: X's a number (how many tweets), Bluesky's and Mastodon's the network's name;
// NotifyIsFor() tells a worker's own.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace tweetkeeper::worker {

// Whether a notification's payload is about work for a worker of `provider` (x-v2, x-v1.1,
// bluesky, mastodon): the network's name for Bluesky and Mastodon, anything else for X.
bool NotifyIsFor(const std::string& provider, const std::string& payload);

class DueListener {
 public:
  // on_due is called from the listener's thread for every notification, with its payload.
  DueListener(std::string dsn, std::function<void(const std::string&)> on_due);
  ~DueListener();  // stops and joins the thread
  DueListener(const DueListener&) = delete;
  DueListener& operator=(const DueListener&) = delete;

  void Start();

 private:
  void Loop();

  std::string dsn_;
  std::function<void(const std::string&)> on_due_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tweetkeeper::worker
