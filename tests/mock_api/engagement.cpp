#include "mock_api/engagement.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/mix.hpp"

namespace tweetkeeper::mock {

namespace {

// Each network's parameters. README.md ("Engagement") gives the source of each, or says that none
// was found and what the value rests on.
struct NetworkModel {
  double p_zero;                     // share of posts no one likes
  double body_mu, body_sigma;        // likes - 1 of the others: lognormal
  double p_tail, tail_min, tail_alpha, cap;  // a Pareto tail (pdf exponent alpha) past tail_min
  std::array<double, kKinds> ratio;  // each count's mean ratio to likes (views: to likes + 1)
  double ratio_sigma;                // per post, lognormal around it
  std::array<double, kKinds> s0;     // the kernel's flat start per kind, seconds (times the post's scale;
  std::array<double, kKinds> theta;  //   views: ArrivalCdf), and its exponent
  double scale_sigma;                // per post, lognormal (median 1)
  double small_total;                // posts with fewer engagements than this stop within hours:
  double small_end_s, end_sigma;     // after a lognormal time of this median
  double revival_min_total;          // posts with at least this many engagements may revive:
  double p_revival;                  // with this probability,
  double revival_from_s, revival_to_s;  // starting uniformly in this age range,
  double revival_size_min, revival_size_max;  // this share of the first burst's counts, uniform,
  double revival_end_s;              // and over within this long
};

constexpr double kTheta = 0.2314843;  // SEISMIC (cran/seismic memory.pdf's default)
constexpr double kHour = 3600, kDay = 86400;

// Kinds: reposts, replies, likes, quotes, bookmarks, views.
constexpr NetworkModel kX{0.55, 0.7, 1.3, 0.02, 50, 1.65, 2e6,
                          {0.10, 0.08, 1, 0.02, 0.05, 100}, 0.5,
                          {300, 120, 300, 300, 1800, 0}, {kTheta, kTheta, kTheta, kTheta, kTheta, 0}, 0.8,
                          20, 12.4 * kHour, 0.4,
                          10, 0.03, 2 * kDay, 25 * kDay, 0.25, 1.5, 2 * kDay};
constexpr NetworkModel kBluesky{0.45, 0.7, 1.3, 0.01, 50, 1.65, 1e6,
                                {0.10, 0.10, 1, 0.03, 0.02, 0}, 0.5,
                                {300, 120, 300, 300, 1800, 0}, {kTheta, kTheta, kTheta, kTheta, kTheta, 0}, 0.8,
                                20, 12.4 * kHour, 0.4,
                                10, 0.03, 2 * kDay, 25 * kDay, 0.25, 1.5, 2 * kDay};
constexpr NetworkModel kMastodon{0.65, 0.2, 1.0, 0.001, 30, 1.65, 1e4,
                                 {0.49, 0.038, 1, 0.01, 0, 0}, 0.5,
                                 {300, 120, 300, 300, 1800, 0}, {kTheta, kTheta, kTheta, kTheta, kTheta, 0}, 0.8,
                                 20, 12.4 * kHour, 0.4,
                                 10, 0.05, 2 * kDay, 25 * kDay, 0.25, 1.5, 2 * kDay};

const NetworkModel& ModelOf(Network n) {
  switch (n) {
    case Network::kBluesky: return kBluesky;
    case Network::kMastodon: return kMastodon;
    default: return kX;
  }
}

// A post's draws, always in the same order, so each post keeps its life.
struct Draws {
  uint64_t s;
  double Uniform() {  // [0, 1)
    s = Mix(s);
    return static_cast<double>(s >> 11) * 0x1.0p-53;
  }
  double Normal() {  // Box-Muller
    const double u1 = 1.0 - Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

Burst DrawBurst(const NetworkModel& m, Draws& d, double likes, double scale_of_counts) {
  Burst b;
  for (int k = 0; k < kKinds; ++k) {
    double expected = 0;
    if (k == kLikes) {
      expected = likes;
    } else if (m.ratio[k] > 0) {
      const double base = k == kViews ? likes + 1 : likes;
      // (noise of mean 1: the ratios are the sources' aggregates)
      expected = base * m.ratio[k] * std::exp(m.ratio_sigma * d.Normal() - m.ratio_sigma * m.ratio_sigma / 2);
    }
    const double n = k == kLikes ? expected : std::floor(expected * scale_of_counts + d.Uniform());
    b.total[k] = static_cast<int64_t>(std::min(n, static_cast<double>(kInt32Max)));
    b.phase[k] = d.Uniform();
  }
  b.scale = std::exp(m.scale_sigma * d.Normal());
  return b;
}

double Likes(const NetworkModel& m, Draws& d) {
  if (d.Uniform() < m.p_zero) return 0;
  if (d.Uniform() < m.p_tail) {
    const double x = m.tail_min * std::pow(1.0 - d.Uniform(), -1.0 / (m.tail_alpha - 1.0));
    return std::floor(std::min(x, m.cap));
  }
  return 1 + std::floor(std::exp(m.body_mu + m.body_sigma * d.Normal()));
}

int64_t Engagements(const Burst& b) {
  return b.total[kLikes] + b.total[kReposts] + b.total[kReplies] + b.total[kQuotes];
}

// Views arrive lognormally in time (Pfeffer et al.: the rate peaks 72 s after posting, half of a
// post's views come within about 80 minutes at the median): median kViewsMedian times the post's
// scale, shape sqrt(ln(kViewsMedian / 72)) so that the median post's rate peaks at 72 s. 10,000 s
// is fitted so that, with small posts' activity ending within hours, the median post has half of
// its 30-day views at 80 minutes (tests/unit/mock_engagement_test.cpp measures both).
constexpr double kViewsMedian = 10000;
const double kViewsSigma = std::sqrt(std::log(kViewsMedian / 72.0));

double ArrivalCdf(const NetworkModel& m, const Burst& b, int k, double t) {
  if (k == kViews) return 0.5 * std::erfc(-std::log(t / (kViewsMedian * b.scale)) / (kViewsSigma * std::sqrt(2.0)));
  return KernelCdf(t, m.s0[k] * b.scale, m.theta[k]);
}

double BurstShare(const NetworkModel& m, const Burst& b, int k, double t) {
  if (t <= 0) return 0;
  if (b.end_s <= 0) return ArrivalCdf(m, b, k, t);
  if (t >= b.end_s) return 1;
  return ArrivalCdf(m, b, k, t) / ArrivalCdf(m, b, k, b.end_s);
}

}  // namespace

double KernelCdf(double t, double s0, double theta) {
  if (t <= 0) return 0;
  if (t < s0) return theta / (1 + theta) * t / s0;
  return 1 - std::pow(t / s0, -theta) / (1 + theta);
}

Life DrawLife(Network network, uint64_t seed) {
  const NetworkModel& m = ModelOf(network);
  Draws d{Mix(seed ^ 0x656e6761ULL)};
  Life life;
  const double likes = Likes(m, d);
  life.first = DrawBurst(m, d, likes, 1.0);
  const double end_draw = d.Normal();
  if (static_cast<double>(Engagements(life.first)) < m.small_total) life.first.end_s = m.small_end_s * std::exp(m.end_sigma * end_draw);
  const double revives = d.Uniform();
  if (static_cast<double>(Engagements(life.first)) >= m.revival_min_total && revives < m.p_revival) {
    const double start = m.revival_from_s + d.Uniform() * (m.revival_to_s - m.revival_from_s);
    const double size = m.revival_size_min + d.Uniform() * (m.revival_size_max - m.revival_size_min);
    Burst r = DrawBurst(m, d, std::floor(likes * size + d.Uniform()), 1.0);
    r.start_s = start;
    r.end_s = m.revival_end_s;
    life.revival = r;
  }
  return life;
}

int64_t LifeCount(Network network, const Life& life, Kind kind, double age_seconds) {
  const NetworkModel& m = ModelOf(network);
  int64_t c = 0;
  for (const Burst* b : {&life.first, life.revival ? &*life.revival : nullptr}) {
    if (b == nullptr) continue;
    const double n = static_cast<double>(b->total[kind]);
    if (n == 0) continue;
    const double got = std::floor(n * BurstShare(m, *b, kind, age_seconds - b->start_s) + b->phase[kind]);
    c += static_cast<int64_t>(std::min(got, n));
  }
  return c;
}

double LifeEntryAge(Network network, const Life& life, Kind kind, int64_t count) {
  if (life.revival || kind == kViews) return -1;
  const NetworkModel& m = ModelOf(network);
  const Burst& b = life.first;
  const double n = static_cast<double>(b.total[kind]);
  if (static_cast<double>(count) >= n) return std::numeric_limits<double>::infinity();
  // floor(n * share + phase) > count  <=>  share >= y
  double y = (static_cast<double>(count) + 1 - b.phase[kind]) / n;
  if (y <= 0) return 0;
  if (b.end_s > 0) {
    if (y >= 1) return b.end_s;
    y *= ArrivalCdf(m, b, kind, b.end_s);
  }
  const double s0 = m.s0[kind] * b.scale, theta = m.theta[kind];
  if (y >= 1) return std::numeric_limits<double>::infinity();
  if (y < theta / (1 + theta)) return y * (1 + theta) / theta * s0;  // KernelCdf inverted, both pieces
  return s0 * std::pow((1 + theta) * (1 - y), -1 / theta);
}

PublicMetrics LifeAt(Network network, const Life& life, double age_seconds) {
  std::array<int64_t, kKinds> c{};
  for (int k = 0; k < kKinds; ++k) c[k] = LifeCount(network, life, static_cast<Kind>(k), age_seconds);
  PublicMetrics p;
  p.retweet_count = c[kReposts];
  p.reply_count = c[kReplies];
  p.like_count = c[kLikes];
  p.quote_count = c[kQuotes];
  p.bookmark_count = c[kBookmarks];
  p.impression_count = std::min(c[kViews], kInt32Max);  // the spec declares impression_count int32
  return p;
}

std::optional<Network> ParseNetwork(const std::string& name) {
  if (name == "x") return Network::kX;
  if (name == "bluesky") return Network::kBluesky;
  if (name == "mastodon") return Network::kMastodon;
  return std::nullopt;
}

std::optional<uint64_t> SeedOfKey(Network network, const std::string& key) {
  if (key.empty() || key.size() > 512) return std::nullopt;
  if (network == Network::kBluesky) {
    if (key.rfind("at://", 0) != 0) return std::nullopt;
    return BlueskySeed(key);
  }
  const size_t slash = key.rfind('/');
  const std::string digits = network == Network::kMastodon ? (slash == std::string::npos ? "" : key.substr(slash + 1)) : key;
  if (digits.empty() || digits.size() > 19 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const uint64_t id = std::stoull(digits);
  if (network == Network::kX) return id;
  if (slash == 0) return std::nullopt;
  return MastodonSeed(key.substr(0, slash), id);
}

namespace {
constexpr size_t kMaxFileBytes = size_t{1} << 30;  // a gigabyte of curves is ~20 million rows

[[noreturn]] void Refuse(size_t line, const std::string& why) {
  throw std::runtime_error("--engagement line " + std::to_string(line) + ": " + why);
}
}  // namespace

std::shared_ptr<const EngagementFile> EngagementFile::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("--engagement: cannot read " + path);
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size < 0 || static_cast<size_t>(size) > kMaxFileBytes)
    throw std::runtime_error("--engagement: " + path + " is larger than 1 GiB");
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), size);
  return Parse(text);
}

