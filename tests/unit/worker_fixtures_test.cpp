// The providers on answers shaped as the networks document them: every file of tests/unit/fixtures/
// (our own answers, each in the shape of a documented one: fixtures/README.md) through its provider's parser, the payload hashing
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
// X API v2: GET /2/tweets, in the shapes of the data dictionary's example payloads.

constexpr std::int64_t kReply = 1931211065865861724, kReplyParent = 1931210841210567259;
constexpr std::int64_t kRetweet = 1864175323864390235, kRetweeted = 1864167264911985242;
constexpr std::int64_t kQuote = 1962723587437570651, kQuoted = 1961335172561255002;
constexpr std::int64_t kMedia = 1927917265349405275;

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
      // A reply: its own counts (its parent's: 14/12/46/0).
      {"x/v2_reply.json", kReply, kReplyParent, {14, 6, 38, 5, kNone, kNone}},
      // A retweet: X gives it the original's retweet_count (28) and no likes, replies or quotes
      // of its own (the original's: 28/3/99/10, tracked by its own id).
      {"x/v2_retweet.json", kRetweet, kRetweeted, {28, 0, 0, 0, kNone, kNone}},
      // A quote: its own counts (the quoted post's: 13/5/47/7).
      {"x/v2_quote.json", kQuote, kQuoted, {12, 7, 42, 3, kNone, kNone}},
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
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{1314, 236, 3904, 458, kNone, kNone}));

  r = ParseX("x/v2_partial_errors.json", {564, 792});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, 564);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{kNone, kNone, kNone, kNone, kNone, kNone}));  // not asked for
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, 792);
  EXPECT_EQ(r.problems[0].type, "resource-not-found");
  EXPECT_EQ(r.problems[0].detail, "Could not find tweet with id: [792].");
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
  EXPECT_STREQ(tweet["id"].GetString(), "1864175323864390235");
  EXPECT_STREQ(tweet["referenced_tweets"][0]["type"].GetString(), "retweeted");
  EXPECT_STREQ(author["id"].GetString(), "2548669468");  // ExampleDevs, who retweeted; not tomasbuilds
  EXPECT_STREQ(author["username"].GetString(), "ExampleDevs");
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
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("like_count": 38)", R"("like_count": 39)")), original);
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("followers_count": 704130)", R"("followers_count": 800000)")), original);
  EXPECT_NE(hash_of(ReplacedOnce(body, "flu season in the city", "flu season in the county")), original);
  EXPECT_NE(hash_of(ReplacedOnce(body, R"("name": "Example Devs")", R"("name": "Example Dev Team")")), original);

  // A claim that says this payload is kept gets no payload back for a count that moved, and the
  // new one for an edited text.
  const std::unordered_map<std::int64_t, std::string> kept{{kReply, original}};
  keys.kept = &kept;
  BatchResult r = api.ParseAnswer(Ok(ReplacedOnce(body, R"("reply_count": 6)", R"("reply_count": 7)")), {kReply}, keys);
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].metrics.reply_count, 7);
  EXPECT_TRUE(r.observations[0].payload.empty());
  r = api.ParseAnswer(Ok(ReplacedOnce(body, "flu season in the city", "flu season in the county")), {kReply}, keys);
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_NE(r.observations[0].payload.find("flu season in the county"), std::string::npos);
}

TEST(FixturesX, Twarc2ExportOfTheFixtureTweets) {
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
  EXPECT_STREQ(line["data"][0]["id"].GetString(), "1931211065865861724");
  EXPECT_STREQ(line["data"][1]["referenced_tweets"][0]["type"].GetString(), "retweeted");
  EXPECT_STREQ(line["data"][2]["referenced_tweets"][0]["type"].GetString(), "quoted");
  EXPECT_EQ(line["data"][2]["public_metrics"]["like_count"].GetInt(), 42);  // as the API gave it
  ASSERT_EQ(line["includes"]["users"].Size(), 1u);  // one author, ExampleDevs, once
  EXPECT_STREQ(line["includes"]["users"][0]["username"].GetString(), "ExampleDevs");
  // Non-ASCII as \uXXXX, as twarc2 writes it: the reply's text has U+1F4CA.
  EXPECT_NE(page.line.find(R"(\uD83D\uDCCA)"), std::string::npos);
  EXPECT_EQ(page.line.find("\xF0\x9F\x93\x8A"), std::string::npos);
}

// X API v1.1: statuses/lookup (map=true) around a quote Tweet shaped as the Enterprise data dictionary's.

