#pragma once
// LISTEN tweetkeeper_due on a connection of its own: the extension's background worker notifies
// when a batch becomes claimable, and idle slots wake at once instead of waiting for their next
// poll. Only a hint: if this connection is down, slots still poll (--poll-interval).

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace tweetkeeper::worker {

class DueListener {
 public:
  // on_due is called from the listener's thread for every notification.
  DueListener(std::string dsn, std::function<void()> on_due);
  ~DueListener();  // stops and joins the thread
  DueListener(const DueListener&) = delete;
  DueListener& operator=(const DueListener&) = delete;

  void Start();

 private:
  void Loop();

  std::string dsn_;
  std::function<void()> on_due_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tweetkeeper::worker
