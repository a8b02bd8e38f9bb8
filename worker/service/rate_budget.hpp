#pragma once
// A budget of requests against one rate window (a Mastodon server's, the AppView's, an X
// credential's): requests spaced evenly at the rate this client may spend (Gate), that rate
// learned again from each answer's window headers (RateBudget::Learn: the window's size, what the
// others on the same address or credential spend of it, WindowShare), and a pause while the
// window is spent. Pure, unit-tested: the clock is passed in.

#include <cstdint>
#include <optional>

#include "batch/batch_result.hpp"

namespace tweetkeeper::worker {

// What one client may spend of a window it shares with others it cannot see (a second follower, a
// refreshing worker, on one address or credential): from the window's spare requests over the
// time left (keeping `keep` in hand for the moment two send the last one) and what the others
// were seen to spend so far in it (used by all, from the window's headers, less this client's
// own requests in it: `mine`), at most `configured`. Two clients doing this converge on halves
// of the spare rate, spread evenly over the window; taking the whole spare rate each instead
// spends the window early and leaves its end starved (make bench: reads 200 s late at the end
// of each 5-minute window). At least 5% of configured: a client is never stopped by an estimate.
// weight: this client's part of the window when it is shared (halves by default); two clients
// whose weights add up to 1 converge on those parts instead (followers weigh by the accounts they
// read through the window: an even split gave one account half a server's window, issue 49).
double WindowShare(double configured_rps, double limit, double remaining, double left_s, double window_s, double mine,
                   double keep = 2, double weight = 0.5);

// Spacing and pauses for one budget's requests: at most budget_rps (evenly spaced), and none
// while the service says the window is spent (remaining 0) or refused one (429) until its reset.
class Gate {
 public:
  explicit Gate(double budget_rps) : budget_rps_(budget_rps) {}
  void SetBudget(double budget_rps) { budget_rps_ = budget_rps; }
  double budget() const { return budget_rps_; }
  // The earliest moment (ms on any steady clock) the next request may go.
  std::int64_t NextAt() const;
  // Until when the window is spent (a request that must not wait its turn waits for this).
  std::int64_t PausedUntil() const { return paused_until_ms_; }
  // A request goes at now_ms, in its turn or before it (the next page of a read: a read's pages
  // go at once, so that its posts are not held back by the spacing): the turns after it move
  // back by one spacing each, so that the budget holds on average.
  void Sent(std::int64_t now_ms);
  // The window is spent until until_ms (a 429, or remaining 0 with a reset).
  void PauseUntil(std::int64_t until_ms);
  // A request sent up to this late keeps the turns after it where they were (Sent()).
  static constexpr std::int64_t kCatchUpMs = 1000;

 private:
  double budget_rps_;
  std::int64_t next_ms_ = INT64_MIN / 2;  // the next turn
  std::int64_t paused_until_ms_ = 0;
};

// One window's budget: `limit` requests per `window_s` (a default until an answer says its limit),
// of which this client spends `share`, times its part (`weight`, 1 unless set) of what all
// clients like it read through the window.
class RateBudget {
 public:
  RateBudget(double limit, double window_s, double share);

  double limit() const { return limit_; }
  double window_s() const { return window_s_; }
  // What this client may spend of the window as configured: share x limit / window x weight.
  double configured_rps() const { return share_ * limit_ / window_s_ * weight_; }
  double weight() const { return weight_; }
  // This client's part of the window (followers: its part of the accounts all followers read
  // through it, follow_shares()); a gate faster than the new configured rate slows to it.
  void SetWeight(double weight);
  Gate& gate() { return gate_; }
  const Gate& gate() const { return gate_; }

  // Learns from an answer (its window headers; refused: a 429) at now_ms (Unix ms): the window's
  // limit, this client's rate in what is left of it, and whether the window is spent. Returns
  // until when (Unix ms) the budget pauses when the answer says the window is spent (a 429, or
  // one request or none left): its reset and a second, or a minute without one, at most 15 min.
  std::optional<std::int64_t> Learn(const RateLimit& rate, bool refused, std::int64_t now_ms);

  // The rate the accounts' schedule was planned for; Learn() asks for a new plan (repace) when
  // the gate's rate moves more than 5% from it, or the limit changes.
  double planned_rps = 0;
  bool repace = true;

 private:
  double limit_;
  double window_s_;
  double share_;
  double weight_ = 1;
  Gate gate_;
  std::int64_t window_reset_s_ = 0;  // the window the last answer spoke of (its reset) ...
  std::int64_t mine_ = 0;            // ... and this client's requests in it
};

}  // namespace tweetkeeper::worker