TEST(FixturesXV11, AQuoteHasItsOwnCountsAndNullIsAProblem) {
  const XV11Provider api("https://api.x.com");
  const BatchResult r =
      api.ParseAnswer(Ok(Fixture("x/v1_1_lookup_quote.json")), {1715584543378782810, 1715584543378782811, 1713902114213522011});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, 1715584543378782810);
  // retweet_count 0, favorite_count 3: its own; the quoted_status's 6 and 10 are not.
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{0, kNone, 3, kNone, kNone, kNone}));
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].id, 1715584543378782811);
  EXPECT_EQ(r.problems[0].type, kV11MissingProblem);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{1713902114213522011});  // only nested: no answer
}

// ---------------------------------------------------------------------------------------------
// Bluesky: getPosts answers in the shape of the AppView's own test snapshot (posts.test.ts,
// "fetches posts"), as an unauthenticated reader gets them.

const std::string kWren = "did:plc:xifhcvgrx4u7sqtkc2n5jmpb", kOtto = "did:plc:nuy24sxzyvcwlcwdok3yi3ll",
                  kInes = "did:plc:sd2ly765gytneob3eb3uvran", kPablo = "did:plc:2cp3smgenvpdur5gdzrsm7kk";
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
                                     {Post(kOtto, "3mlvfwdtdk23y"), "at://" + kPablo + "/app.bsky.feed.repost/3mlvg4jkvu23y",
                                      Post(kWren, "3mlvfukmbs23y"), Post(kWren, "3mlvfsrfa223y")});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 3u);
  const Observation* first = Find(r, -4);
  const Observation* again = Find(r, -3);
  const Observation* otto = Find(r, -1);
  ASSERT_TRUE(first && again && otto);
  // (repost, reply, like, quote, bookmark, views): Bluesky has no views.
  EXPECT_EQ(CountsOf(first->metrics), (Counts{0, 0, 0, 0, 0, kNone}));
  EXPECT_EQ(CountsOf(again->metrics), (Counts{3, 5, 6, 0, 0, kNone}));
  EXPECT_EQ(CountsOf(otto->metrics), (Counts{0, 0, 0, 3, 0, kNone}));
  EXPECT_EQ(first->created_ms, 1778850656000);  // createdAt 2026-05-15T13:10:56.000Z, before indexedAt
  EXPECT_EQ(again->created_ms, 1778850716000);  // "...13:11:56.000000Z": microseconds
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-2});
}

TEST(FixturesBluesky, AQuoteHasItsOwnCountsNotTheEmbeddedViews) {
  // Pablo's post quotes Ines's (app.bsky.embed.record#view, likeCount 5 inside), which quotes Otto's.
  const std::string pablo = Post(kPablo, "3mlvfzwbh223y"), ines = Post(kInes, "3mlvfy52fc23y");
  BatchResult r = ParseBluesky("bluesky/getPosts_quote.json", {ines, pablo});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, -2);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{3, 0, 0, 3, 0, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1778850896000);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-1});  // an embedded view is no answer for its post

  // Ines's own post: images and a quote of Otto's (recordWithMedia).
  r = ParseBluesky("bluesky/getPosts_record_with_media.json", {ines});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{0, 0, 5, 3, 0, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1778850836000);
}

TEST(FixturesBluesky, AReplyIsAPostOfItsOwn) {
  const BatchResult r = ParseBluesky("bluesky/getPosts_reply.json", {Post(kWren, "3mlvg5ipkk23y")});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{3, 0, 0, 0, 0, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1778851016000);
  EXPECT_TRUE(r.omitted.empty());
}

TEST(FixturesBluesky, PayloadIsThePostViewItsCountsNoContent) {
  const std::string pablo = Post(kPablo, "3mlvfzwbh223y");
  const BatchResult r = ParseBluesky("bluesky/getPosts_quote.json", {pablo}, true);
  ASSERT_EQ(r.observations.size(), 1u) << r.reason;
  const Observation& o = r.observations[0];
  EXPECT_TRUE(o.author.empty());  // the postView carries its author
  const rapidjson::Document view = Json(o.payload);
  EXPECT_EQ(view["uri"].GetString(), pablo);
  EXPECT_STREQ(view["embed"]["$type"].GetString(), "app.bsky.embed.record#view");
  EXPECT_EQ(o.content_hash, ContentHash(o.payload, ""));

  const std::string body = Fixture("bluesky/getPosts_quote.json");
  const BlueskyProvider api("https://public.api.bsky.app");
  const auto hash_of = [&](const std::string& b) { return HashOfThePost(api, b, {-1}, PostKeys{{pablo}, "bluesky"}); };
  // Pablo's own repostCount (the only one at the post's level of indentation) moves: same content.
  EXPECT_EQ(hash_of(ReplacedOnce(body, "      \"repostCount\": 3,", "      \"repostCount\": 8,")), o.content_hash);
  EXPECT_NE(hash_of(ReplacedOnce(body, "bakes the best", "bakes the very best")), o.content_hash);
}

