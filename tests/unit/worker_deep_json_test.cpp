// Answers nested ten million levels deep, to every provider, to the Mastodon version check, to the
// refusal classifier, to the payload hash and to the importer: each refused with a clear reason,
// none crashing (before json/bounded.hpp, RapidJSON's recursive destructor and Accept() overflowed
// the stack at about 100,000 levels: SIGSEGV). And what real answers hold still parses.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ids/id_reader.hpp"
#include "json/bounded.hpp"
#include "provider/answer_status.hpp"
#include "provider/bluesky.hpp"
#include "provider/content_hash.hpp"
#include "provider/mastodon.hpp"
#include "provider/x_v1_1.hpp"
#include "provider/x_v2.hpp"
#include "worker_test_answers.hpp"

namespace tweetkeeper::worker {
namespace {

constexpr std::size_t kDeep = 10'000'000;

// {"<member>": [[[[ ... ]]]]}: a count ten million arrays deep, closed or not.
std::string Deep(const std::string& member, bool closed = true) {
  std::string s = "{\"" + member + "\":";
  s.append(kDeep, '[');
  if (closed) s.append(kDeep, ']');
  s += "}";
  return s;
}

TEST(DeepJson, DepthIsCountedOutsideStringsOnly) {
  EXPECT_EQ(json::TooDeepAt(R"({"a":[{"b":"[[[[{{{{\"[["}]})", 3), std::nullopt);
  EXPECT_EQ(json::TooDeepAt(R"({"a":[{"b":1}]})", 2), std::optional<std::size_t>(6));
  EXPECT_EQ(json::TooDeepAt(std::string(64, '[') + std::string(64, ']')), std::nullopt);
  EXPECT_EQ(json::TooDeepAt(std::string(65, '[')), std::optional<std::size_t>(64));
  rapidjson::Document doc;
  EXPECT_EQ(json::Parse(doc, R"({"ok":[1,2,{"x":"y"}]})"), "");
  EXPECT_EQ(json::Parse(doc, "{\"a\":"), "Invalid value. at offset 5");
  EXPECT_EQ(json::Parse(doc, std::string(100, '[')), "nested deeper than 64 levels at offset 64");
}

TEST(DeepJson, EveryProviderRefusesItAsUnparsable) {
  const XV2Provider x("https://api.x.com");
  BatchResult r = x.ParseAnswer(Ok("{\"data\":[{\"id\":\"1\",\"public_metrics\":" + Deep("like_count") + "}]}"), {1});
  EXPECT_EQ(r.failure, FailureKind::kUnparsable);
  EXPECT_NE(r.reason.find("nested deeper than 64 levels"), std::string::npos) << r.reason.substr(0, 200);

  const XV11Provider v11("https://api.x.com");
  r = v11.ParseAnswer(Ok(Deep("id")), {1});
  EXPECT_EQ(r.failure, FailureKind::kUnparsable);
  EXPECT_NE(r.reason.find("nested deeper than 64 levels"), std::string::npos) << r.reason.substr(0, 200);

  const BlueskyProvider bluesky("https://public.api.bsky.app/");
  const PostKeys bsky_keys{{"at://did:plc:abc/app.bsky.feed.post/3k"}, "bluesky"};
  r = bluesky.ParseAnswer(Ok("{\"posts\":[{\"uri\":\"at://did:plc:abc/app.bsky.feed.post/3k\",\"likeCount\":" +
                             Deep("x", false)),
                          {-1}, bsky_keys);
  EXPECT_EQ(r.failure, FailureKind::kUnparsable);
  EXPECT_NE(r.reason.find("nested deeper than 64 levels"), std::string::npos) << r.reason.substr(0, 200);

  const MastodonProvider mastodon;
  const PostKeys masto_keys{{"113284726341234567"}, "mastodon:a.social"};
  r = mastodon.ParseAnswer(Ok("[{\"id\":\"113284726341234567\",\"favourites_count\":" + Deep("x") + "}]"), {-1},
                           masto_keys);
  EXPECT_EQ(r.failure, FailureKind::kUnparsable);
  EXPECT_NE(r.reason.find("nested deeper than 64 levels"), std::string::npos) << r.reason.substr(0, 200);
  EXPECT_EQ(MastodonProvider::OldServer(Ok(Deep("version"))), std::nullopt);
}

TEST(DeepJson, RefusalsPayloadsAndTheImporter) {
  // A deep error body is no JSON error object: classified by its status alone.
  EXPECT_EQ(ClassifyFailure(429, Deep("title")), ClassifyFailure(429, "not json"));
  EXPECT_EQ(PayloadContent(Deep("text"), ""), std::nullopt);
  EXPECT_EQ(PayloadContent(R"({"id":"1","text":"hi"})", Deep("name")), std::nullopt);
  importer::IdReader reader(importer::Format::kJsonl);
  const importer::LineResult line = reader.Parse(Deep("data"), 0);
  EXPECT_TRUE(line.tweets.empty());
  EXPECT_NE(line.error.find("nested deeper than 64 levels"), std::string::npos) << line.error.substr(0, 200);
}

}  // namespace
}  // namespace tweetkeeper::worker