std::shared_ptr<const EngagementFile> EngagementFile::Parse(const std::string& text) {
  auto file = std::make_shared<EngagementFile>();
  std::istringstream in(text);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#' || (number == 1 && line.rfind("network,", 0) == 0)) continue;
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
    if (f.size() != 9) Refuse(number, "expected 9 fields (network,key,age_seconds,reposts,replies,likes,quotes,bookmarks,views), got " + std::to_string(f.size()));
    const std::optional<Network> network = ParseNetwork(f[0]);
    if (!network) Refuse(number, "network must be x, bluesky or mastodon");
    const std::optional<uint64_t> seed = SeedOfKey(*network, f[1]);
    if (!seed) Refuse(number, "key is not an X id, an at:// URI or host/status-id");
    std::array<int64_t, 7> v{};
    for (int i = 0; i < 7; ++i) {
      const std::string& s = f[2 + i];
      if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
        Refuse(number, "field " + std::to_string(3 + i) + " must be a non-negative integer");
      v[i] = std::stoll(s);
    }
    PublicMetrics m;
    m.retweet_count = v[1];
    m.reply_count = v[2];
    m.like_count = v[3];
    m.quote_count = v[4];
    m.bookmark_count = v[5];
    m.impression_count = std::min(v[6], kInt32Max);
    auto& points = file->curves_[{static_cast<int>(*network), *seed}];
    if (!points.empty()) {
      const PublicMetrics& p = points.back().m;
      if (v[0] <= points.back().age) Refuse(number, "ages of a post must increase");
      if (m.retweet_count < p.retweet_count || m.reply_count < p.reply_count || m.like_count < p.like_count ||
          m.quote_count < p.quote_count || m.bookmark_count < p.bookmark_count || m.impression_count < p.impression_count)
        Refuse(number, "a count decreases");
    }
    points.push_back({v[0], m});
  }
  return file;
}

std::optional<PublicMetrics> EngagementFile::At(Network network, uint64_t seed, int64_t age_seconds) const {
  const auto it = curves_.find({static_cast<int>(network), seed});
  if (it == curves_.end()) return std::nullopt;
  const auto& points = it->second;
  auto after = std::upper_bound(points.begin(), points.end(), age_seconds,
                                [](int64_t age, const Point& p) { return age < p.age; });
  if (after == points.begin()) return PublicMetrics{};
  return std::prev(after)->m;
}

PublicMetrics Engagement(const MockConfig& config, Network network, uint64_t seed, int64_t age_seconds) {
  if (config.engagement) {
    if (std::optional<PublicMetrics> m = config.engagement->At(network, seed, age_seconds)) return *m;
  }
  return LifeAt(network, DrawLife(network, seed), static_cast<double>(std::max<int64_t>(age_seconds, 0)));
}

}  // namespace tweetkeeper::mock
