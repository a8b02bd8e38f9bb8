#include "mock_api/engagement_events.hpp"

#include <algorithm>
#include <cmath>

#include "mock_api/mix.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kSecondUs = 1'000'000;
constexpr int64_t kHorizonS = 10'000'000'000LL;  // ~317 years: past it, no event
constexpr int64_t kUndoScan = 4096;              // slots looked at for the next undo before a lower bound

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

Kind KindOf(Act act) {
  switch (act) {
    case Act::kLike: return kLikes;
    case Act::kRepost: return kReposts;
    case Act::kReply: return kReplies;
    default: return kQuotes;
  }
}

// Unlikes and unreposts; replies and quotes deleted. No source gives these rates (README.md).
constexpr Undo kUndos[kCountedActs] = {
    {0.05, {10, 120, 1800, 6 * 3600}},   // likes
    {0.05, {15, 300, 3600, 12 * 3600}},  // reposts
    {0.02, {30, 600, 3600, 24 * 3600}},  // replies
    {0.02, {30, 600, 3600, 24 * 3600}},  // quotes
};

// Slot i's account (gen 0: its first, gen 1: the one that takes it after an undo).
uint64_t SlotHash(const EngagementCurve& c, Act act, int64_t i, int gen) {
  return Mix(Mix(c.seed() ^ (0x5bd1e9955bd1e995ULL * (static_cast<uint64_t>(act) + 1))) +
             ((static_cast<uint64_t>(i) << 1) | static_cast<uint64_t>(gen)));
}

// Which of the act's delays undoes slot i, or -1: not undone.
int UndoLevel(const EngagementCurve& c, Act act, int64_t i) {
  const Undo& u = kUndos[static_cast<int>(act)];
  const uint64_t h = Mix(SlotHash(c, act, i, 0) ^ 0x756e646fULL);
  if (static_cast<double>(h >> 11) * 0x1.0p-53 >= u.share) return -1;
  return static_cast<int>(Mix(h) & 3);
}

// When slot i's first record is made, in second s (never before the post's creation when the
// second allows it).
int64_t CreateTime(const EngagementCurve& c, Act act, int64_t i, int64_t s) {
  int64_t lo = std::max(s * kSecondUs, c.created_ms() * 1000 + 1);
  const int64_t hi = (s + 1) * kSecondUs;
  if (lo >= hi) lo = s * kSecondUs;
  return lo + static_cast<int64_t>(SlotHash(c, act, i, 0) % static_cast<uint64_t>(hi - lo));
}

StreamEvent Create(Act act, int64_t time_us, uint64_t actor) { return {time_us, act, true, actor, time_us, 0}; }

}  // namespace

const Undo& UndoOf(Act act) { return kUndos[static_cast<int>(act) % kCountedActs]; }

int64_t AgeAtSecond(int64_t created_ms, int64_t second) {
  return std::max<int64_t>(0, FloorDiv(second * 1000 - created_ms, 1000));
}

EngagementCurve::EngagementCurve(const MockConfig& config, uint64_t seed, int64_t created_ms)
    : config_(config), seed_(seed), created_ms_(created_ms), first_second_(FloorDiv(created_ms, 1000)) {
  from_file_ = config.engagement && config.engagement->At(Network::kBluesky, seed, 0).has_value();
  if (!from_file_) life_ = DrawLife(Network::kBluesky, seed);
  for (int a = 0; a < kCountedActs; ++a) final_[a] = CountAtAge(static_cast<Act>(a), kHorizonS);
}

int64_t EngagementCurve::CountAtAge(Act act, int64_t age) const {
  if (!from_file_) return LifeCount(Network::kBluesky, life_, KindOf(act), static_cast<double>(age));
  // The same curve Engagement() answers from (it is the file's, when the file has the post).
  const PublicMetrics m = *config_.engagement->At(Network::kBluesky, seed_, age);
  switch (act) {
    case Act::kLike: return m.like_count;
    case Act::kRepost: return m.retweet_count;
    case Act::kReply: return m.reply_count;
    default: return m.quote_count;
  }
}

int64_t EngagementCurve::CountAt(Act act, int64_t second) const {
  if (second < first_second_) return 0;
  return CountAtAge(act, AgeAtSecond(created_ms_, second));
}

int64_t EngagementCurve::EntrySecond(Act act, int64_t i) const {
  if (i >= Final(act)) return kNever;
  if (CountAt(act, first_second_) > i) return first_second_;
  // AgeAtSecond(D) = D - ceil(created / 1000) once past the first second.
  const int64_t base = -FloorDiv(-created_ms_, 1000);
  const int64_t last = base + kHorizonS;  // CountAt(last) == Final > i
  int64_t lo = first_second_, hi = last;  // CountAt(lo) <= i < CountAt(hi)
  const double age = from_file_ ? -1 : LifeEntryAge(Network::kBluesky, life_, KindOf(act), i);
  if (age >= 0 && age < static_cast<double>(kHorizonS)) {
    // The closed form's guess, then galloping out from it to a bracket.
    const int64_t guess = std::clamp<int64_t>(base + static_cast<int64_t>(std::ceil(age)), lo + 1, hi);
    if (CountAt(act, guess) > i) {
      hi = guess;
      for (int64_t step = 1;; step *= 2) {
        const int64_t at = std::max(lo, hi - step);
        if (CountAt(act, at) <= i) {
          lo = at;
          break;
        }
        hi = at;
      }
    } else {
      lo = guess;
      for (int64_t step = 1;; step *= 2) {
        const int64_t at = std::min(hi, lo + step);
        if (CountAt(act, at) > i) {
          hi = at;
          break;
        }
        lo = at;
      }
    }
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (CountAt(act, mid) > i ? hi : lo) = mid;
  }
  return hi;
}

