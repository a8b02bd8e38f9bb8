// The providers on answers as the networks document them: every file of tests/unit/fixtures/
// (where each came from: fixtures/README.md) through its provider's parser, the payload hashing
// and, for X, the twarc2 export. The expected counts, ids and times were read off the fixture
// files by hand. Replies, quotes, retweets, reposts and reblogs get what docs/workers.md
// ("Replies, quotes, reposts and reblogs") says tweetkeeper stores for each.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "export/export_format.hpp"
#include "provider/bluesky.hpp"
#include "provider/content_hash.hpp"
#include "provider/mastodon.hpp"
#include "provider/x_v1_1.hpp"
#include "provider/x_v2.hpp"
#include "worker_test_answers.hpp"

namespace tweetkeeper::worker {
namespace {

namespace fs = std::filesystem;
constexpr auto kNone = std::nullopt;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot read " << path;  // a missing fixture fails, never skips
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Fixture(const std::string& name) { return ReadFile(fs::path(TK_FIXTURES_DIR) / name); }

// `text` with `from` replaced by `to`, where `from` occurs exactly once (so an edit of a fixture
// cannot silently miss).
std::string ReplacedOnce(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos) return text;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from << " occurs more than once";
  return text.replace(at, from.size(), to);
}

const Observation* Find(const BatchResult& r, std::int64_t id) {
  for (const Observation& o : r.observations) {
    if (o.id == id) return &o;
  }
  return nullptr;
}

rapidjson::Document Json(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << text.substr(0, 80);
  return doc;
}

// The content hash of the one post of `body` (a 200 to `ids`), with payloads on; empty when
// there is no one post.
std::string HashOfThePost(const Provider& api, const std::string& body, const std::vector<std::int64_t>& ids,
                          PostKeys keys) {
  keys.payloads = true;
  const BatchResult r = api.ParseAnswer(Ok(body), ids, keys);
  EXPECT_EQ(r.observations.size(), 1u) << r.reason;
  return r.observations.size() == 1 ? r.observations[0].content_hash : std::string();
}

// ---------------------------------------------------------------------------------------------
// X API v2: GET /2/tweets, the data dictionary's example payloads.

constexpr std::int64_t kReply = 1296887316556980230, kReplyParent = 1296887091901718529;
constexpr std::int64_t kRetweet = 1229851574555508737, kRetweeted = 1229843515603144704;
constexpr std::int64_t kQuote = 1328399838128467969, kQuoted = 1327011423252144128;
constexpr std::int64_t kMedia = 1293593516040269825;

BatchResult ParseX(const std::string& file, const std::vector<std::int64_t>& ids, const PostKeys& keys = {}) {
  return XV2Provider("https://api.x.com").ParseAnswer(Ok(Fixture(file)), ids, keys);
}

// Each answer is asked for the post and the post it refers to, which is only in includes.tweets:
// what the answer says of another post, not an answer for it (left out).
TEST(FixturesX, RepliesQuotesAndRetweetsHaveTheNumbersXGivesThem) {
  struct Case {
    std::string file;
    std::int64_t id, referenced;
    Counts counts;
  };
  const std::vector<Case> cases = {
      // A reply: its own counts (its parent's: 9/7/32/0).
      {"x/v2_reply.json", kReply, kReplyParent, {9, 3, 26, 2, kNone, kNone}},
      // A retweet: X gives it the original's retweet_count (19) and no likes, replies or quotes
      // of its own (the original's: 19/1/71/6, tracked by its own id).
      {"x/v2_retweet.json", kRetweet, kRetweeted, {19, 0, 0, 0, kNone, kNone}},
      // A quote: its own counts (the quoted post's: 8/2/33/4).
      {"x/v2_quote.json", kQuote, kQuoted, {7, 4, 29, 1, kNone, kNone}},
  };
  for (const Case& c : cases) {
    const BatchResult r = ParseX(c.file, {c.referenced, c.id});
    ASSERT_TRUE(r.ok()) << c.file << ": " << r.reason;
    ASSERT_EQ(r.observations.size(), 1u) << c.file;
    EXPECT_EQ(r.observations[0].id, c.id) << c.file;
    EXPECT_EQ(CountsOf(r.observations[0].metrics), c.counts) << c.file;
    EXPECT_EQ(r.observations[0].created_ms, kNone) << c.file;  // X's ids say it
    EXPECT_EQ(r.omitted, std::vector<std::int64_t>{c.referenced}) << c.file;
    EXPECT_TRUE(r.problems.empty()) << c.file;
  }
}

TEST(FixturesX, MediaAndThePartialErrorsExample) {
  BatchResult r = ParseX("x/v2_media.json", {kMedia});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{958, 171, 2848, 333, kNone, kNone}));

  r = ParseX("x/v2_partial_errors.json", {123, 456});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, 123);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{kNone, kNone, kNone, kNone, kNone, kNone}));  // not asked for
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, 456);
  EXPECT_EQ(r.problems[0].type, "resource-not-found");
  EXPECT_EQ(r.problems[0].detail, "Could not find tweet with id: [456].");
  EXPECT_TRUE(r.omitted.empty());
}

