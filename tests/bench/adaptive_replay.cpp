// make bench-adaptive: whole 30-day lives of many posts of every network replayed under the age
// table and under the adaptive policy (extension/adaptive.cpp, the function the completion calls),
// against the mock's truth (tests/mock_api/engagement.cpp, or --engagement FILE's curves). No
// waiting: the replay steps each post's clock from one read to the next.
//
// Per network and policy it prints: reads, requests (the reads of each minute in batches of the
// network's size: X 100, Bluesky 25, Mastodon 20), X billed reads (distinct post-UTC-days), the
// curve error at 15 min, 1 h, 6 h, 24 h, 7 d and 30 d per count kind (sum over posts of
// |interpolated - true| over the sum of true counts; interpolated as metrics_at does, linearly
// between observations from 0 at creation, and past a post's last observation its last value), the
// share of posts whose 30-day counts are exact, and the share of late bursts (at least 20% of a
// post's final likes + reposts + replies + quotes after its second day) read within 1 and 3 days
// of their start (the first age past two days by which a tenth of that late part came).
//
//   --posts N        posts per network (default 100000)
//   --engagement F   the curves of F's posts (network,key,...: tests/mock_api/README.md) instead
//   --json FILE      also writes the numbers as JSON
//   --decide         instead: reads "post created_us at_us reposts replies likes quotes bookmarks views"
//                    per line (a post's reads in time order, -1 for a count not reported), prints
//                    "post at_us due_us" (or "post at_us done") per read: what the completion
//                    decides (tests/integration/adaptive.sh compares the two)
//   --age-table T    the age table as max_age=delay seconds, comma-separated (default: the
//                    extension's default table)
//   --share S, --age-share A, --max-gap-days D, --stop-quiet-days Q, --keep-engaged K,
//                    --no-same-day: the adaptive
//                    policy's settings other than its defaults (to explore; the bench uses none)
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adaptive.hpp"
#include "mock_api/engagement.hpp"
#include "mock_api/mix.hpp"
#include "policy.hpp"

namespace {

using tweetkeeper::AdaptiveSettings;
using tweetkeeper::AdaptiveState;
using tweetkeeper::AgePolicy;
using tweetkeeper::Counts;
using tweetkeeper::Decision;
using tweetkeeper::DecideNext;
using tweetkeeper::Observation;
using tweetkeeper::PolicyRow;
using namespace tweetkeeper::mock;

constexpr int64_t kSec = 1000000;
constexpr int64_t kMin = 60 * kSec, kHour = 3600 * kSec, kDay = 86400 * kSec;
constexpr int kNKinds = 6;
const char* const kKindNames[kNKinds] = {"reposts", "replies", "likes", "quotes", "bookmarks", "views"};
const int64_t kAges[] = {15 * kMin, kHour, 6 * kHour, kDay, 7 * kDay, 30 * kDay};
const char* const kAgeNames[] = {"15m", "1h", "6h", "24h", "7d", "30d"};
constexpr int kNAges = 6;

std::optional<int64_t> FloorAt(const AgePolicy& table, int64_t age) {
  if (auto row = table.ForAge(age)) return row->delay_usec;
  return std::nullopt;
}

// The extension's default age table (sql/schema/10_policy.sql).
AgePolicy DefaultTable() {
  return AgePolicy({{18 * kMin, 2 * kMin, 0}, {60 * kMin, 5 * kMin, 1}, {kDay, 30 * kMin, 2},
                    {7 * kDay, 6 * kHour, 3}, {30 * kDay, kDay, 4}});
}

// "180=5,900=15" (seconds): max_age=delay rows.
std::optional<AgePolicy> ParseTable(const std::string& text) {
  std::vector<PolicyRow> rows;
  size_t from = 0;
  while (from < text.size()) {
    const size_t comma = std::min(text.find(',', from), text.size());
    const std::string row = text.substr(from, comma - from);
    const size_t eq = row.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == row.size() ||
        row.find_first_not_of("0123456789=") != std::string::npos)
      return std::nullopt;
    rows.push_back({std::stoll(row.substr(0, eq)) * kSec, std::stoll(row.substr(eq + 1)) * kSec, rows.size()});
    from = comma + 1;
  }
  try {
    return AgePolicy(std::move(rows));
  } catch (const tweetkeeper::PolicyError&) {
    return std::nullopt;
  }
}

// One read of a post under the adaptive policy, as the completion decides it: from the reads
// before (`before` counts at `before_age`; none when before_age is 0), with the state carried
// through the row's packing as the row keeps it. Both the replay and --decide call this.
Decision Step(const AgePolicy& table, const AdaptiveSettings& s, int64_t created, int64_t age, int64_t before_age,
              const Counts& before, const Counts& now, bool x_billing, AdaptiveState& state) {
  Observation obs;
  obs.now_usec = created + age;
  obs.age_usec = age;
  obs.since_usec = age - before_age;
  obs.before = before;
  obs.now = now;
  obs.floor_usec = FloorAt(table, age);
  obs.x_billing = x_billing;
  const Decision d = DecideNext(obs, state, s);
  state = tweetkeeper::UnpackState(tweetkeeper::PackState(d.state));
  return d;
}

