#pragma once
// The API gate shared by all slots of a process. A rate limit applies to the token, so one slot's
// 429 (or an answer that used up the window) closes the gate for every slot until the window
// resets, and a usage cap closes it for 15 minutes; each slot waits at the gate before it claims.
// (With credentials registered, the database keeps each one's quota and the caller leaves the
// gate open: a 429 for one credential must not pause the others.)

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "batch/batch_result.hpp"
#include "service/backoff.hpp"
#include "stop/stop_signal.hpp"

namespace tweetkeeper::worker {

class ApiGate {
 public:
  // What `answer` says of the token's window: how long the API is closed from now (for every
  // slot), or nullopt. `backoff` gives the pause for a 429 that says no reset. `label` (e.g.
  // "slot 1") prefixes the one log line said when this answer closes the gate for longer.
  std::optional<Millis> Apply(const std::string& label, const BatchResult& answer,
                              const std::function<Millis()>& backoff);

  // Sleeps while the gate is closed; false when a stop came first.
  bool Wait(StopSignal& stop);

 private:
  bool Close(Millis duration);  // true if this extended the pause

  std::atomic<std::int64_t> closed_until_ms_{0};  // steady clock
};

}  // namespace tweetkeeper::worker
