// What a follower reads of followed Bluesky accounts: getProfile(s), getAuthorFeed and Jetstream's
// events, as the AppView and Jetstream send them (events captured from
// wss://jetstream1.us-east.bsky.network/subscribe, kept in bluesky-social/jetstream's testdata),
// and hostile ones refused with a reason.

#include <gtest/gtest.h>

#include <string>

#include "worker_test_answers.hpp"
#include "follow/bluesky_follow.hpp"

namespace tweetkeeper::worker::follow {
namespace {

using tweetkeeper::worker::Answer;

const std::string kDid = "did:plc:z72i7hdynmk6r22z27h6tvur";

TEST(BlueskyFollow, Profile) {
  const Account found = ParseBlueskyProfile(Answer(200, R"({"did":"did:plc:z72i7hdynmk6r22z27h6tvur",
      "handle":"Bsky.App","displayName":"Bluesky","followersCount":1,"postsCount":2,"createdAt":"2023-04-12T04:53:57.057Z"})"));
  EXPECT_EQ(found.status, Account::Status::kFound);
  EXPECT_EQ(found.account_id, kDid);
  EXPECT_EQ(found.handle, "bsky.app");
  const Account invalid = ParseBlueskyProfile(Answer(200, R"({"did":"did:plc:z72i7hdynmk6r22z27h6tvur","handle":"handle.invalid"})"));
  EXPECT_EQ(invalid.status, Account::Status::kFound);
  EXPECT_EQ(invalid.handle, "") << "a handle that no longer validates: known by its DID";
  const Account missing = ParseBlueskyProfile(Answer(400, R"({"error":"InvalidRequest","message":"Profile not found"})"));
  EXPECT_EQ(missing.status, Account::Status::kMissing);
  EXPECT_EQ(missing.reason, "Profile not found");
  EXPECT_EQ(ParseBlueskyProfile(Answer(400, R"({"error":"AccountTakedown","message":"Account has been suspended"})")).status,
            Account::Status::kMissing);
  EXPECT_EQ(ParseBlueskyProfile(Answer(400, R"({"error":"InvalidRequest","message":"Error: actor must be a valid did or a handle"})")).status,
            Account::Status::kFailed)
      << "a refused request says nothing of the account";
  EXPECT_EQ(ParseBlueskyProfile(Answer(200, R"({"did":"did:key:abc","handle":"a.b"})")).status, Account::Status::kFailed);
  EXPECT_EQ(ParseBlueskyProfile(Answer(502, "")).status, Account::Status::kFailed);
  EXPECT_EQ(BlueskyProfileUrl("https://public.api.bsky.app", "alice.bsky.social"),
            "https://public.api.bsky.app/xrpc/app.bsky.actor.getProfile?actor=alice.bsky.social");
}

TEST(BlueskyFollow, Profiles) {
  EXPECT_EQ(BlueskyProfilesUrl("https://public.api.bsky.app", {"alice.bsky.social", kDid}),
            "https://public.api.bsky.app/xrpc/app.bsky.actor.getProfiles?actors=alice.bsky.social"
            "&actors=did%3Aplc%3Az72i7hdynmk6r22z27h6tvur");
  // Asked: a DID, a handle (in another case than the answer's), an actor the answer leaves out,
  // and a handle whose profile says handle.invalid (found by DID only: so not by that handle).
  const std::vector<std::string> actors = {kDid, "Alice.bsky.social", "gone.bsky.social", "stale.example.com"};
  const std::vector<Account> got = ParseBlueskyProfiles(Answer(200, R"({"profiles":[
      {"did":"did:plc:aaaaaaaaaaaaaaaaaaaaaaaa","handle":"alice.bsky.social","followersCount":3},
      {"did":"did:plc:z72i7hdynmk6r22z27h6tvur","handle":"bsky.app"},
      {"did":"did:plc:bbbbbbbbbbbbbbbbbbbbbbbb","handle":"handle.invalid"},
      {"did":"did:key:zQ3shunBKsXixLxKtC5qeSG9E4J5RkGN57im31pcTzbNQnm5w","handle":"evil.example.com"},
      17, null]})"),
                                                       actors);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].status, Account::Status::kFound);
  EXPECT_EQ(got[0].account_id, kDid);
  EXPECT_EQ(got[0].handle, "bsky.app");
  EXPECT_EQ(got[1].status, Account::Status::kFound);
  EXPECT_EQ(got[1].account_id, "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa") << "matched by its handle, not by its place";
  EXPECT_EQ(got[2].status, Account::Status::kMissing);
  EXPECT_EQ(got[2].reason, "Profile not found (getProfiles left it out)");
  EXPECT_EQ(got[3].status, Account::Status::kMissing);
  // An answer that is no list of profiles says nothing of any account.
  for (const HttpResponse& bad : {Answer(502, ""), Answer(200, R"({"profiles":{}})"), Answer(200, "[1,2]"),
                                  Answer(400, R"({"error":"InvalidRequest","message":"Error: actors/1 must be a valid did or a handle"})")}) {
    const std::vector<Account> none = ParseBlueskyProfiles(bad, actors);
    ASSERT_EQ(none.size(), 4u);
    for (const Account& a : none) EXPECT_EQ(a.status, Account::Status::kFailed) << bad.body;
    EXPECT_FALSE(none[0].reason.empty());
  }
}