// --decide: the completion's decisions for reads given on stdin (see the top of this file).
int Decide(const AgePolicy& table, const AdaptiveSettings& s) {
  long long post = 0, created = 0, at = 0;
  long long last_post = 0, last_at = 0;
  Counts c{}, before{};
  AdaptiveState state;
  bool first = true;
  while (std::cin >> post >> created >> at >> c[0] >> c[1] >> c[2] >> c[3] >> c[4] >> c[5]) {
    if (first || post != last_post) {
      first = true;
      state = AdaptiveState{};
      before = Counts{};
    }
    const Decision d = Step(table, s, created, at - created, first ? 0 : last_at - created, before, c, post > 0, state);
    if (d.delay_usec) {
      std::printf("%lld %lld %lld\n", post, at, static_cast<long long>(at + *d.delay_usec));
    } else {
      std::printf("%lld %lld done\n", post, at);
    }
    before = c;
    last_post = post;
    last_at = at;
    first = false;
  }
  if (!std::cin.eof()) {
    std::cerr << "adaptive_replay --decide: a line is not post created_us at_us and six counts\n";
    return 2;
  }
  return 0;
}

Counts CountsOf(const PublicMetrics& m) {
  return {m.retweet_count, m.reply_count, m.like_count, m.quote_count, m.bookmark_count, m.impression_count};
}

int64_t Engaged(const Counts& c) { return c[0] + c[1] + c[2] + c[3]; }

// A post: how to read its truth at any age.
struct Post {
  Network network;
  uint64_t seed;
  int64_t created_usec;  // Unix time
  Life life;             // (the model's; unused with a file)
};

struct Truth {
  std::shared_ptr<const EngagementFile> file;
  Counts At(const Post& p, int64_t age) const {
    if (file) {
      if (auto m = file->At(p.network, p.seed, age / kSec)) return CountsOf(*m);
      return {};
    }
    return CountsOf(LifeAt(p.network, p.life, static_cast<double>(age) / kSec));
  }
};

struct Read {
  int64_t age;
  Counts c;
};

// Per network and policy, what it spent and how well it knew the curves.
struct Tally {
  int64_t posts = 0, reads = 0, billed = 0;
  std::vector<int64_t> per_minute;  // reads per minute since the first post's creation
  double abs_err[kNAges][kNKinds] = {};
  double truth[kNAges][kNKinds] = {};
  int64_t exact_30d = 0, bursts = 0, seen_1d = 0, seen_3d = 0;
  std::map<std::string, int64_t> reasons;
  int64_t Requests(int batch) const {
    int64_t r = 0;
    for (int64_t n : per_minute) r += (n + batch - 1) / batch;
    return r;
  }
};

int BatchOf(Network n) { return n == Network::kX ? 100 : n == Network::kBluesky ? 25 : 20; }

// The value interpolated at `age` from the reads (0 at creation), as metrics_at does; past the
// last read, its value.
double Interpolated(const std::vector<Read>& reads, int64_t age, int k) {
  int64_t prev_age = 0;
  double prev = 0;
  for (const Read& r : reads) {
    if (r.age >= age) {
      if (r.age == prev_age) return static_cast<double>(r.c[k]);
      return prev + (static_cast<double>(r.c[k]) - prev) * static_cast<double>(age - prev_age) / static_cast<double>(r.age - prev_age);
    }
    prev_age = r.age;
    prev = static_cast<double>(r.c[k]);
  }
  return prev;
}

