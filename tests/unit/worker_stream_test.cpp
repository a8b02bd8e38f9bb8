// Stream counts' pure parts (worker/stream): what a Jetstream event counts for, and the counter:
// counting, deletes by record, replays counted once, adoption from a read the reader has passed,
// reads compared at their own moment, the ring's horizon; and the HTTP Date a read is placed by.
#include <gtest/gtest.h>

#include <string>

#include "stream/count_event.hpp"
#include "stream/counter.hpp"
#include "text/utc_time.hpp"

namespace tk = tweetkeeper::worker;
namespace ts = tweetkeeper::worker::stream;

namespace {

const std::string kPost = "at://did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/app.bsky.feed.post/3l6oveex3ii2a";
const ts::PostKey kKey = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/3l6oveex3ii2a";

std::string Commit(const std::string& did, std::int64_t t, const std::string& op, const std::string& collection,
                   const std::string& rkey, const std::string& record = "") {
  return R"({"did":")" + did + R"(","time_us":)" + std::to_string(t) + R"(,"kind":"commit","commit":{"rev":"r","operation":")" +
         op + R"(","collection":")" + collection + R"(","rkey":")" + rkey + "\"" +
         (record.empty() ? std::string() : R"(,"record":)" + record + R"(,"cid":"bafy")") + "}}";
}
std::string Like(const std::string& did, std::int64_t t, const std::string& rkey, const std::string& subject = kPost) {
  return Commit(did, t, "create", "app.bsky.feed.like", rkey,
                R"({"$type":"app.bsky.feed.like","createdAt":"2026-11-29T00:00:00Z","subject":{"uri":")" + subject +
                    R"(","cid":"bafy"}})");
}
std::string Unlike(const std::string& did, std::int64_t t, const std::string& rkey) {
  return Commit(did, t, "delete", "app.bsky.feed.like", rkey);
}

ts::CountEvent Parse(const std::string& frame, ts::Parsed expect = ts::Parsed::kEvent) {
  ts::CountEvent e;
  std::string reason;
  EXPECT_EQ(ts::ParseCountEvent(frame, &e, &reason), expect) << frame << " " << reason;
  return e;
}

}  // namespace

TEST(StreamEvent, LikesRepostsRepliesAndQuotesNameTheirPost) {
  const ts::CountEvent like = Parse(Like("did:plc:bob", 5, "3kaaa"));
  EXPECT_TRUE(like.create);
  EXPECT_EQ(like.subject[ts::kLike], kKey);
  EXPECT_EQ(like.record[ts::kLike], ts::RecordKey("did:plc:bob", "app.bsky.feed.like", "3kaaa", ts::kLike));
  const ts::CountEvent repost = Parse(Commit("did:plc:bob", 6, "create", "app.bsky.feed.repost", "3kaab",
                                             R"({"subject":{"uri":")" + kPost + R"(","cid":"x"}})"));
  EXPECT_EQ(repost.subject[ts::kRepost], kKey);
  // A reply counts for its parent only (the AppView's replyCount: direct replies), a quote for the
  // embedded post, as app.bsky.embed.record and as recordWithMedia; one post may do both.
  const std::string other = "at://did:plc:root/app.bsky.feed.post/3root";
  const ts::CountEvent reply_quote = Parse(Commit(
      "did:plc:bob", 7, "create", "app.bsky.feed.post", "3kaac",
      R"({"text":"x","reply":{"root":{"uri":")" + other + R"(","cid":"c"},"parent":{"uri":")" + kPost +
          R"(","cid":"c"}},"embed":{"$type":"app.bsky.embed.recordWithMedia","record":{"record":{"uri":")" + other +
          R"(","cid":"c"}},"media":{}}})"));
  EXPECT_EQ(reply_quote.subject[ts::kReply], kKey);
  EXPECT_EQ(reply_quote.subject[ts::kQuote], "did:plc:root/3root");
  const ts::CountEvent quote = Parse(Commit("did:plc:bob", 8, "create", "app.bsky.feed.post", "3kaad",
                                            R"({"text":"x","embed":{"$type":"app.bsky.embed.record","record":{"uri":")" +
                                                kPost + R"(","cid":"c"}}})"));
  EXPECT_EQ(quote.subject[ts::kQuote], kKey);
  EXPECT_TRUE(quote.subject[ts::kReply].empty());
  // A delete names only its record: both kinds a post could have counted as may be undone.
  const ts::CountEvent deleted = Parse(Commit("did:plc:bob", 9, "delete", "app.bsky.feed.post", "3kaad"));
  EXPECT_FALSE(deleted.create);
  EXPECT_TRUE(deleted.may_undo[ts::kReply] && deleted.may_undo[ts::kQuote]);
  EXPECT_EQ(deleted.record[ts::kQuote], quote.record[ts::kQuote]);
}

