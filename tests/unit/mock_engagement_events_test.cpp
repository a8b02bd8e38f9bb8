// The engagement events the mock's Jetstream streams (engagement_events.hpp): enumerated second by
// second, their net counts at every whole second are the counts getPosts answers then; the next
// event after a moment is where enumeration finds it; undos delete a record made earlier by the
// same account; everything is the same on every run. And the registry of the posts streamed
// (jetstream_posts.hpp) with its routes.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/engagement.hpp"
#include "mock_api/engagement_events.hpp"
#include "mock_api/jetstream_posts.hpp"
#include "mock_api/mock_api.hpp"
#include "mock_test_config.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kBaseMs = 1'780'000'000'123LL;  // a creation time not on a whole second

// Seeds whose lives have at least `likes` likes in all (and, with `revival`, a second burst).
std::vector<uint64_t> Seeds(int64_t likes, bool revival, size_t n) {
  std::vector<uint64_t> out;
  for (uint64_t s = 1; out.size() < n && s < 2'000'000; ++s) {
    const Life life = DrawLife(Network::kBluesky, s * 0x9e3779b97f4a7c15ULL);
    if (life.first.total[kLikes] >= likes && life.revival.has_value() == revival) out.push_back(s * 0x9e3779b97f4a7c15ULL);
  }
  return out;
}

// The post's events of `seconds` seconds from `from`.
std::vector<StreamEvent> EventsOf(const EngagementCurve& c, int64_t from, int64_t seconds) {
  std::vector<StreamEvent> all;
  for (int64_t s = from; s < from + seconds; ++s) PostEventsIn(c, s, &all);
  return all;
}

// Every event of seconds [from, to), second by second, checking at each whole second that the net
// counts so far are CountAt's and getPosts' function's (Engagement at AgeAtSecond).
std::vector<StreamEvent> Enumerate(const EngagementCurve& c, const MockConfig& config, int64_t from, int64_t to) {
  std::vector<StreamEvent> all;
  std::array<int64_t, kCountedActs> net{};
  for (int a = 0; a < kCountedActs; ++a) net[a] = c.CountAt(static_cast<Act>(a), from);
  for (int64_t s = from; s < to; ++s) {
    std::vector<StreamEvent> events;
    PostEventsIn(c, s, &events);
    for (const StreamEvent& e : events) {
      EXPECT_GE(e.time_us, s * 1'000'000);
      EXPECT_LT(e.time_us, (s + 1) * 1'000'000);
      EXPECT_LE(e.record_us, e.time_us);
      net[static_cast<int>(e.act)] += e.create ? 1 : -1;
    }
    all.insert(all.end(), events.begin(), events.end());
    if ((s + 1) * 1000 <= c.created_ms() - 1000) continue;  // getPosts shows no post before it was made
    const PublicMetrics m = Engagement(config, Network::kBluesky, c.seed(), AgeAtSecond(c.created_ms(), s + 1));
    const int64_t want[kCountedActs] = {m.like_count, m.retweet_count, m.reply_count, m.quote_count};
    for (int a = 0; a < kCountedActs; ++a) {
      if (net[a] != want[a] || c.CountAt(static_cast<Act>(a), s + 1) != want[a]) {
        ADD_FAILURE() << "seed " << c.seed() << " act " << a << " at second " << s + 1 << ": net " << net[a]
                      << ", CountAt " << c.CountAt(static_cast<Act>(a), s + 1) << ", getPosts " << want[a];
        return all;
      }
    }
  }
  return all;
}

TEST(MockEngagementEvents, NetCountsAtEveryWholeSecondAreGetPostsCounts) {
  const MockConfig config = NoFates();
  const int64_t first = kBaseMs / 1000 - 2;
  size_t events = 0;
  for (uint64_t seed : Seeds(200, false, 6)) events += Enumerate(EngagementCurve(config, seed, kBaseMs), config, first, first + 3 * 3600).size();
  for (uint64_t seed : Seeds(1, false, 10)) events += Enumerate(EngagementCurve(config, seed, kBaseMs), config, first, first + 3600).size();
  EXPECT_GT(events, 1000u);
}