TEST(BlueskyFollow, AuthorFeed) {
  EXPECT_EQ(BlueskyAuthorFeedUrl("https://public.api.bsky.app", kDid, ""),
            "https://public.api.bsky.app/xrpc/app.bsky.feed.getAuthorFeed?actor=did%3Aplc%3Az72i7hdynmk6r22z27h6tvur"
            "&limit=100&filter=posts_with_replies");
  const std::string own = "at://" + kDid + "/app.bsky.feed.post/3l6oveex3ii2l";
  const TimelinePage page = ParseBlueskyAuthorFeed(Answer(200, R"({"cursor":"2024-10-16T12:00:00.000Z","feed":[
      {"post":{"uri":")" + own + R"(","cid":"bafyreib","author":{"did":")" + kDid + R"(","handle":"bsky.app"},
               "record":{"$type":"app.bsky.feed.post","text":"hi","createdAt":"2024-10-16T12:00:00.000Z"},
               "indexedAt":"2024-10-16T12:00:01.000Z"}},
      {"post":{"uri":"at://did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/app.bsky.feed.post/3l6oveex3ii2m","cid":"bafyreic",
               "author":{"did":"did:plc:aaaaaaaaaaaaaaaaaaaaaaaa","handle":"other.bsky.social"},
               "record":{"text":"reposted","createdAt":"2024-10-16T11:00:00.000Z"},"indexedAt":"2024-10-16T11:00:00.000Z"},
       "reason":{"$type":"app.bsky.feed.defs#reasonRepost","by":{"did":")" + kDid + R"("},"indexedAt":"2024-10-16T12:30:00.000Z"}},
      {"post":{"uri":"at://)" + kDid + R"(/app.bsky.feed.post/3kaaaaaaaaaaa","cid":"bafyreid","author":{"did":")" + kDid + R"("},
               "record":{"text":"pinned","createdAt":"2023-01-01T00:00:00.000Z"},"indexedAt":"2023-01-01T00:00:00.000Z"},
       "reason":{"$type":"app.bsky.feed.defs#reasonPin"}},
      {"post":{"uri":"at://)" + kDid + R"(/app.bsky.feed.post/3l6oveex3ii2n","cid":"bafyreie","author":{"did":")" + kDid + R"("},
               "record":{"text":"backdated?","createdAt":"2030-01-01T00:00:00.000Z"},"indexedAt":"2024-10-16T12:05:00.000Z"}}]})"),
                                                           kDid);
  ASSERT_TRUE(page.ok) << page.reason;
  ASSERT_EQ(page.posts.size(), 2u) << "a repost and the pinned post are not the account's new posts";
  EXPECT_EQ(page.posts[0].url, own);
  EXPECT_EQ(page.posts[0].created_ms, INT64_C(1729080000000));
  EXPECT_EQ(page.posts[1].created_ms, INT64_C(1729080300000)) << "a createdAt in the future: the AppView's indexedAt";
  EXPECT_EQ(page.next_token, "2024-10-16T12:00:00.000Z");
  const TimelinePage gone = ParseBlueskyAuthorFeed(Answer(400, R"({"error":"InvalidRequest","message":"Profile not found"})"), kDid);
  ASSERT_TRUE(gone.account.has_value());
  EXPECT_EQ(gone.account->status, Account::Status::kMissing);
  EXPECT_FALSE(ParseBlueskyAuthorFeed(Answer(200, R"({"posts":[]})"), kDid).ok);
  const TimelinePage hostile = ParseBlueskyAuthorFeed(
      Answer(200, R"({"feed":[{"post":{"uri":"at://)" + kDid + R"(/app.bsky.feed.post/../../x","record":{"createdAt":"2024-10-16T12:00:00.000Z"}}}]})"),
      kDid);
  EXPECT_TRUE(hostile.ok);
  EXPECT_TRUE(hostile.posts.empty());
}