TEST(StreamEvent, WhatCountsForNothingAndWhatIsRefused) {
  Parse(Commit("did:plc:bob", 5, "create", "app.bsky.feed.post", "3kaaa", R"({"text":"a post of its own"})"),
        ts::Parsed::kNothing);
  Parse(Like("did:plc:bob", 5, "3kaaa", "at://did:plc:x/app.bsky.feed.generator/whats-hot"), ts::Parsed::kNothing);
  Parse(Like("did:plc:bob", 5, "3kaaa", "at://alice.example/app.bsky.feed.post/3kaaa"), ts::Parsed::kNothing);
  Parse(R"({"did":"did:plc:bob","time_us":5,"kind":"identity","identity":{}})", ts::Parsed::kNothing);
  Parse(Commit("did:plc:bob", 5, "create", "app.bsky.graph.follow", "3kaaa", R"({"subject":"did:plc:x"})"),
        ts::Parsed::kNothing);
  Parse(R"({"did":"did:plc:bob","kind":"commit"})", ts::Parsed::kRefused);
  Parse(R"({"did":"bob","time_us":5})", ts::Parsed::kRefused);
  Parse("not json", ts::Parsed::kRefused);
  Parse(std::string(100000, '['), ts::Parsed::kRefused);
  EXPECT_EQ(ts::PostOf("at://did:plc:a/app.bsky.feed.post/"), "");
  EXPECT_EQ(ts::PostOf("at://did:plc:a/app.bsky.feed.postx/k"), "");
  EXPECT_EQ(ts::PostOf("at://did:plc:a/app.bsky.feed.post/k/extra"), "");
}

TEST(StreamCounter, CountsDeletesAndReplaysOnce) {
  ts::Counter c(60'000'000);
  c.Reset(0);
  c.AddPost(-1, kKey, {0, 0, 10, 0});
  c.Apply(Parse(Like("did:plc:bob", 1'000'000, "3kaaa")));
  c.Apply(Parse(Like("did:plc:bob", 1'000'000, "3kaaa")));  // the same record again (a replay)
  c.Apply(Parse(Like("did:plc:eve", 1'000'100, "3kaab")));
  c.Apply(Parse(Unlike("did:plc:bob", 1'000'200, "3kaaa")));
  c.Apply(Parse(Unlike("did:plc:bob", 1'000'300, "3kaaa")));  // deleted twice: once subtracted
  c.Apply(Parse(Unlike("did:plc:zed", 1'000'400, "3kzzz")));  // a record never counted
  c.Pass(1'000'500);  // (events of one time_us are applied once a later one comes)
  const ts::Flush f = c.Take();
  ASSERT_EQ(f.ids.size(), 1u);
  EXPECT_EQ(f.counts[ts::kLike], 11);
  EXPECT_EQ(f.at_us[0], 1'000'200);
  EXPECT_EQ(f.keys.size(), 2u);
  EXPECT_EQ(f.gone.size(), 1u);
  EXPECT_EQ(f.events, 6);
  EXPECT_EQ(f.counted, 3);
  EXPECT_EQ(f.position_us, 1'000'400);
  EXPECT_TRUE(c.Take().ids.empty()) << "nothing moved since";
  // A restart from the database: the records it stored make a replayed create count for nothing.
  c.Reset(1'000'000);
  c.AddPost(-1, kKey, {0, 0, 11, 0});
  c.AddRecord(ts::RecordKey("did:plc:eve", "app.bsky.feed.like", "3kaab", ts::kLike), -1, ts::kLike, kKey);
  c.Apply(Parse(Like("did:plc:eve", 1'000'100, "3kaab")));
  c.Apply(Parse(Unlike("did:plc:eve", 1'000'500, "3kaab")));
  EXPECT_TRUE(c.Take().ids.empty()) << "the like seen again counts for nothing; the unlike is not applied yet";
  c.Pass(1'000'600);
  EXPECT_EQ(c.Take().counts[ts::kLike], 10);
}