TEST(MockEngagementEvents, ARevivalStreamsToo) {
  const MockConfig config = NoFates();
  for (uint64_t seed : Seeds(100, true, 2)) {
    const EngagementCurve c(config, seed, kBaseMs);
    const Life life = DrawLife(Network::kBluesky, seed);
    const int64_t start = kBaseMs / 1000 + static_cast<int64_t>(life.revival->start_s);
    Enumerate(c, config, start - 600, start + 1800);
  }
}

TEST(MockEngagementEvents, FileCurvesStreamAsGetPostsAnswersThem) {
  MockConfig config = NoFates();
  const std::string uri = "at://did:plc:abcdefghijklmnopqrstuvwx/app.bsky.feed.post/3kabcdefghij2";
  config.engagement = EngagementFile::Parse("bluesky," + uri + ",0,0,0,1,0,0,0\nbluesky," + uri + ",5,2,1,7,1,0,0\nbluesky," + uri +
                                            ",60,3,4,40,2,0,0\n");
  const EngagementCurve c(config, BlueskySeed(uri), kBaseMs);
  EXPECT_EQ(c.Final(Act::kLike), 40);
  const std::vector<StreamEvent> all = Enumerate(c, config, kBaseMs / 1000 - 2, kBaseMs / 1000 + 7200);
  EXPECT_GE(all.size(), 40u + 3 + 4 + 2);
}

TEST(MockEngagementEvents, TheNextEventSecondIsWhereEnumerationFindsIt) {
  const MockConfig config = NoFates();
  std::vector<uint64_t> seeds = Seeds(500, false, 2);
  for (uint64_t s : Seeds(3, false, 3)) seeds.push_back(s);
  for (uint64_t seed : seeds) {
    const EngagementCurve c(config, seed, kBaseMs);
    const int64_t from = kBaseMs / 1000 - 2, to = from + 2 * 3600;
    std::vector<int64_t> busy;  // seconds with events, in order
    for (int64_t s = from; s < to; ++s) {
      std::vector<StreamEvent> events;
      PostEventsIn(c, s, &events);
      if (!events.empty()) busy.push_back(s);
    }
    ASSERT_FALSE(busy.empty());
    // Walking by NextPostEventSecond visits every busy second, and none is skipped.
    std::vector<int64_t> walked;
    for (int64_t s = NextPostEventSecond(c, from); s < to; s = NextPostEventSecond(c, s + 1)) {
      std::vector<StreamEvent> events;
      PostEventsIn(c, s, &events);
      if (!events.empty()) walked.push_back(s);
    }
    EXPECT_EQ(walked, busy) << "seed " << seed;
    for (int64_t s : {from, from + 100, from + 1000, to - 1}) {
      const auto next = std::lower_bound(busy.begin(), busy.end(), s);
      if (next != busy.end()) {
        EXPECT_LE(NextPostEventSecond(c, s), *next);
      }
    }
  }
}