TEST(FixturesX, PayloadIsTheTweetAndItsAuthorNotTheReferencedOnes) {
  PostKeys keys;
  keys.payloads = true;
  const BatchResult r = ParseX("x/v2_retweet.json", {kRetweet}, keys);
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  const Observation& o = r.observations[0];
  const rapidjson::Document tweet = Json(o.payload), author = Json(o.author);
  EXPECT_STREQ(tweet["id"].GetString(), "1229851574555508737");
  EXPECT_STREQ(tweet["referenced_tweets"][0]["type"].GetString(), "retweeted");
  EXPECT_STREQ(author["id"].GetString(), "2244994945");  // TwitterDev, who retweeted; not suhemparack
  EXPECT_STREQ(author["username"].GetString(), "TwitterDev");
  EXPECT_EQ(o.content_hash, ContentHash(o.payload, o.author));
  EXPECT_EQ(o.content_hash.size(), 32u);
}

TEST(FixturesX, CountsAreNoContentTheTextIs) {
  PostKeys keys;
  keys.payloads = true;
  const XV2Provider api("https://api.x.com");
  const std::string body = Fixture("x/v2_reply.json");
  const auto hash_of = [&](const std::string& b) { return HashOfThePost(api, b, {kReply}, {}); };
  const std::string original = hash_of(body);
  ASSERT_EQ(original.size(), 32u);
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("like_count": 26)", R"("like_count": 27)")), original);
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("followers_count": 513962)", R"("followers_count": 600000)")), original);
  EXPECT_NE(hash_of(ReplacedOnce(body, "COVID-19 health crisis", "COVID-19 health research")), original);
  EXPECT_NE(hash_of(ReplacedOnce(body, R"("name": "Twitter Dev")", R"("name": "X Dev")")), original);

  // A claim that says this payload is kept gets no payload back for a count that moved, and the
  // new one for an edited text.
  const std::unordered_map<std::int64_t, std::string> kept{{kReply, original}};
  keys.kept = &kept;
  BatchResult r = api.ParseAnswer(Ok(ReplacedOnce(body, R"("reply_count": 3)", R"("reply_count": 4)")), {kReply}, keys);
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].metrics.reply_count, 4);
  EXPECT_TRUE(r.observations[0].payload.empty());
  r = api.ParseAnswer(Ok(ReplacedOnce(body, "COVID-19 health crisis", "COVID-19 health research")), {kReply}, keys);
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_NE(r.observations[0].payload.find("COVID-19 health research"), std::string::npos);
}