TEST(StreamCounter, EventsOfOneTimeAreFlushedTogether) {
  ts::Counter c(60'000'000);
  c.Reset(0);
  c.AddPost(-1, kKey, {0, 0, 5, 0});
  // An unlike and its replacement in the same microsecond: a flush between them would store a
  // count no moment of the stream had.
  c.Apply(Parse(Like("did:plc:bob", 1'000'000, "3kaaa")));
  c.Apply(Parse(Like("did:plc:eve", 2'000'000, "3kaab")));
  ts::Flush f = c.Take();
  EXPECT_EQ(f.position_us, 1'000'000);
  EXPECT_EQ(f.counts[ts::kLike], 6) << "eve's like waits for whatever else comes at 2 s";
  c.Apply(Parse(Unlike("did:plc:bob", 2'000'000, "3kaaa")));
  c.Pass(3'000'000);
  f = c.Take();
  EXPECT_EQ(f.position_us, 2'000'000);
  EXPECT_EQ(f.counts[ts::kLike], 6);
}

TEST(StreamCounter, AdoptsFromAReadItPassedAndComparesAtTheReadsMoment) {
  ts::Counter c(60'000'000);
  c.Reset(0);
  // Not counted yet: bob likes at 1 s, eve at 3 s, bob unlikes at 4 s; the read is as of 2 s.
  c.Apply(Parse(Like("did:plc:bob", 1'000'000, "3kaaa")));
  c.Apply(Parse(Like("did:plc:eve", 3'000'000, "3kaab")));
  c.Apply(Parse(Unlike("did:plc:bob", 4'000'000, "3kaaa")));
  c.Pass(5'000'000);
  ts::Counts d;
  EXPECT_EQ(c.Read(-1, kKey, 2'000'000, {0, 0, 1, 0}, false, &d), ts::ReadResult::kAdopted);
  ts::Flush f = c.Take();
  ASSERT_EQ(f.ids.size(), 1u);
  EXPECT_EQ(f.counts[ts::kLike], 1) << "the read's 1 (bob), eve's like after it, bob's unlike after it";
  EXPECT_EQ(f.read_results.at(0), ts::ReadResult::kAdopted);
  // A read as of 3.5 s that says 2 likes: the stream's count then was 2 (bob and eve): it agrees,
  // although bob has unliked since.
  EXPECT_EQ(c.Read(-1, kKey, 3'500'000, {0, 0, 2, 0}, true, &d), ts::ReadResult::kCompared);
  EXPECT_EQ(d, (ts::Counts{0, 0, 0, 0}));
  // One that says 3: the stream missed a like; it takes the read's.
  EXPECT_EQ(c.Read(-1, kKey, 3'500'000, {0, 0, 3, 0}, true, &d), ts::ReadResult::kCompared);
  EXPECT_EQ(d, (ts::Counts{0, 0, 1, 0}));
  f = c.Take();
  EXPECT_EQ(f.counts[ts::kLike], 2);
  EXPECT_EQ(f.differences, (std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 1, 0}));
}