// A post of 10^5 likes and more, ten days on: its events still net to getPosts' counts, and the
// walk by NextPostEventSecond finds every second that has one.
TEST(MockEngagementEvents, AViralPostTenDaysOn) {
  const MockConfig config = NoFates();
  const std::vector<uint64_t> seeds = Seeds(100'000, false, 1);
  ASSERT_EQ(seeds.size(), 1u);
  const EngagementCurve c(config, seeds[0], kBaseMs);
  const int64_t from = kBaseMs / 1000 + 10 * 86'400;
  ASSERT_GT(c.CountAt(Act::kLike, from), 50'000);
  const std::vector<StreamEvent> all = Enumerate(c, config, from, from + 600);
  EXPECT_GT(all.size(), 10u);
  std::set<int64_t> busy, walked;
  for (const StreamEvent& e : all) busy.insert(e.time_us / 1'000'000);
  for (int64_t s = NextPostEventSecond(c, from); s < from + 600; s = NextPostEventSecond(c, s + 1)) {
    std::vector<StreamEvent> events;
    PostEventsIn(c, s, &events);
    if (!events.empty()) walked.insert(s);
  }
  EXPECT_EQ(walked, busy);
}

// The closed form that spares the bisection its steps is right to within a second, for big posts
// and for small ones (whose activity ends within hours).
TEST(MockEngagementEvents, TheInvertedKernelGuessesTheEntryAge) {
  int checked = 0;
  std::vector<uint64_t> seeds = Seeds(300, false, 5);
  for (uint64_t s : Seeds(3, false, 40)) seeds.push_back(s);
  for (uint64_t seed : seeds) {
    const Life life = DrawLife(Network::kBluesky, seed);
    for (Kind kind : {kLikes, kReposts, kReplies, kQuotes}) {
      const int64_t n = life.first.total[kind];
      for (int64_t i : {int64_t{0}, n / 3, n / 2, n * 9 / 10}) {
        if (i >= n) continue;
        const double guess = LifeEntryAge(Network::kBluesky, life, kind, i);
        if (!std::isfinite(guess) || guess > 1e9) continue;  // beyond any horizon a stream reaches
        const int64_t age = static_cast<int64_t>(std::ceil(guess));
        EXPECT_GT(LifeCount(Network::kBluesky, life, kind, static_cast<double>(age + 1)), i) << seed << " " << kind << " " << i;
        if (age >= 2) {
          EXPECT_LE(LifeCount(Network::kBluesky, life, kind, static_cast<double>(age - 2)), i) << seed << " " << kind << " " << i;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(MockEngagementEvents, NetCountsAtAnyMicrosecondCountTheEventsBefore) {
  const MockConfig config = NoFates();
  const EngagementCurve c(config, Seeds(300, false, 1)[0], kBaseMs);
  const int64_t from = kBaseMs / 1000 - 1;
  const std::vector<StreamEvent> all = EventsOf(c, from, 1200);
  for (int64_t at = from * 1'000'000; at < (from + 1200) * 1'000'000; at += 7'777'777) {
    std::array<int64_t, kCountedActs> want{};
    for (const StreamEvent& e : all)
      if (e.time_us < at) want[static_cast<int>(e.act)] += e.create ? 1 : -1;
    EXPECT_EQ(NetCountsAt(c, at), want) << at;
  }
}

TEST(MockEngagementEvents, UndosDeleteARecordTheSameAccountMadeEarlier) {
  const MockConfig config = NoFates();
  const EngagementCurve c(config, Seeds(3000, false, 1)[0], kBaseMs);
  const std::vector<StreamEvent> all = EventsOf(c, kBaseMs / 1000 - 1, 8 * 3600);
  std::map<std::pair<uint64_t, int64_t>, StreamEvent> made;  // (actor, record time)
  std::set<uint64_t> actors;
  std::map<int, int64_t> deletes, creates;
  for (const StreamEvent& e : all) {
    if (e.create) {
      EXPECT_TRUE(actors.insert(e.actor).second) << "an account engages once";
      made[{e.actor, e.record_us}] = e;
      ++creates[static_cast<int>(e.act)];
    }
  }
  for (const StreamEvent& e : all) {
    if (e.create) continue;
    ++deletes[static_cast<int>(e.act)];
    const auto it = made.find({e.actor, e.record_us});
    ASSERT_NE(it, made.end()) << "a delete of a record never made";
    EXPECT_EQ(it->second.act, e.act);
    EXPECT_LT(it->second.time_us, e.time_us);
    const int64_t delay = e.time_us - it->second.time_us;
    const auto& d = UndoOf(e.act).delay_s;
    EXPECT_TRUE(std::find(d.begin(), d.end(), delay / 1'000'000) != d.end() && delay % 1'000'000 == 0) << delay;
  }
  // About 5% of likes undone (of those made at least 6 h before the end, all of whose undos came).
  ASSERT_GT(creates[0], 2000);
  const double share = static_cast<double>(deletes[0]) / static_cast<double>(creates[0] - deletes[0]);
  EXPECT_NEAR(share, UndoOf(Act::kLike).share, 0.015);
  EXPECT_GT(deletes[1] + deletes[2] + deletes[3], 0);
}

TEST(MockEngagementEvents, SameEventsOnEveryRun) {
  const MockConfig config = NoFates();
  const uint64_t seed = Seeds(100, false, 1)[0];
  std::vector<StreamEvent> a, b;
  const EngagementCurve one(config, seed, kBaseMs), two(config, seed, kBaseMs);
  for (int64_t s = kBaseMs / 1000; s < kBaseMs / 1000 + 600; ++s) {
    PostEventsIn(one, s, &a);
    PostEventsIn(two, s, &b);
  }
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].time_us, b[i].time_us);
    EXPECT_EQ(a[i].actor, b[i].actor);
    EXPECT_EQ(a[i].create, b[i].create);
  }
}

TEST(MockEngagementEvents, BackgroundTrafficIsEvenAndTheSameForTheSameSecond) {
  std::vector<StreamEvent> a, b;
  BackgroundEventsIn(5000, 1'780'000'000, &a);
  BackgroundEventsIn(5000, 1'780'000'000, &b);
  ASSERT_EQ(a.size(), 5000u);
  std::map<Act, int> acts;
  int deletes = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].time_us, b[i].time_us);
    EXPECT_EQ(a[i].actor, b[i].actor);
    EXPECT_GE(a[i].time_us, 1'780'000'000'000'000LL + static_cast<int64_t>(i) * 200);
    EXPECT_LT(a[i].time_us, 1'780'000'000'000'000LL + static_cast<int64_t>(i + 1) * 200);
    EXPECT_NE(a[i].subject, 0u);
    EXPECT_LE(a[i].record_us, a[i].time_us);
    ++acts[a[i].act];
    deletes += !a[i].create;
  }
  EXPECT_GT(acts[Act::kLike], 2000);
  EXPECT_GT(acts[Act::kReply], 100);
  EXPECT_GT(acts[Act::kQuote], 50);
  EXPECT_GT(deletes, 300);
}

// The getPosts answer dated second D counts what the events before D made, and names the post by
// the CID its events' subjects carry.
TEST(MockEngagementEvents, GetPostsAnswersTheNetCountsAtTheStartOfItsDateSecond) {
  const MockConfig config = NoFates();
  int checked = 0;
  for (int k = 0; k < 40; ++k) {
    const int64_t tid_ms = kBaseMs - 3'600'000 * k;
    // Posts at that moment (clock ids not backdated: the model's counts from the TID's time).
    std::string rkey;
    const uint64_t v = (static_cast<uint64_t>(tid_ms) * 1000 << 10) | static_cast<uint64_t>(k * 7 % 1024 == 3 ? 1 : k * 7 % 1024);
    for (int i = 12; i >= 0; --i) rkey.push_back("234567abcdefghijklmnopqrstuvwxyz"[(v >> (5 * i)) & 31]);
    const std::string uri = "at://" + PlcDid(static_cast<uint64_t>(k) + 99) + "/app.bsky.feed.post/" + rkey;
    const std::optional<TrackedPost> post = TrackablePost(uri);
    ASSERT_TRUE(post.has_value());
    const EngagementCurve c(config, post->seed, post->created_ms);
    for (int64_t D : {kBaseMs / 1000 + 10, kBaseMs / 1000 + 3601, kBaseMs / 1000 + 86'400}) {
      const EndpointReply r = GetBlueskyPosts({{"uris", uri}}, config, D * 1000 + 999);
      rapidjson::Document doc;
      doc.Parse(r.body.c_str());
      ASSERT_EQ(doc["posts"].Size(), 1u) << r.body;
      const auto& view = doc["posts"][0];
      EXPECT_EQ(std::string(view["cid"].GetString()), post->cid);
      const std::array<int64_t, kCountedActs> net = NetCountsAt(c, D * 1'000'000);
      EXPECT_EQ(view["likeCount"].GetInt64(), net[0]);
      EXPECT_EQ(view["repostCount"].GetInt64(), net[1]);
      EXPECT_EQ(view["replyCount"].GetInt64(), net[2]);
      EXPECT_EQ(view["quoteCount"].GetInt64(), net[3]);
      checked += net[0] > 0;
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(MockEngagementEvents, OnlyAPostsUriWithADidAndATidIsTrackable) {
  EXPECT_TRUE(TrackablePost("at://did:plc:abcdefghijklmnopqrstuvwx/app.bsky.feed.post/3kabcdefghij2"));
  EXPECT_FALSE(TrackablePost("at://alice.bsky.social/app.bsky.feed.post/3kabcdefghij2"));
  EXPECT_FALSE(TrackablePost("at://did:plc:abcdefghijklmnopqrstuvwx/app.bsky.feed.like/3kabcdefghij2"));
  EXPECT_FALSE(TrackablePost("at://did:plc:abcdefghijklmnopqrstuvwx/app.bsky.feed.post/self"));
  EXPECT_FALSE(TrackablePost("https://bsky.app/profile/x/post/3kabcdefghij2"));
}

}  // namespace
}  // namespace tweetkeeper::mock

namespace tweetkeeper::mock {
namespace {

constexpr const char* kA = "at://did:plc:abcdefghijklmnopqrstuvwx/app.bsky.feed.post/3kabcdefghij2";
constexpr const char* kB = "at://did:plc:abcdefghijklmnopqrstuvwx/app.bsky.feed.post/3kabcdefghik2";
constexpr const char* kC = "at://did:plc:bbcdefghijklmnopqrstuvwx/app.bsky.feed.post/3kabcdefghij2";

TEST(MockStreamedPosts, RegistersEachUriOnceUpToItsCapAndAllOrNothing) {
  const MockConfig config = NoFates();
  StreamedPosts posts(2);
  size_t n = 0;
  std::string error;
  ASSERT_TRUE(posts.Register(std::string(kA) + "\r\n\n" + kA + "\n", config, &n, &error)) << error;
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(posts.size(), 1u);
  EXPECT_FALSE(posts.Register(std::string(kB) + "\nat://did:plc:x/app.bsky.feed.post/self\n", config, &n, &error));
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_EQ(posts.size(), 1u) << "nothing of a refused request is registered";
  EXPECT_FALSE(posts.Register(std::string(kB) + "\n" + kC, config, &n, &error));
  EXPECT_NE(error.find("at most 2"), std::string::npos) << error;
  ASSERT_TRUE(posts.Register(std::string(kA) + "\n" + kB, config, &n, &error)) << error;
  EXPECT_EQ(n, 2u);
  const auto slice = posts.Slice(posts.epoch(), 0, 10);
  ASSERT_EQ(slice.size(), 2u);
  EXPECT_EQ(slice[1]->post.uri, kB);
  EXPECT_EQ(slice[1]->post.cid, TrackablePost(kB)->cid);
  const uint64_t before = posts.epoch();
  posts.Clear();
  EXPECT_NE(posts.epoch(), before);
  EXPECT_TRUE(posts.Slice(before, 0, 10).empty()) << "a reader of the old epoch gets nothing";
  EXPECT_EQ(posts.size(), 0u);
}

// Through the mock's routes: POST /mock/jetstream/posts with its body, /mock/truth?at_us=.
TEST(MockStreamedPosts, TheRoutesRegisterAndTellTheNetCounts) {
  MockApi api(NoFates());
  HttpCall call{"POST", "/mock/jetstream/posts", {}, "", false, std::string(kA) + "\n" + kC + "\n"};
  HttpReply reply = api.Handle(call, kBaseMs);
  EXPECT_EQ(reply.status, 200);
  EXPECT_NE(reply.body.find("\"registered\":2"), std::string::npos) << reply.body;
  call.body = "at://not a uri";
  EXPECT_EQ(api.Handle(call, kBaseMs).status, 400);
  EXPECT_EQ(api.Handle({"POST", "/mock/reset", {}, ""}, kBaseMs).status, 200);
  EXPECT_EQ(JetstreamPosts().size(), 0u);
  const int64_t at = kBaseMs * 1000 + 86'400'000'000LL;
  reply = api.Handle({"GET", "/mock/truth", {{"network", "bluesky"}, {"key", kA}, {"at_us", std::to_string(at)}}, ""}, kBaseMs);
  ASSERT_EQ(reply.status, 200) << reply.body;
  const std::optional<TrackedPost> post = TrackablePost(kA);
  const std::array<int64_t, kCountedActs> n = NetCountsAt(EngagementCurve(NoFates(), post->seed, post->created_ms), at);
  EXPECT_NE(reply.body.find("\"likes\":" + std::to_string(n[0]) + ","), std::string::npos) << reply.body;
  EXPECT_EQ(api.Handle({"GET", "/mock/truth", {{"network", "x"}, {"key", "1"}, {"at_us", "5"}}, ""}, kBaseMs).status, 400);
}

}  // namespace
}  // namespace tweetkeeper::mock
