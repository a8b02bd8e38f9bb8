#pragma once
// How often a follower reads each followed account: a budget of requests per second (a Mastodon
// server's window, the AppView's, an X credential's timeline window, times the share left to
// following) shared out over the accounts read through it, most active first. Pure, unit-tested.
//
// The share of account i goes by the square root of its rate of posts r_i: the interval between
// its reads is I_i = sum_j sqrt(r_j) / (R * sqrt(r_i)). Of all schedules that spend R requests a
// second, this one makes the mean delay from a post to its discovery (sum_i r_i * I_i / 2 over
// all posts) the least (Lagrange: d/dI_i of sum r_i I_i + lambda * sum 1/I_i is zero where
// I_i^2 = lambda / r_i). Reading in proportion to r_i would give a busy account more reads than
// it needs and starve the quiet ones; reading all alike would leave the busy accounts' many posts
// waiting. Intervals are clamped to [min, max]; a budget that cannot pay for the max of every
// account stretches them all alike, since the window must never be exceeded.

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace tweetkeeper::worker::follow {

using Millis = std::chrono::milliseconds;

// A posting rate for an account: posts found since it was followed, over that time; an account
// followed for less than an hour is read as if followed for an hour (one post in its first
// minute does not make it the busiest of all), and none is taken as quieter than a post a day.
double PostRate(std::int64_t posts_found, double seconds_followed);

// The interval between reads of each account (rates in posts per second), spending at most
// budget_rps requests a second in all.
std::vector<Millis> PollIntervals(const std::vector<double>& rates, double budget_rps, Millis min, Millis max);

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

}  // namespace tweetkeeper::worker::follow
