#pragma once
// The mock's engagement: how many likes, reposts, replies, quotes, bookmarks and views a post has
// at any age, per network, drawn once per post from its seed (so every answer and every test
// reproduces). README.md ("Engagement") gives every parameter with its source, and
// tests/unit/mock_engagement_test.cpp checks the distributions against those numbers.
//
// A post's life: final counts drawn heavy-tailed (most posts nothing or a handful, a power-law
// tail); each count arrives in time as SEISMIC's memory kernel says (flat for s0, then a power
// law of exponent 1 + theta), scaled per post, small posts' activity ending within hours; and a
// few posts a second burst days later. count(age) = floor(N * F(age) + phase): a stratified
// sample of N arrival times, never decreasing, O(1) at any age.
//
// Or a file's curves (--engagement FILE, EngagementFile): one row per post and moment.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {

enum class Network { kX, kBluesky, kMastodon };

// The order of PublicMetrics' fields.
enum Kind { kReposts, kReplies, kLikes, kQuotes, kBookmarks, kViews, kKinds };

// What the model drew for one post: each burst's final counts and timing.
struct Burst {
  std::array<int64_t, kKinds> total{};
  std::array<double, kKinds> phase{};  // [0, 1): where the stratified arrivals sit
  double start_s = 0;                  // age at which it starts
  double scale = 1;                    // multiplies every kind's s0
  double end_s = 0;                    // age (from its start) after which nothing more arrives; 0: none
};
struct Life {
  Burst first;
  std::optional<Burst> revival;
};

// One post's drawn life (seed: the X id, the Bluesky URI's FNV-1a, the Mastodon StatusSeed).
Life DrawLife(Network network, uint64_t seed);

// Its counts at an age (seconds since created_at): non-decreasing, 0 at 0.
PublicMetrics LifeAt(Network network, const Life& life, double age_seconds);
// One kind's count of LifeAt (the same arithmetic; views not capped).
int64_t LifeCount(Network network, const Life& life, Kind kind, double age_seconds);
// Where LifeCount(kind) first exceeds `count`, for a life of one burst: the age solving it
// analytically (a guess to within rounding, which the caller checks on LifeCount); -1 when the
// life has a revival or the kind is views (no closed form here), +inf when it never does.
double LifeEntryAge(Network network, const Life& life, Kind kind, int64_t count);

// SEISMIC's memory kernel as a distribution of reaction times: its CDF at t seconds.
double KernelCdf(double t, double s0, double theta);

// Curves from a file: "network,key,age_seconds,reposts,replies,likes,quotes,bookmarks,views" per
// line (a header line and # comments allowed); key: an X id, a Bluesky at:// URI, or a Mastodon
// "host/status id". A post's count at an age is its row's at the latest moment at or before it
// (0 before the first). Refuses (std::runtime_error, saying the line) a malformed or decreasing row.
class EngagementFile {
 public:
  static std::shared_ptr<const EngagementFile> Load(const std::string& path);
  static std::shared_ptr<const EngagementFile> Parse(const std::string& text);
  // The curve of a post, by network and seed, if the file has it.
  std::optional<PublicMetrics> At(Network network, uint64_t seed, int64_t age_seconds) const;
  size_t posts() const { return curves_.size(); }

 private:
  struct Point {
    int64_t age;
    PublicMetrics m;
  };
  std::map<std::pair<int, uint64_t>, std::vector<Point>> curves_;
};

// The seed of a post a file or the truth endpoint names by its key (as EngagementFile says).
std::optional<uint64_t> SeedOfKey(Network network, const std::string& key);
std::optional<Network> ParseNetwork(const std::string& name);

// What every endpoint answers: the file's curve when --engagement names the post, else the model's.
PublicMetrics Engagement(const MockConfig& config, Network network, uint64_t seed, int64_t age_seconds);

}  // namespace tweetkeeper::mock