// ---------------------------------------------------------------------------------------------
// Mastodon: Statuses in the shapes of the documentation's examples (entities/Status.md,
// methods/statuses.md).

BatchResult ParseMastodon(const std::string& file, const std::vector<std::string>& ids, bool payloads = false) {
  std::vector<std::int64_t> claim;
  for (std::size_t i = 0; i < ids.size(); ++i) claim.push_back(-static_cast<std::int64_t>(i) - 1);
  PostKeys keys{ids, "mastodon:mastodon.example"};
  keys.payloads = payloads;
  return MastodonProvider().ParseAnswer(Ok(Fixture(file)), claim, keys);
}

TEST(FixturesMastodon, TheIndexExampleLeavesOutTheStatusThatIsNot) {
  const BatchResult r = ParseMastodon("mastodon/statuses_index.json", {"102033319833109411", "102033319898645412"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, -1);
  // (reblogs, replies, favourites, quotes: absent before 4.5, so not reported)
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{136, 12, 155, kNone, kNone, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1556904903680);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-2});
}

TEST(FixturesMastodon, EachDocumentedShapeThroughTheSingleStatusRoute) {
  struct Case {
    std::string file, id;
    Counts counts;
    std::int64_t created_ms;
  };
  const std::vector<Case> cases = {
      {"mastodon/status_card.json", "109742807184164245", {10, 9, 17, 5, kNone, kNone}, 1674542346001},
      {"mastodon/status_media.json", "109726885356469896", {0, 0, 0, kNone, kNone, kNone}, 1674299398152},
      {"mastodon/status_poll.json", "109726914185571434", {0, 0, 0, kNone, kNone, kNone}, 1674299838058},
      {"mastodon/status_edited.json", "115415394930073661", {3, 6, 10, kNone, kNone, kNone}, 1761099165804},
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
  // The boost 109727092684896845 (its own counts all 0) of 106207127322788929 (10 boosts, 9
  // replies, 17 favourites, 5 quotes): the reblog is tracked with the original's counts and its
  // own time; the original, nested, is no answer for its own id.
  BatchResult r = ParseMastodon("mastodon/status_reblog.json", {"109727092684896845"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(CountsOf(r.observations[0].metrics), (Counts{10, 9, 17, 5, kNone, kNone}));
  EXPECT_EQ(r.observations[0].created_ms, 1674302561725);  // 2023-01-21T12:02:41.725Z, the boost's

  const std::string body = "[" + Fixture("mastodon/status_reblog.json") + "]";
  r = MastodonProvider().ParseAnswer(Ok(body), {-1, -2}, PostKeys{{"106207127322788929", "109727092684896845"}, "mastodon:mastodon.example"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].id, -2);
  EXPECT_EQ(r.omitted, std::vector<std::int64_t>{-1});

  // A `reblog` that is no Status object: the status counts its own.
  const std::string plain = ReplacedOnce(ReplacedOnce(Fixture("mastodon/status_card.json"), R"("reblog": null)",
                                                      R"("reblog": "not a status")"),
                                         R"("favourites_count": 17)", R"("favourites_count": 18)");
  r = MastodonProvider().ParseAnswer(Ok(plain), {-1}, PostKeys{{"109742807184164245"}, "mastodon:mastodon.example"});
  ASSERT_EQ(r.observations.size(), 1u) << r.reason;
  EXPECT_EQ(r.observations[0].metrics.like_count, 18);
}

TEST(FixturesMastodon, AReplyAndAContentWarningMatchedById) {
  const BatchResult r = ParseMastodon("mastodon/statuses_reply_and_cw.json", {"107540812827698164", "109661718316702100"});
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(r.observations.size(), 2u);
  const Observation* cw = Find(r, -1);
  const Observation* reply = Find(r, -2);
  ASSERT_TRUE(cw && reply);
  EXPECT_EQ(CountsOf(cw->metrics), (Counts{6, 5, 14, 0, kNone, kNone}));
  EXPECT_EQ(cw->created_ms, 1640942540100);
  EXPECT_EQ(CountsOf(reply->metrics), (Counts{3, 0, 7, 0, kNone, kNone}));
  EXPECT_EQ(reply->created_ms, 1673305028111);
  EXPECT_TRUE(r.omitted.empty());
}

TEST(FixturesMastodon, PayloadIsTheStatusAsSentItsCountsNoContent) {
  const BatchResult r = ParseMastodon("mastodon/status_reblog.json", {"109727092684896845"}, true);
  ASSERT_EQ(r.observations.size(), 1u) << r.reason;
  const Observation& o = r.observations[0];
  EXPECT_TRUE(o.author.empty());  // the Status carries its account
  const rapidjson::Document status = Json(o.payload);
  EXPECT_STREQ(status["id"].GetString(), "109727092684896845");
  EXPECT_STREQ(status["reblog"]["id"].GetString(), "106207127322788929");  // the original, inside
  EXPECT_EQ(o.content_hash, ContentHash(o.payload, ""));

  const std::string body = Fixture("mastodon/status_card.json");
  const MastodonProvider api;
  const auto hash_of = [&](const std::string& b) {
    return HashOfThePost(api, b, {-1}, PostKeys{{"109742807184164245"}, "mastodon:mastodon.example"});
  };
  const std::string card = hash_of(body);
  ASSERT_EQ(card.size(), 32u);
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("favourites_count": 17)", R"("favourites_count": 19)")), card);
  EXPECT_EQ(hash_of(ReplacedOnce(body, R"("followers_count": 442416)", R"("followers_count": 442417)")), card);
  EXPECT_NE(hash_of(ReplacedOnce(body, "tools as well as books&quot;</p>", "tools&quot;</p>")), card);
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

// ---------------------------------------------------------------------------------------------
// The content hash of every whole fixture (as the value of one key, so that an array answer is
// hashed too), and of an object of the awkward cases (duplicate keys, numbers, escapes, empty
// key, nested count keys), pinned: the values the worker computed before its hashing was made
// faster (issue 49). Making it faster must not change a hash: a payload stored before would then
// look changed. (payloads.sh and 22_payloads.sql tie the worker's hash to PostgreSQL's.)

TEST(FixturesContentHash, EveryFixtureHashesAsPinned) {
  const std::vector<std::pair<std::string, std::string>> pinned = {
      {"bluesky/getPosts_plain.json", "20b3a190668a1106f112b3e59650307d"},
      {"bluesky/getPosts_quote.json", "f675fc94bce51bd4155a1ec500ad95c1"},
      {"bluesky/getPosts_record_with_media.json", "0db3f726745e928f65314b88c4e48fdc"},
      {"bluesky/getPosts_reply.json", "5b460f573f1cbf802d576eff0e4d056c"},
      {"mastodon/status_card.json", "6c73c2d12bca4104dc24e55c9a41a9ff"},
      {"mastodon/status_edited.json", "e859e593799f46ae36a3238efdbc15bb"},
      {"mastodon/status_media.json", "6f029af8b5cdad993b7a759e6d4742ba"},
      {"mastodon/status_poll.json", "4f36dd2047f2f833f4d9b3bc11b18d3a"},
      {"mastodon/status_reblog.json", "574f416c67a63c3e99ecbb1e6e726581"},
      {"mastodon/statuses_index.json", "008105ca3e94e88dc4b27a75d27b523f"},
      {"mastodon/statuses_reply_and_cw.json", "488ead5e4562c27c45c8fb1a7765e7ac"},
      {"x/v1_1_lookup_quote.json", "9932f585d5486bee1c08987ea630cc27"},
      {"x/v2_media.json", "1d329fa6fd59bb80e526b47010e87da8"},
      {"x/v2_partial_errors.json", "c9b1d166ac21c2acfc2139758f627037"},
      {"x/v2_quote.json", "db1c56d5079d46c34061e4d5a5613af2"},
      {"x/v2_reply.json", "e0d4c5edb3f03a5a8713f4f049601c3b"},
      {"x/v2_retweet.json", "c449ff71d380a1b9cd3bdea23d025f3b"}};
  for (const auto& [name, hash] : pinned) {
    EXPECT_EQ(ContentHash("{\"answer\": " + Fixture(name) + "}", ""), hash) << name;
  }
  const std::string awkward =
      R"({"f":[0.1,-2.5e-7,1E3,12345678901234567890,-9223372036854775808,3.0,-0],)"
      R"("s":"\u0000\u001f\"\\\/\b\f\n\r\té\ud83d\ude00\u007f","b":2,"a":1,"b":{"viewer":{},"bb":[]},)"
      R"("":null,"t":true,"x":false,"likeCount":1,"ab":{},"aa":[{}]})";
  EXPECT_EQ(ContentHash(awkward, R"({"z":"1","followers_count":2})"), "cd73080ed1bad397a73cdabd644cf858");
}

}  // namespace
}  // namespace tweetkeeper::worker
