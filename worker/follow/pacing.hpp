#pragma once
// How often a follower reads each followed account: a budget of requests per second (a Mastodon
// server's window, the AppView's, an X credential's timeline window, times the share left to
// following) shared out over the accounts read through it, most active first. Pure, unit-tested.
// (The budget itself, its spacing and what it learns from answers, is the service kit's:
// service/rate_budget.hpp.)
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
#include <set>
#include <vector>

namespace tweetkeeper::worker::follow {

using Millis = std::chrono::milliseconds;

// A posting rate for an account: posts found since it was followed, over that time; an account
// followed for less than an hour is read as if followed for an hour (one post in its first
// minute does not make it the busiest of all), and none is taken as quieter than a post a day.
double PostRate(double posts_found, double seconds_followed);

// The posting rates of one window's accounts, to plan from: each account's posts found taken with
// the window's mean beside it (PostRate of posts + mean), and an account not read yet (posts_found
// < 0) taken as the mean. A count of a few minutes says little: taken alone, an account not read
// yet, or quiet so far, was planned at --follow-max-poll (15 min) on no evidence, while the one
// read first took the window (make bench-follow, issue 49); beside the mean the busiest are still
// read the most often, and the spread narrows only as much as the evidence is thin.
std::vector<double> WindowRates(const std::vector<std::int64_t>& posts_found, const std::vector<double>& seconds_followed);

// The interval between reads of each account (rates in posts per second), spending at most
// budget_rps requests a second in all.
std::vector<Millis> PollIntervals(const std::vector<double>& rates, double budget_rps, Millis min, Millis max);

// Whether a window's plan is to be made again from the posts found since: a plan is only as good
// as the rates it was made from, and the first is made while the accounts resolve, before any post
// was found (every account alike: 112 s each on a Mastodon server of 100 accounts, so that the
// busiest needed three requests a read, issue 49). Again once every account has been read
// (`unread` none: planned again while the first reads went on, the busiest accounts' reads came
// due among them and waited behind them, up to 60 s), and the posts found have grown by as many as
// the window has accounts and by a tenth since the last plan: often while the rates are new,
// seldom once they hold.
bool ReplanDue(std::int64_t posts_at_plan, std::int64_t posts_now, std::size_t accounts, std::size_t unread);

// The turns of one window booked for reads. A read is planned for a free turn: the first moment at
// or after its interval that is at least a spacing (the gate's) away from every other read booked,
// so that the reads planned never queue at the gate behind one another. Planned for their
// intervals alone, reads of different intervals came due together now and then and queued at a
// gate they used 90% of: each a few seconds late, beyond the 2 s the bench allows (make
// bench-follow, issue 49). The interval a read is planned at is the time to its turn.
class ReadTurns {
 public:
  // Books and returns the first free turn at or after at_ms.
  std::int64_t Book(std::int64_t at_ms, std::int64_t spacing_ms);
  // The turn booked at at_ms is free again (its read went, or it was planned anew); none: no-op.
  void Release(std::int64_t at_ms);
  std::size_t size() const { return booked_.size(); }
  void Clear() { booked_.clear(); }

 private:
  std::multiset<std::int64_t> booked_;
};

}  // namespace tweetkeeper::worker::follow