TEST(FixturesX, Twarc2ExportOfTheDocumentedTweets) {
  PostKeys keys;
  keys.payloads = true;
  std::vector<exporter::StoredPost> stored;
  for (const auto& [file, id] : std::vector<std::pair<std::string, std::int64_t>>{
           {"x/v2_reply.json", kReply}, {"x/v2_retweet.json", kRetweet}, {"x/v2_quote.json", kQuote}}) {
    const BatchResult r = ParseX(file, {id}, keys);
    ASSERT_EQ(r.observations.size(), 1u) << file << ": " << r.reason;
    stored.push_back({id, r.observations[0].payload, r.observations[0].author, std::nullopt});
  }
  const exporter::PageResult page =
      exporter::Twarc2Page(stored, {5, "2026-11-26T09:00:00+00:00", "2026-11-26T09:00:00.123Z"},
                           "https://api.x.com/2/tweets?ids=1", "tweetkeeper-export 0.3.0");
  EXPECT_TRUE(page.unreadable.empty());
  const rapidjson::Document line = Json(page.line);
  ASSERT_TRUE(line.IsObject() && line["data"].IsArray());
  ASSERT_EQ(line["data"].Size(), 3u);
  EXPECT_STREQ(line["data"][0]["id"].GetString(), "1296887316556980230");
  EXPECT_STREQ(line["data"][1]["referenced_tweets"][0]["type"].GetString(), "retweeted");
  EXPECT_STREQ(line["data"][2]["referenced_tweets"][0]["type"].GetString(), "quoted");
  EXPECT_EQ(line["data"][2]["public_metrics"]["like_count"].GetInt(), 29);  // as the API gave it
  ASSERT_EQ(line["includes"]["users"].Size(), 1u);  // one author, TwitterDev, once
  EXPECT_STREQ(line["includes"]["users"][0]["username"].GetString(), "TwitterDev");
  // Non-ASCII as \uXXXX, as twarc2 writes it: the reply's text has U+1F4CA.
  EXPECT_NE(page.line.find(R"(\uD83D\uDCCA)"), std::string::npos);
  EXPECT_EQ(page.line.find("\xF0\x9F\x93\x8A"), std::string::npos);
}

// X API v1.1: statuses/lookup (map=true) around the Enterprise data dictionary's quote Tweet.

TEST(FixturesXV11, AQuoteHasItsOwnCountsAndNullIsAProblem) {
  const XV11Provider api("https://api.x.com");
  const BatchResult r =
      api.ParseAnswer(Ok(Fixture("x/v1_1_lookup_quote.json")), {1081260794069671936, 1081260794069671937, 1079578364904648705});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, 1081260794069671936);
  // retweet_count 0, favorite_count 1: its own; the quoted_status's 3 and 6 are not.
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{0, kNone, 1, kNone, kNone, kNone}));
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, 1081260794069671937);
  EXPECT_EQ(r.problems[0].type, kV11MissingProblem);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{1079578364904648705});  // only nested: no answer
}

// ---------------------------------------------------------------------------------------------
// Bluesky: getPosts answers from atproto's own AppView test snapshot (posts.test.ts, "fetches
// posts"), as an unauthenticated reader gets them.

const std::string kAlice = "did:plc:2bdca6cd7faeaaafbabfc332", kBob = "did:plc:cbb637dcfcd2c6da635de6d6",
                  kCarol = "did:plc:4c26dda74c27dcdede5d27ac", kDan = "did:plc:ec4f2dbb3bb4aad555acdafb";
std::string Post(const std::string& did, const std::string& rkey) { return "at://" + did + "/app.bsky.feed.post/" + rkey; }

BatchResult ParseBluesky(const std::string& file, const std::vector<std::string>& uris, bool payloads = false) {
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < uris.size(); ++i) ids.push_back(-static_cast<std::int64_t>(i) - 1);
  PostKeys keys{uris, "bluesky"};
  keys.payloads = payloads;
  return BlueskyProvider("https://public.api.bsky.app").ParseAnswer(Ok(Fixture(file)), ids, keys);
}