// After a gap the post is no longer counted, but its records are known: a like made before the
// gap and deleted before the post is adopted again from a read made before the delete subtracts
// (the read counted it); one made before the ring and deleted after the read, too.
TEST(StreamCounter, DeletesOfRecordsKnownBeforeAGap) {
  ts::Counter c(60'000'000);
  c.Reset(0);
  c.AddRecord(ts::RecordKey("did:plc:bob", "app.bsky.feed.like", "3kaaa", ts::kLike), -1, ts::kLike, kKey);
  c.Apply(Parse(Like("did:plc:zed", 1'000'000, "3kzzz", "at://did:plc:x/app.bsky.feed.post/3z")));
  c.Apply(Parse(Unlike("did:plc:bob", 3'000'000, "3kaaa")));  // bob's like, counted before the gap
  c.Apply(Parse(Like("did:plc:eve", 3'000'000, "3kaab")));    // and its replacement, the same moment
  c.Pass(4'000'000);
  ts::Counts d;
  EXPECT_EQ(c.Read(-1, kKey, 2'000'000, {0, 0, 7, 0}, false, &d), ts::ReadResult::kAdopted);
  EXPECT_EQ(c.Take().counts[ts::kLike], 7) << "the read's 7 (bob's among them), less bob's, plus eve's";
}

// A restart from a stored position, the stream read again from before it (--stream-warm): a post
// first read just before the restart, whose like was made before the position and undone after,
// is adopted exactly; the counted post's like seen again counts once.
TEST(StreamCounter, WarmRestart) {
  ts::Counter c(60'000'000);
  c.Reset(10'000'000, 5'000'000);
  c.AddPost(-2, "did:plc:b/3k", {0, 0, 1, 0});
  c.AddRecord(ts::RecordKey("did:plc:eve", "app.bsky.feed.like", "3kaab", ts::kLike), -2, ts::kLike, "did:plc:b/3k");
  c.Apply(Parse(Like("did:plc:eve", 6'000'000, "3kaab", "at://did:plc:b/app.bsky.feed.post/3k")));  // counted already
  c.Apply(Parse(Like("did:plc:bob", 7'000'000, "3kaaa")));  // before the position, the post not counted yet
  c.Apply(Parse(Unlike("did:plc:bob", 12'000'000, "3kaaa")));
  c.Apply(Parse(Like("did:plc:zoe", 12'000'000, "3kaac")));
  c.Pass(13'000'000);
  ts::Flush f = c.Take();
  EXPECT_EQ(f.position_us, 12'000'000);
  EXPECT_TRUE(f.ids.empty()) << "nothing counted twice";
  ts::Counts d;
  EXPECT_EQ(c.Read(-1, kKey, 8'000'000, {0, 0, 1, 0}, false, &d), ts::ReadResult::kAdopted);
  EXPECT_EQ(c.Take().counts[ts::kLike], 1) << "bob's like (in the read) undone, zoe's added";
  EXPECT_EQ(c.Read(-2, "did:plc:b/3k", 9'000'000, {0, 0, 1, 0}, true, &d), ts::ReadResult::kCompared);
  EXPECT_EQ(d, (ts::Counts{0, 0, 0, 0}));
}