void Score(const Post& p, const Truth& truth, const std::vector<Read>& reads, int64_t origin, Tally& t) {
  ++t.posts;
  t.reads += static_cast<int64_t>(reads.size());
  int64_t last_day = INT64_MIN;
  for (const Read& r : reads) {
    const int64_t at = p.created_usec + r.age;
    const int64_t day = at / kDay;
    if (p.network == Network::kX && day != last_day) ++t.billed, last_day = day;
    const size_t minute = static_cast<size_t>((at - origin) / kMin);
    if (t.per_minute.size() <= minute) t.per_minute.resize(minute + 1, 0);
    ++t.per_minute[minute];
  }
  bool exact = true;
  for (int a = 0; a < kNAges; ++a) {
    const Counts c = truth.At(p, kAges[a]);
    for (int k = 0; k < kNKinds; ++k) {
      const double got = Interpolated(reads, kAges[a], k);
      t.abs_err[a][k] += std::fabs(got - static_cast<double>(c[k]));
      t.truth[a][k] += static_cast<double>(c[k]);
      if (a == kNAges - 1 && got != static_cast<double>(c[k])) exact = false;
    }
  }
  t.exact_30d += exact;
  // A late burst: at least 20% of the final engagement after day 2.
  const int64_t final_e = Engaged(truth.At(p, 30 * kDay)), day2 = Engaged(truth.At(p, 2 * kDay));
  if (final_e > 0 && final_e - day2 >= 0.2 * static_cast<double>(final_e)) {
    ++t.bursts;
    int64_t start = 2 * kDay;
    while (start < 30 * kDay && Engaged(truth.At(p, start)) - day2 < 0.1 * static_cast<double>(final_e - day2)) start += 10 * kMin;
    bool s1 = false, s3 = false;
    for (const Read& r : reads) {
      if (r.age >= start && r.age <= start + kDay) s1 = true;
      if (r.age >= start && r.age <= start + 3 * kDay) s3 = true;
    }
    t.seen_1d += s1;
    t.seen_3d += s3;
  }
}

std::vector<Read> ReplayAgeTable(const Post& p, const Truth& truth, const AgePolicy& table) {
  std::vector<Read> reads;
  int64_t age = *FloorAt(table, 0);  // first_delay(): the youngest bucket's
  while (age <= 31 * kDay) {
    reads.push_back({age, truth.At(p, age)});
    const auto next = FloorAt(table, age);
    if (!next) break;
    age += *next;
  }
  return reads;
}

std::vector<Read> ReplayAdaptive(const Post& p, const Truth& truth, const AgePolicy& table, const AdaptiveSettings& s,
                                 Tally& t) {
  std::vector<Read> reads;
  int64_t age = *FloorAt(table, 0);
  AdaptiveState state;
  Counts before{};
  int64_t before_age = 0;
  while (age <= 31 * kDay) {
    const Counts now = truth.At(p, age);
    reads.push_back({age, now});
    const Decision d = Step(table, s, p.created_usec, age, before_age, before, now, p.network == Network::kX, state);
    ++t.reasons[std::string(tweetkeeper::DueReasonName(d.state.reason))];
    if (!d.delay_usec) break;
    before = now;
    before_age = age;
    age += *d.delay_usec;
  }
  return reads;
}