TEST(FixturesBluesky, PlainPostsAndARepostWhichIsNoPost) {
  // A repost is an app.bsky.feed.repost record: getPosts leaves its URI out (and
  // parse_post_url() refuses it before it can be scheduled).
  const BatchResult r = ParseBluesky("bluesky/getPosts_plain.json",
                                     {Post(kBob, "3l6cmsx6xk22b"), "at://" + kDan + "/app.bsky.feed.repost/3l6cmz4wju22b",
                                      Post(kAlice, "3l6cmr5xvs22b"), Post(kAlice, "3l6cmpequ222b")});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 3u);
  const Observation* hey = Find(r, -4);
  const Observation* again = Find(r, -3);
  const Observation* bob = Find(r, -1);
  ASSERT_TRUE(hey && again && bob);
  // (repost, reply, like, quote, bookmark, views): Bluesky has no views.
  EXPECT_EQ(CountsOf(hey->metrics), (Counts{0, 0, 0, 0, 0, kNone}));
  EXPECT_EQ(CountsOf(again->metrics), (Counts{1, 2, 3, 0, 0, kNone}));
  EXPECT_EQ(CountsOf(bob->metrics), (Counts{0, 0, 0, 1, 0, kNone}));
  EXPECT_EQ(hey->created_ms, 1728727200000);    // createdAt 2024-10-12T10:00:00.000Z, before indexedAt
  EXPECT_EQ(again->created_ms, 1728727260000);  // "...10:01:00.000000Z": microseconds, as the seed writes them
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-2});
}

TEST(FixturesBluesky, AQuoteHasItsOwnCountsNotTheEmbeddedViews) {
  // Dan's post quotes Carol's (app.bsky.embed.record#view, likeCount 2 inside), which quotes Bob's.
  const std::string dan = Post(kDan, "3l6cmwjn3222b"), carol = Post(kCarol, "3l6cmuqfzc22b");
  BatchResult r = ParseBluesky("bluesky/getPosts_quote.json", {carol, dan});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, -2);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{1, 0, 0, 1, 0, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1728727440000);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-1});  // an embedded view is no answer for its post

  // Carol's own post: images and a quote of Bob's (recordWithMedia).
  r = ParseBluesky("bluesky/getPosts_record_with_media.json", {carol});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{0, 0, 2, 1, 0, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1728727380000);
}

TEST(FixturesBluesky, AReplyIsAPostOfItsOwn) {
  const BatchResult r = ParseBluesky("bluesky/getPosts_reply.json", {Post(kAlice, "3l6cn2436k22b")});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{1, 0, 0, 0, 0, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1728727560000);
  EXPECT_TRUE(r.omitted.empty());
}

TEST(FixturesBluesky, PayloadIsThePostViewItsCountsNoContent) {
  const std::string dan = Post(kDan, "3l6cmwjn3222b");
  const BatchResult r = ParseBluesky("bluesky/getPosts_quote.json", {dan}, true);
  ASSERT_EQ(r.observations.size(), 1u) << r.reason;
  const Observation& o = r.observations[0];
  EXPECT_TRUE(o.author.empty());  // the postView carries its author
  const rapidjson::Document view = Json(o.payload);
  EXPECT_EQ(view["uri"].GetString(), dan);
  EXPECT_STREQ(view["embed"]["$type"].GetString(), "app.bsky.embed.record#view");
  EXPECT_EQ(o.content_hash, ContentHash(o.payload, ""));

  const std::string body = Fixture("bluesky/getPosts_quote.json");
  const BlueskyProvider api("https://public.api.bsky.app");
  const auto hash_of = [&](const std::string& b) { return HashOfThePost(api, b, {-1}, PostKeys{{dan}, "bluesky"}); };
  // Dan's own repostCount (the only 1 at the post's level of indentation) moves: same content.
  EXPECT_EQ(hash_of(ReplacedOnce(body, "      \"repostCount\": 1,", "      \"repostCount\": 5,")), o.content_hash);
  EXPECT_NE(hash_of(ReplacedOnce(body, "is the best", "is the very best")), o.content_hash);
}