// A restart's warm replay (the stream read again from before the stored position, into the ring
// only) is no ground for a read until it has passed the position: the counts are the position's,
// and the ring does not yet hold what came between the replay and the position. (Once under make
// check's load a read was compared mid-replay, "differed", and took the counts below the truth.)
TEST(StreamCounter, NoReadDecidedDuringTheWarmReplay) {
  ts::Counter c(60'000'000);
  c.Reset(10'000'000, 5'000'000);
  const ts::PostKey b = "did:plc:b/3k";
  const std::string uri = "at://did:plc:b/app.bsky.feed.post/3k";
  c.AddPost(-2, b, {0, 0, 2, 0});  // at the position: eve's like (6 s) and ann's (8 s)
  c.AddRecord(ts::RecordKey("did:plc:eve", "app.bsky.feed.like", "3kaab", ts::kLike), -2, ts::kLike, b);
  c.AddRecord(ts::RecordKey("did:plc:ann", "app.bsky.feed.like", "3kaad", ts::kLike), -2, ts::kLike, b);
  c.Apply(Parse(Like("did:plc:eve", 6'000'000, "3kaab", uri)));
  c.Pass(6'500'000);
  c.Pass(6'600'000);  // (releases 6.5 s: the replay has reached it, not the position)
  EXPECT_LT(c.reads_through_us(), 5'000'000) << "no read can be decided yet";
  ts::Counts d;
  EXPECT_EQ(c.Read(-2, b, 7'000'000, {0, 0, 1, 0}, true, &d), ts::ReadResult::kNotYet) << "as of 7 s: eve's like";
  EXPECT_EQ(c.Read(-1, kKey, 7'000'000, {0, 0, 0, 0}, false, &d), ts::ReadResult::kNotYet);
  c.Apply(Parse(Like("did:plc:ann", 8'000'000, "3kaad", uri)));
  c.Pass(11'000'000);
  c.Pass(12'000'000);
  EXPECT_EQ(c.reads_through_us(), 11'000'000);
  EXPECT_EQ(c.Read(-2, b, 7'000'000, {0, 0, 1, 0}, true, &d), ts::ReadResult::kCompared);
  EXPECT_EQ(d, (ts::Counts{0, 0, 0, 0})) << "the stream's count at 7 s";
  EXPECT_EQ(c.Read(-1, kKey, 7'000'000, {0, 0, 0, 0}, false, &d), ts::ReadResult::kAdopted);
  const ts::Flush f = c.Take();
  EXPECT_EQ(f.read_ids, (std::vector<std::int64_t>{-2, -1})) << "the reads not decided are not stored: they wait";
  EXPECT_EQ(f.reads_through_us, 11'000'000);
  EXPECT_TRUE(f.ids.empty() || f.counts[ts::kLike] == 2) << "b's two likes stand";
}

// A flush the database did not take (its connection lost) goes into the next, with what came since.
TEST(StreamCounter, ALostFlushIsSentAgain) {
  ts::Counter c(60'000'000);
  c.Reset(0);
  c.AddPost(-1, kKey, {0, 0, 5, 0});
  c.Apply(Parse(Like("did:plc:bob", 1'000'000, "3kaaa")));
  c.Pass(2'000'000);
  const ts::Flush lost = c.Take();
  c.Restore(lost);
  c.Apply(Parse(Unlike("did:plc:bob", 3'000'000, "3kaaa")));
  c.Pass(4'000'000);
  const ts::Flush f = c.Take();
  ASSERT_EQ(f.ids.size(), 1u);
  EXPECT_EQ(f.counts[ts::kLike], 5);
  EXPECT_EQ(f.keys, lost.keys) << "the record made, sent again";
  EXPECT_EQ(f.gone, lost.keys) << "and gone since: the flush adds it, then removes it";
  EXPECT_EQ(f.events, 3) << "the lost flush's 1 (the like; 2 s was held), then 2 s and 3 s";
  EXPECT_EQ(f.position_us, 3'000'000);
}

TEST(StreamEvent, AccountEvents) {
  const ts::CountEvent gone = Parse(
      R"({"did":"did:plc:bob","time_us":5,"kind":"account","account":{"active":false,"did":"did:plc:bob","seq":9,"time":"2026-11-29T00:00:00.000Z","status":"takendown"}})",
      ts::Parsed::kAccount);
  EXPECT_EQ(gone.did, "did:plc:bob");
  EXPECT_FALSE(gone.active);
  EXPECT_EQ(gone.status, "takendown");
  const ts::CountEvent back = Parse(
      R"({"did":"did:plc:bob","time_us":6,"kind":"account","account":{"active":true,"did":"did:plc:bob","seq":10,"time":"2026-11-29T00:00:01.000Z"}})",
      ts::Parsed::kAccount);
  EXPECT_TRUE(back.active);
  EXPECT_EQ(back.status, "");
  // No active flag, or a status no Jetstream sends (too long, spaces): nothing to pass on.
  Parse(R"({"did":"did:plc:bob","time_us":5,"kind":"account","account":{"status":"deleted"}})", ts::Parsed::kNothing);
  Parse(R"({"did":"did:plc:bob","time_us":5,"kind":"account","account":{"active":false,"status":")" + std::string(41, 'x') + R"("}})",
        ts::Parsed::kNothing);
  Parse(R"({"did":"did:plc:bob","time_us":5,"kind":"account","account":{"active":false,"status":"a b"}})", ts::Parsed::kNothing);
}

