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

}  // namespace tweetkeeper::worker::follow