// ---------------------------------------------------------------------------------------------
// Mastodon: the documentation's Status examples (entities/Status.md, methods/statuses.md).

BatchResult ParseMastodon(const std::string& file, const std::vector<std::string>& ids, bool payloads = false) {
  std::vector<std::int64_t> claim;
  for (std::size_t i = 0; i < ids.size(); ++i) claim.push_back(-static_cast<std::int64_t>(i) - 1);
  PostKeys keys{ids, "mastodon:mastodon.social"};
  keys.payloads = payloads;
  return MastodonProvider().ParseAnswer(Ok(Fixture(file)), claim, keys);
}

TEST(FixturesMastodon, TheIndexExampleLeavesOutTheStatusThatIsNot) {
  const BatchResult r = ParseMastodon("mastodon/statuses_index.json", {"1", "2"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, -1);
  // (reblogs, replies, favourites, quotes: absent before 4.5, so not reported)
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{98, 7, 112, kNone, kNone, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1458139471580);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-2});
}

TEST(FixturesMastodon, EachDocumentedShapeThroughTheSingleStatusRoute) {
  struct Case {
    std::string file, id;
    Counts counts;
    std::int64_t created_ms;
  };
  const std::vector<Case> cases = {
      {"mastodon/status_card.json", "103270115826048975", {6, 5, 11, 2, kNone, kNone}, 1575776913901},
      {"mastodon/status_media.json", "103254193998341330", {0, 0, 0, kNone, kNone, kNone}, 1575533966052},
      {"mastodon/status_poll.json", "103254222827484720", {0, 0, 0, kNone, kNone, kNone}, 1575534405958},
      {"mastodon/status_edited.json", "108942703571991143", {1, 3, 6, kNone, kNone, kNone}, 1662333733704},
  };
  for (const Case& c : cases) {
    const BatchResult r = ParseMastodon(c.file, {c.id});
    ASSERT_TRUE(r.ok()) << c.file << ": " << r.reason;
    ASSERT_EQ(r.observations.size(), 1u) << c.file;
    EXPECT_EQ(CountsOf(r.observations[0].metrics), c.counts) << c.file;
    EXPECT_EQ(r.observations[0].created_ms, c.created_ms) << c.file;
  }
}