void Print(FILE* out, const char* network, const char* policy, const Tally& t, int batch) {
  std::fprintf(out, "%-8s %-9s posts %" PRId64 " reads %" PRId64 " (%.1f a post) requests %" PRId64, network, policy,
               t.posts, t.reads, static_cast<double>(t.reads) / static_cast<double>(t.posts), t.Requests(batch));
  if (t.billed > 0) std::fprintf(out, " billed %" PRId64 " (%.2f a post)", t.billed, static_cast<double>(t.billed) / static_cast<double>(t.posts));
  std::fprintf(out, " exact-30d %.4f late-bursts %" PRId64 " seen-1d %.3f seen-3d %.3f\n",
               static_cast<double>(t.exact_30d) / static_cast<double>(t.posts), t.bursts,
               t.bursts ? static_cast<double>(t.seen_1d) / static_cast<double>(t.bursts) : 0.0,
               t.bursts ? static_cast<double>(t.seen_3d) / static_cast<double>(t.bursts) : 0.0);
  for (int k = 0; k < kNKinds; ++k) {
    if (t.truth[kNAges - 1][k] == 0) continue;
    std::fprintf(out, "%-8s %-9s   error %-9s", network, policy, kKindNames[k]);
    for (int a = 0; a < kNAges; ++a)
      std::fprintf(out, " %s %.4f", kAgeNames[a], t.truth[a][k] > 0 ? t.abs_err[a][k] / t.truth[a][k] : 0.0);
    std::fprintf(out, "\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n_posts = 100000;
  bool decide = false;
  std::string table_text;
  AdaptiveSettings settings;  // the extension's defaults unless a flag below says otherwise
  std::string file_path, json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--posts" && i + 1 < argc) {
      n_posts = std::stoll(argv[++i]);
    } else if (arg == "--engagement" && i + 1 < argc) {
      file_path = argv[++i];
    } else if (arg == "--share" && i + 1 < argc) {
      settings.share = std::stod(argv[++i]);
    } else if (arg == "--age-share" && i + 1 < argc) {
      settings.age_share = std::stod(argv[++i]);
    } else if (arg == "--max-gap-days" && i + 1 < argc) {
      settings.max_gap_usec = static_cast<int64_t>(std::stod(argv[++i]) * kDay);
    } else if (arg == "--stop-quiet-days" && i + 1 < argc) {
      settings.stop_quiet_usec = static_cast<int64_t>(std::stod(argv[++i]) * kDay);
    } else if (arg == "--decide") {
      decide = true;
    } else if (arg == "--age-table" && i + 1 < argc) {
      table_text = argv[++i];
    } else if (arg == "--keep-engaged" && i + 1 < argc) {
      settings.keep_engaged = std::stoll(argv[++i]);
    } else if (arg == "--no-same-day") {
      settings.same_day = false;
    } else if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::cerr << "adaptive_replay: unknown argument " << arg << " (--posts N, --engagement FILE, --json FILE)\n";
      return 2;
    }
  }
  if (n_posts <= 0) {
    std::cerr << "adaptive_replay: --posts must be positive\n";
    return 2;
  }
  Truth truth;
  if (!file_path.empty()) {
    try {
      truth.file = EngagementFile::Load(file_path);
    } catch (const std::exception& e) {
      std::cerr << "adaptive_replay: " << e.what() << "\n";
      return 2;
    }
  }
  std::optional<AgePolicy> parsed = table_text.empty() ? std::optional<AgePolicy>(DefaultTable()) : ParseTable(table_text);
  if (!parsed) {
    std::cerr << "adaptive_replay: --age-table must be max_age=delay seconds, comma-separated, e.g. 180=5,900=15\n";
    return 2;
  }
  const AgePolicy table = *parsed;
  if (decide) return Decide(table, settings);
  // Posts made over one day from 2026-01-01T00:00Z, one every 86400/n seconds per network.
  const int64_t origin = INT64_C(1767225600) * kSec;
  std::FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "w");
  if (json) std::fprintf(json, "{\"posts_per_network\":%" PRId64 ",\"file\":\"%s\",\"networks\":{", n_posts, file_path.c_str());
  bool first_json = true;
  for (Network n : {Network::kX, Network::kBluesky, Network::kMastodon}) {
    const char* name = n == Network::kX ? "x" : n == Network::kBluesky ? "bluesky" : "mastodon";
    Tally age_table, adaptive;
    for (int64_t i = 0; i < n_posts; ++i) {
      Post p;
      p.network = n;
      p.created_usec = origin + i * kDay / n_posts;
      p.seed = truth.file ? 0 : Mix(static_cast<uint64_t>(i) ^ (static_cast<uint64_t>(n) << 40));
      if (truth.file) {
        // The file's posts are named by their keys: the replay reads the n-th post the file
        // gives for this network (FileKey in make bench-adaptive's generator: "<network>-<i>").
        const std::string key = n == Network::kX ? std::to_string(1000000 + i)
                                : n == Network::kBluesky ? "at://did:plc:bench/app.bsky.feed.post/" + std::to_string(i)
                                                         : "bench.example/" + std::to_string(i);
        p.seed = *SeedOfKey(n, key);
      } else {
        p.life = DrawLife(n, p.seed);
      }
      Score(p, truth, ReplayAgeTable(p, truth, table), origin, age_table);
      Score(p, truth, ReplayAdaptive(p, truth, table, settings, adaptive), origin, adaptive);
    }
    Print(stdout, name, "age-table", age_table, BatchOf(n));
    Print(stdout, name, "adaptive", adaptive, BatchOf(n));
    std::printf("%-8s adaptive  why due:", name);
    for (const auto& [reason, count] : adaptive.reasons) std::printf(" %s %" PRId64 ";", reason.c_str(), count);
    std::printf("\n");
    if (json) {
      std::fprintf(json, "%s\"%s\":{", first_json ? "" : ",", name);
      first_json = false;
      bool first_policy = true;
      for (const auto& [policy, t] : {std::pair<const char*, const Tally*>{"age_table", &age_table}, {"adaptive", &adaptive}}) {
        std::fprintf(json, "%s\"%s\":{\"reads\":%" PRId64 ",\"requests\":%" PRId64 ",\"billed\":%" PRId64
                     ",\"exact_30d\":%.6f,\"late_bursts\":%" PRId64 ",\"seen_1d\":%" PRId64 ",\"seen_3d\":%" PRId64 ",\"error\":{",
                     first_policy ? "" : ",", policy, t->reads, t->Requests(BatchOf(n)), t->billed,
                     static_cast<double>(t->exact_30d) / static_cast<double>(t->posts), t->bursts, t->seen_1d, t->seen_3d);
        first_policy = false;
        for (int k = 0; k < kNKinds; ++k) {
          std::fprintf(json, "%s\"%s\":[", k ? "," : "", kKindNames[k]);
          for (int a = 0; a < kNAges; ++a)
            std::fprintf(json, "%s%.6f", a ? "," : "", t->truth[a][k] > 0 ? t->abs_err[a][k] / t->truth[a][k] : 0.0);
          std::fprintf(json, "]");
        }
        std::fprintf(json, "}}");
      }
      std::fprintf(json, "}");
    }
  }
  if (json) {
    std::fprintf(json, "}}\n");
    std::fclose(json);
  }
  return 0;
}