TEST(BlueskyFollow, JetstreamEvents) {
  JetstreamEvent e;
  std::string reason;
  // A create and a delete, as captured from Jetstream.
  ASSERT_TRUE(ParseJetstreamEvent(
      R"({"did":"did:plc:q235v55g5unth4zjjdpacfdr","time_us":1779719009157119,"kind":"commit","commit":{"rev":"3mmoojpaqkn2z","operation":"create","collection":"app.bsky.feed.post","rkey":"3mmoojp4cd223","record":{"$type":"app.bsky.feed.post","createdAt":"2026-05-25T14:23:28.757Z","langs":["en"],"reply":{"parent":{"cid":"bafyreiainko5un5pbcdosvxpbisjnjzemojnry6nsgtdftdgslbu37kxai","uri":"at://did:plc:j76trmiofvaxxpvx2vnb2vwf/app.bsky.feed.post/3mmojbrjwbs26"},"root":{"cid":"bafyreiainko5un5pbcdosvxpbisjnjzemojnry6nsgtdftdgslbu37kxai","uri":"at://did:plc:j76trmiofvaxxpvx2vnb2vwf/app.bsky.feed.post/3mmojbrjwbs26"}},"text":"Try RSV for a good time !!"},"cid":"bafyreicl7rzkxdrm4zz2ehbx52kuk3mvfow6p3gzfys72r5grvskxoswy4"}})",
      &e, &reason))
      << reason;
  EXPECT_EQ(e.kind, JetstreamEvent::Kind::kPostCreated);
  EXPECT_EQ(e.url(), "at://did:plc:q235v55g5unth4zjjdpacfdr/app.bsky.feed.post/3mmoojp4cd223");
  EXPECT_EQ(e.time_us, INT64_C(1779719009157119));
  EXPECT_EQ(e.created_ms, INT64_C(1779719008757));
  ASSERT_TRUE(ParseJetstreamEvent(
      R"({"did":"did:plc:4smmjsqf6l5jkzczvw6vsrqc","time_us":1783175888377628,"kind":"commit","commit":{"rev":"3mptbypuw3t2q","operation":"delete","collection":"app.bsky.feed.post","rkey":"3mpt73z3ejc2p"}})",
      &e, &reason));
  EXPECT_EQ(e.kind, JetstreamEvent::Kind::kPostDeleted);
  EXPECT_EQ(e.rkey, "3mpt73z3ejc2p");
  ASSERT_TRUE(ParseJetstreamEvent(
      R"({"did":"did:plc:g4ut2w5755qxi3fe7mfs72p4","time_us":1779719010272410,"kind":"account","account":{"active":false,"status":"deactivated","did":"did:plc:g4ut2w5755qxi3fe7mfs72p4","seq":30340180351,"time":"2026-05-25T14:23:29.950Z"}})",
      &e, &reason));
  EXPECT_EQ(e.kind, JetstreamEvent::Kind::kAccount);
  EXPECT_FALSE(e.active);
  EXPECT_EQ(e.status, "deactivated");
  ASSERT_TRUE(ParseJetstreamEvent(
      R"({"did":"did:plc:ufbl4k27gp6kzas5glhz7fim","time_us":1725516665333808,"kind":"identity","identity":{"did":"did:plc:ufbl4k27gp6kzas5glhz7fim","handle":"yohenrique.bsky.social","seq":1409752997,"time":"2024-09-05T06:11:04.870Z"}})",
      &e, &reason));
  EXPECT_EQ(e.kind, JetstreamEvent::Kind::kIdentity);
  EXPECT_EQ(e.handle, "yohenrique.bsky.social");
  // A like, an update: the cursor moves on, nothing else.
  ASSERT_TRUE(ParseJetstreamEvent(
      R"({"did":"did:plc:q235v55g5unth4zjjdpacfdr","time_us":1779719009157120,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.like","rkey":"3mmoojp4cd224","record":{}}})",
      &e, &reason));
  EXPECT_EQ(e.kind, JetstreamEvent::Kind::kOther);
  EXPECT_EQ(e.time_us, INT64_C(1779719009157120));
  // Hostile frames.
  EXPECT_FALSE(ParseJetstreamEvent("not json", &e, &reason));
  EXPECT_FALSE(ParseJetstreamEvent(R"({"did":"did:evil:x","time_us":1,"kind":"commit"})", &e, &reason));
  EXPECT_FALSE(ParseJetstreamEvent(R"({"did":"did:plc:q235v55g5unth4zjjdpacfdr","time_us":"1","kind":"commit"})", &e, &reason));
  EXPECT_FALSE(ParseJetstreamEvent(
      R"({"did":"did:plc:q235v55g5unth4zjjdpacfdr","time_us":5,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.post","rkey":"../x"}})",
      &e, &reason));
  EXPECT_NE(reason.find("not a TID"), std::string::npos);
  EXPECT_FALSE(ParseJetstreamEvent(std::string(200000, '['), &e, &reason));
  // A createdAt after Jetstream saw the post is bounded by that moment.
  ASSERT_TRUE(ParseJetstreamEvent(
      R"({"did":"did:plc:q235v55g5unth4zjjdpacfdr","time_us":1779719009157119,"kind":"commit","commit":{"operation":"create","collection":"app.bsky.feed.post","rkey":"3mmoojp4cd223","record":{"createdAt":"2099-01-01T00:00:00Z"}}})",
      &e, &reason));
  EXPECT_EQ(e.created_ms, INT64_C(1779719009157));
}

TEST(BlueskyFollow, JetstreamUrl) {
  EXPECT_EQ(JetstreamUrl("wss://jetstream1.us-east.bsky.network", {kDid}, 0),
            "wss://jetstream1.us-east.bsky.network/subscribe?wantedCollections=app.bsky.feed.post"
            "&wantedDids=did%3Aplc%3Az72i7hdynmk6r22z27h6tvur");
  EXPECT_EQ(JetstreamUrl("ws://127.0.0.1:9", {}, 1779719009157119),
            "ws://127.0.0.1:9/subscribe?wantedCollections=app.bsky.feed.post&cursor=1779719009157119");
}

}  // namespace
}  // namespace tweetkeeper::worker::follow

#include "follow/jetstream_client.hpp"

namespace tweetkeeper::worker::follow {
namespace {

TEST(BlueskyFollow, JetstreamOptionsUpdate) {
  EXPECT_EQ(JetstreamOptionsUpdate({"did:plc:a", "did:web:b.example"}),
            R"({"type":"options_update","payload":{"wantedCollections":["app.bsky.feed.post"],)"
            R"("wantedDids":["did:plc:a","did:web:b.example"],"maxMessageSizeBytes":0}})");
}

}  // namespace
}  // namespace tweetkeeper::worker::follow