TEST(FixturesMastodon, ARebloggedStatusShowsItsOriginalsCounts) {
  // The boost 103254401326800919 (its own counts all 0) of 99734435964706331 (6 boosts, 5
  // replies, 11 favourites, 2 quotes): the reblog is tracked with the original's counts and its
  // own time; the original, nested, is no answer for its own id.
  BatchResult r = ParseMastodon("mastodon/status_reblog.json", {"103254401326800919"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{6, 5, 11, 2, kNone, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1575537129625);  // 2019-12-05T09:12:09.625Z, the boost's

  const std::string body = "[" + Fixture("mastodon/status_reblog.json") + "]";
  r = MastodonProvider().ParseAnswer(Ok(body), {-1, -2}, PostKeys{{"99734435964706331", "103254401326800919"}, "mastodon:mastodon.social"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, -2);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-1});

  // A `reblog` that is no Status object: the status counts its own.
  const std::string plain = ReplacedOnce(ReplacedOnce(Fixture("mastodon/status_card.json"), R"("reblog": null)",
                                                      R"("reblog": "not a status")"),
                                         R"("favourites_count": 11)", R"("favourites_count": 12)");
  r = MastodonProvider().ParseAnswer(Ok(plain), {-1}, PostKeys{{"103270115826048975"}, "mastodon:mastodon.social"});
  ASSERT_EQ(r.observations.size(), 1u) << r.reason;
  EXPECT_EQ(r.observations[0].metrics.like_count, 12);
}

TEST(FixturesMastodon, AReplyAndAContentWarningMatchedById) {
  const BatchResult r = ParseMastodon("mastodon/statuses_reply_and_cw.json", {"101068121469614510", "103189026958574542"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);
  const Observation* cw = Find(r, -1);
  const Observation* reply = Find(r, -2);
  ASSERT_TRUE(cw && reply);
  EXPECT_EQ(CountsOf(cw->metrics), (Counts{3, 2, 9, 0, kNone, kNone}));
  EXPECT_EQ(cw->created_ms, 1542177108000);
  EXPECT_EQ(CountsOf(reply->metrics), (Counts{1, 0, 4, 0, kNone, kNone}));
  EXPECT_EQ(reply->created_ms, 1574539596011);
  EXPECT_TRUE(r.omitted.empty());
}

TEST(FixturesMastodon, PayloadIsTheStatusAsSentItsCountsNoContent) {
  const BatchResult r = ParseMastodon("mastodon/status_reblog.json", {"103254401326800919"}, true);
  ASSERT_EQ(r.observations.size(), 1u) << r.reason;
  const Observation& o = r.observations[0];
  EXPECT_TRUE(o.author.empty());  // the Status carries its account
  const rapidjson::Document status = Json(o.payload);
  EXPECT_STREQ(status["id"].GetString(), "103254401326800919");
  EXPECT_STREQ(status["reblog"]["id"].GetString(), "99734435964706331");  // the original, inside
  EXPECT_EQ(o.content_hash, ContentHash(o.payload, ""));

  const std::string body = Fixture("mastodon/status_card.json");
  const MastodonProvider api;
  const auto hash_of = [&](const std::string& b) {
    return HashOfThePost(api, b, {-1}, PostKeys{{"103270115826048975"}, "mastodon:mastodon.social"});
  };
  const std::string card = hash_of(body);
  ASSERT_EQ(card.size(), 32u);
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("favourites_count": 11)", R"("favourites_count": 13)")), card);
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("followers_count": 322930)", R"("followers_count": 322931)")), card);
  EXPECT_NE(hash_of(ReplacedOnce(body, "one wrong digit on my sort code&quot;</p>", "one wrong digit&quot;</p>")), card);
}

// ---------------------------------------------------------------------------------------------
// The fuzz targets start from these answers: tests/fuzz/corpus/<target>/fixture_<name> is the
// fixture (compacted, after a "200 KEYS" line and no headers) for every fixture file.

TEST(FixturesFuzzSeeds, EveryFixtureIsASeedOfItsProvidersFuzzer) {
  int seeds = 0;
  for (const auto& [network, target] : std::vector<std::pair<std::string, std::string>>{
           {"x", ""}, {"bluesky", "bluesky_fuzz"}, {"mastodon", "mastodon_fuzz"}}) {
    for (const auto& entry : fs::directory_iterator(fs::path(TK_FIXTURES_DIR) / network)) {
      if (entry.path().extension() != ".json") continue;
      const std::string stem = entry.path().stem().string();
      const std::string t = !target.empty() ? target : stem.rfind("v1_1_", 0) == 0 ? "x_v1_1_fuzz" : "x_v2_fuzz";
      const fs::path seed = fs::path(TK_FUZZ_CORPUS_DIR) / t / ("fixture_" + stem);
      ASSERT_TRUE(fs::exists(seed)) << "no fuzz seed " << seed << " for " << entry.path();
      const std::string text = ReadFile(seed);
      const auto header_end = text.find("\n\n");
      ASSERT_NE(header_end, std::string::npos) << seed;
      EXPECT_EQ(text.rfind("200", 0), 0u) << seed;
      EXPECT_LE(text.size(), 8192u) << seed << " is longer than run.sh's -max_len";
      EXPECT_TRUE(Json(text.substr(header_end + 2)) == Json(ReadFile(entry.path()))) << seed << " differs from its fixture";
      ++seeds;
    }
  }
  EXPECT_EQ(seeds, 17);  // 5 X v2 + 1 X v1.1 + 4 Bluesky + 7 Mastodon
}

}  // namespace
}  // namespace tweetkeeper::worker