void PostEventsIn(const EngagementCurve& c, int64_t s, std::vector<StreamEvent>* out) {
  for (int a = 0; a < kCountedActs; ++a) {
    const Act act = static_cast<Act>(a);
    // Slots entering the count at s + 1: their creates are in s.
    for (int64_t i = c.CountAt(act, s), end = c.CountAt(act, s + 1); i < end; ++i)
      out->push_back(Create(act, CreateTime(c, act, i, s), SlotHash(c, act, i, 0)));
    // Slots created `delay` before, undone now: the delete, and another account's create.
    const Undo& u = kUndos[a];
    for (int level = 0; level < 4; ++level) {
      const int64_t made = s - u.delay_s[level];
      for (int64_t i = c.CountAt(act, made), end = c.CountAt(act, made + 1); i < end; ++i) {
        if (UndoLevel(c, act, i) != level) continue;
        const int64_t created = CreateTime(c, act, i, made);
        out->push_back({created + u.delay_s[level] * kSecondUs, act, false, SlotHash(c, act, i, 0), created, 0});
        const uint64_t next = SlotHash(c, act, i, 1);
        out->push_back(Create(act, s * kSecondUs + static_cast<int64_t>(next % kSecondUs), next));
      }
    }
  }
}

int64_t NextPostEventSecond(const EngagementCurve& c, int64_t s) {
  int64_t best = kNever;
  for (int a = 0; a < kCountedActs; ++a) {
    const Act act = static_cast<Act>(a);
    const int64_t final_count = c.Final(act);
    if (const int64_t i = c.CountAt(act, s); i < final_count) best = std::min(best, c.EntrySecond(act, i) - 1);
    const Undo& u = kUndos[a];
    for (int level = 0; level < 4; ++level) {
      if (best <= s) return best;  // nothing comes sooner
      const int64_t first = c.CountAt(act, s - u.delay_s[level]);
      const int64_t end = std::min(final_count, first + kUndoScan);
      int64_t i = first;
      while (i < end && UndoLevel(c, act, i) != level) ++i;
      if (i < final_count) best = std::min(best, c.EntrySecond(act, i) - 1 + u.delay_s[level]);
    }
  }
  return best;
}

std::array<int64_t, kCountedActs> NetCountsAt(const EngagementCurve& c, int64_t at_us) {
  const int64_t s = FloorDiv(at_us, kSecondUs);
  std::array<int64_t, kCountedActs> n{};
  for (int a = 0; a < kCountedActs; ++a) n[a] = c.CountAt(static_cast<Act>(a), s);
  std::vector<StreamEvent> events;
  PostEventsIn(c, s, &events);
  for (const StreamEvent& e : events)
    if (e.time_us < at_us) n[static_cast<int>(e.act)] += e.create ? 1 : -1;
  return n;
}

void BackgroundEventsIn(int64_t per_second, int64_t s, std::vector<StreamEvent>* out) {
  const uint64_t base = Mix(static_cast<uint64_t>(s) ^ 0x62676e64ULL);
  for (int64_t j = 0; j < per_second; ++j) {
    const int64_t from = s * kSecondUs + j * kSecondUs / per_second;
    const int64_t to = s * kSecondUs + (j + 1) * kSecondUs / per_second;
    const uint64_t h = Mix(base + static_cast<uint64_t>(j));
    StreamEvent e;
    e.time_us = from + (to > from ? static_cast<int64_t>(h % static_cast<uint64_t>(to - from)) : 0);
    e.actor = Mix(h ^ 2);
    e.subject = Mix(h ^ 1) | 1;
    e.record_us = e.time_us;
    const uint64_t what = Mix(h ^ 3) % 100, sub = Mix(h ^ 4) % 100;
    // Likes are most of the traffic, then posts (some replies, some quotes) and reposts; a tenth
    // are deletes of records made earlier (up to a day).
    if (what < 55) {
      e.act = Act::kLike;
    } else if (what < 67) {
      e.act = Act::kRepost;
    } else if (what < 90) {
      e.act = sub < 35 ? Act::kReply : sub < 50 ? Act::kQuote : Act::kPost;
    } else {
      e.create = false;
      e.act = sub < 60 ? Act::kLike : sub < 75 ? Act::kRepost : Act::kPost;
      e.record_us = e.time_us - 1 - static_cast<int64_t>(Mix(h ^ 5) % (86'400ULL * kSecondUs));
    }
    out->push_back(e);
  }
}

}  // namespace tweetkeeper::mock