TEST(StreamCounter, AccountEventsGoWithTheFlushAndALostOneIsSentAgain) {
  ts::Counter c(60'000'000);
  c.Reset(0);
  c.Account(Parse(R"({"did":"did:plc:bob","time_us":1000000,"kind":"account","account":{"active":false,"status":"deleted"}})",
                  ts::Parsed::kAccount));
  c.Pass(2'000'000);
  const ts::Flush lost = c.Take();
  EXPECT_EQ(lost.account_dids, std::vector<std::string>{"did:plc:bob"});
  EXPECT_EQ(lost.account_statuses, std::vector<std::string>{"deleted"});
  EXPECT_FALSE(lost.empty());
  EXPECT_EQ(lost.position_us, 1'000'000) << "the position moves past the account event";
  c.Restore(lost);
  c.Account(Parse(R"({"did":"did:plc:bob","time_us":3000000,"kind":"account","account":{"active":true}})", ts::Parsed::kAccount));
  c.Pass(4'000'000);
  const ts::Flush f = c.Take();
  EXPECT_EQ(f.account_dids, (std::vector<std::string>{"did:plc:bob", "did:plc:bob"})) << "in the stream's order";
  EXPECT_EQ(f.account_actives, (std::vector<bool>{false, true}));
  EXPECT_TRUE(c.Take().account_dids.empty()) << "sent once";
}

TEST(StreamCounter, ReadsBeforeTheRingAreReadAgainOrNotCompared) {
  ts::Counter c(10'000'000);
  c.Reset(50'000'000);  // restarted from a stored position: the ring starts there
  ts::Counts d;
  EXPECT_EQ(c.Read(-1, kKey, 40'000'000, {0, 0, 1, 0}, false, &d), ts::ReadResult::kAgain);
  c.AddPost(-2, "did:plc:b/3k", {});
  EXPECT_EQ(c.Read(-2, "did:plc:b/3k", 40'000'000, {}, true, &d), ts::ReadResult::kSkipped);
  // The ring keeps ring_us of events: older ones go.
  for (std::int64_t t = 50'000'001; t < 70'000'000; t += 1'000'000)
    c.Apply(Parse(Like("did:plc:u" + std::to_string(t), t, "3k" + std::to_string(t), "at://did:plc:x/app.bsky.feed.post/3z")));
  c.Pass(70'000'000);
  EXPECT_LE(c.ring_size(), 11u);
  EXPECT_GE(c.ring_start_us(), 59'000'000);
}

TEST(HttpDate, ImfFixdateOnly) {
  EXPECT_EQ(tk::ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  EXPECT_EQ(tk::ParseHttpDate("Sun, 29 Nov 2026 15:40:00 GMT"), 1795966800);
  EXPECT_FALSE(tk::ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT"));
  EXPECT_FALSE(tk::ParseHttpDate("Sun, 06 Nov 1994 08:49:37 UTC"));
  EXPECT_FALSE(tk::ParseHttpDate("Sun, 06 Xyz 1994 08:49:37 GMT"));
  EXPECT_FALSE(tk::ParseHttpDate("Sun, 06 Nov 1994 28:49:37 GMT"));
  EXPECT_FALSE(tk::ParseHttpDate(""));
}
