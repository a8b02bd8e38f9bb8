// The mock's Mastodon servers: GET /api/v1/statuses (20 at most, 422 beyond), omissions, order,
// the single-status route, old (4.2) and locked (authorized fetch) servers, /api/v2/instance, and
// the X-RateLimit-* headers through MockApi; the Status and Account entities as the documentation
// (mastodon/documentation 2903485d, entities/*.md) lists them, reblogs, replies and the shares of
// what statuses hold; a server at the root of its own port (--mastodon-host).

#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/mock_api.hpp"
#include "mock_test_config.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1767225600000;   // 2026-01-01
const uint64_t kId = 113284726341234560;  // 2024-10-10

QueryParams Ids(int n, uint64_t first = kId) {
  QueryParams p;
  for (int i = 0; i < n; ++i) p.emplace("id[]", std::to_string(first + static_cast<uint64_t>(i)));
  return p;
}

TEST(MockMastodon, StatusesByIdsUpToTwenty) {
  auto r = MastodonApi("a.social", "/api/v1/statuses", Ids(3), false, NoFates(), kNow);
  ASSERT_EQ(r.status, 200) << r.body;
  rapidjson::Document doc;
  doc.Parse(r.body.c_str());
  ASSERT_TRUE(doc.IsArray());
  ASSERT_EQ(doc.Size(), 3u);
  EXPECT_EQ(std::string(doc[0]["id"].GetString()), std::to_string(kId + 2));  // not the request's order
  for (const char* count : {"replies_count", "reblogs_count", "favourites_count", "quotes_count"}) {
    EXPECT_TRUE(doc[0][count].IsInt64()) << count;
  }
  EXPECT_EQ(std::string(doc[0]["created_at"].GetString()).substr(0, 10), "2024-10-10");
  EXPECT_EQ(MastodonApi("a.social", "/api/v1/statuses", Ids(21), false, NoFates(), kNow).status, 422);
  EXPECT_EQ(MastodonApi("a.social", "/api/v1/statuses", Ids(21), false, NoFates(), kNow).body,
            R"({"error":"Mastodon::ValidationError"})");
}

TEST(MockMastodon, LeavesOutWhatItWillNotShowAndKnowsOldAndLockedServers) {
  MockConfig config = NoFates();
  config.deleted_every = 10;  // id % 10 == 7
  auto r = MastodonApi("a.social", "/api/v1/statuses", Ids(10), false, config, kNow);
  rapidjson::Document doc;
  doc.Parse(r.body.c_str());
  EXPECT_EQ(doc.Size(), 9u);
  EXPECT_EQ(
      MastodonApi("a.social", "/api/v1/statuses/" + std::to_string(kId + 7), QueryParams{}, false, config, kNow).status,
      404);
  EXPECT_EQ(MastodonApi("old.social", "/api/v1/statuses", Ids(2), false, config, kNow).status, 404);
  EXPECT_EQ(
      MastodonApi("old.social", "/api/v1/statuses/" + std::to_string(kId), QueryParams{}, false, config, kNow).status,
      200);
  EXPECT_NE(MastodonApi("old.social", "/api/v2/instance", QueryParams{}, false, config, kNow).body.find("4.2.10"),
            std::string::npos);
  r = MastodonApi("locked.social", "/api/v1/statuses", Ids(2), false, config, kNow);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body, R"({"error":"This API requires an authenticated user"})");
  EXPECT_EQ(MastodonApi("locked.social", "/api/v1/statuses", Ids(2), true, config, kNow).status, 200);
}

TEST(MockMastodon, RoutedUnderItsHostWithRateLimitHeaders) {
  MockConfig config = NoFates();
  config.mastodon_rate_limit = 1;
  MockApi api(config);
  HttpCall call{"GET", "/mastodon/a.social/api/v1/statuses", Ids(2), ""};
  HttpReply reply = api.Handle(call, kNow);
  EXPECT_EQ(reply.status, 200);
  auto header = [&](const char* name) {
    for (const auto& [k, v] : reply.headers)
      if (k == name) return v;
    return std::string("<absent>");
  };
  EXPECT_EQ(header("X-RateLimit-Limit"), "1");
  EXPECT_EQ(header("X-RateLimit-Reset"), "2026-01-01T00:05:00.000000Z");
  reply = api.Handle(call, kNow + 1000);
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(reply.body, R"({"error":"Too many requests"})");
  call.path = "/mastodon/b.social/api/v1/statuses";  // another server, another window
  EXPECT_EQ(api.Handle(call, kNow + 1000).status, 200);
}

enum class T { kString, kInt, kBool, kArray, kObject };

bool Is(const rapidjson::Value& v, T t) {
  switch (t) {
    case T::kString:
      return v.IsString();
    case T::kInt:
      return v.IsInt64();
    case T::kBool:
      return v.IsBool();
    case T::kArray:
      return v.IsArray();
    case T::kObject:
      return v.IsObject();
  }
  return false;
}

struct Attribute {
  const char* name;
  T type;
  bool nullable;
};

// The attributes the documentation lists without {{%optional%}}, for a 4.6 server, with their
// types (entities/Status.md, entities/Account.md).
const std::vector<Attribute> kStatus = {{"id", T::kString, false},
                                        {"uri", T::kString, false},
                                        {"created_at", T::kString, false},
                                        {"account", T::kObject, false},
                                        {"content", T::kString, false},
                                        {"visibility", T::kString, false},
                                        {"sensitive", T::kBool, false},
                                        {"spoiler_text", T::kString, false},
                                        {"media_attachments", T::kArray, false},
                                        {"mentions", T::kArray, false},
                                        {"tags", T::kArray, false},
                                        {"emojis", T::kArray, false},
                                        {"reblogs_count", T::kInt, false},
                                        {"favourites_count", T::kInt, false},
                                        {"quotes_count", T::kInt, false},
                                        {"replies_count", T::kInt, false},
                                        {"url", T::kString, true},
                                        {"in_reply_to_id", T::kString, true},
                                        {"in_reply_to_account_id", T::kString, true},
                                        {"reblog", T::kObject, true},
                                        {"poll", T::kObject, true},
                                        {"card", T::kObject, true},
                                        {"language", T::kString, true},
                                        {"edited_at", T::kString, true},
                                        {"quote", T::kObject, true},
                                        {"quote_approval", T::kObject, false},
                                        {"tagged_collections", T::kArray, false}};
const std::vector<Attribute> kAccount = {
    {"id", T::kString, false},           {"username", T::kString, false},      {"acct", T::kString, false},
    {"url", T::kString, true},           {"uri", T::kString, false},           {"display_name", T::kString, false},
    {"note", T::kString, false},         {"avatar", T::kString, false},        {"avatar_static", T::kString, false},
    {"header", T::kString, false},       {"header_static", T::kString, false}, {"locked", T::kBool, false},
    {"fields", T::kArray, false},        {"emojis", T::kArray, false},         {"bot", T::kBool, false},
    {"group", T::kBool, false},          {"discoverable", T::kBool, true},     {"indexable", T::kBool, false},
    {"created_at", T::kString, false},   {"last_status_at", T::kString, true}, {"statuses_count", T::kInt, false},
    {"followers_count", T::kInt, false}, {"following_count", T::kInt, false},  {"hide_collections", T::kBool, true},
    {"roles", T::kArray, true},          {"avatar_description", T::kString, false},
    {"header_description", T::kString, false}, {"show_media", T::kBool, false}, {"show_media_replies", T::kBool, false},
    {"show_featured", T::kBool, false},  {"feature_approval", T::kObject, false}};

std::string Json(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return buf.GetString();
}

void ExpectAttributes(const rapidjson::Value& object, const std::vector<Attribute>& attributes, const char* what) {
  ASSERT_TRUE(object.IsObject()) << what;
  for (const Attribute& a : attributes) {
    ASSERT_TRUE(object.HasMember(a.name)) << what << " lacks " << a.name << ": " << Json(object);
    const rapidjson::Value& v = object[a.name];
    EXPECT_TRUE(Is(v, a.type) || (a.nullable && v.IsNull())) << what << "." << a.name << " is " << Json(v);
  }
}

// Statuses of a.social posted every 7 minutes 13 seconds (and a few ms) back from kNow.
std::vector<uint64_t> RecentIds(int n) {
  std::vector<uint64_t> ids;
  for (int i = 1; i <= n; ++i) {
    const int64_t ms = kNow - i * 433'017;
    ids.push_back((static_cast<uint64_t>(ms) << 16) | static_cast<uint64_t>(i * 2654435761u % 65536));
  }
  return ids;
}

// Every status those ids give, fetched 20 at a time: the documents (each owns its array).
std::vector<rapidjson::Document> Fetch(const std::vector<uint64_t>& ids, const std::string& host = "a.social") {
  std::vector<rapidjson::Document> docs;
  for (size_t i = 0; i < ids.size(); i += 20) {
    QueryParams p;
    for (size_t j = i; j < ids.size() && j < i + 20; ++j) p.emplace("id[]", std::to_string(ids[j]));
    auto r = MastodonApi(host, "/api/v1/statuses", p, false, NoFates(), kNow);
    EXPECT_EQ(r.status, 200) << r.body;
    docs.emplace_back();
    docs.back().Parse(r.body.c_str());
    EXPECT_FALSE(docs.back().HasParseError()) << r.body;
  }
  return docs;
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(MockMastodonStatus, EveryDocumentedAttributeWithItsType) {
  int checked = 0;
  for (const auto& doc : Fetch(RecentIds(200))) {
    for (const auto& status : doc.GetArray()) {
      ExpectAttributes(status, kStatus, "Status");
      ExpectAttributes(status["account"], kAccount, "Account");
      if (status["reblog"].IsObject()) {
        ExpectAttributes(status["reblog"], kStatus, "Status.reblog");
        ExpectAttributes(status["reblog"]["account"], kAccount, "Status.reblog.account");
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 200);
}

// The time in the id, at millisecond resolution; and accounts' days at midnight.
TEST(MockMastodonStatus, CreatedAtCarriesTheIdsMilliseconds) {
  for (const auto& doc : Fetch(RecentIds(60))) {
    for (const auto& status : doc.GetArray()) {
      const uint64_t id = std::stoull(status["id"].GetString());
      const std::string created = status["created_at"].GetString();
      ASSERT_EQ(created.size(), 24u) << created;  // 2022-12-08T16:43:47.123Z
      std::tm tm{};
      ASSERT_NE(strptime(created.c_str(), "%Y-%m-%dT%H:%M:%S", &tm), nullptr) << created;
      const int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000 + std::stoi(created.substr(20, 3));
      EXPECT_EQ(ms, static_cast<int64_t>(id >> 16)) << created << " for " << id;
      EXPECT_EQ(created.back(), 'Z');
      const std::string joined = status["account"]["created_at"].GetString();
      EXPECT_EQ(joined.substr(10), "T00:00:00.000Z") << joined;
    }
  }
}

// A reblog counts nothing and says nothing; its `reblog` is an older status, itself no reblog,
// that the server answers alike when asked for it.
TEST(MockMastodonStatus, AReblogHoldsTheOriginalWithItsCounts) {
  int reblogs = 0;
  for (const auto& doc : Fetch(RecentIds(200))) {
    for (const auto& status : doc.GetArray()) {
      if (status["reblog"].IsNull()) continue;
      ++reblogs;
      for (const char* count : {"replies_count", "reblogs_count", "favourites_count", "quotes_count"}) {
        EXPECT_EQ(status[count].GetInt64(), 0) << count;
      }
      EXPECT_STREQ(status["content"].GetString(), "");
      const rapidjson::Value& original = status["reblog"];
      EXPECT_TRUE(original["reblog"].IsNull());
      EXPECT_LT(std::stoull(original["id"].GetString()), std::stoull(status["id"].GetString()));
      EXPECT_NE(std::string(original["content"].GetString()), "");
      auto direct = MastodonApi("a.social", std::string("/api/v1/statuses/") + original["id"].GetString(),
                                QueryParams{}, false, NoFates(), kNow);
      ASSERT_EQ(direct.status, 200);
      EXPECT_EQ(direct.body, Json(original));  // the same status, counts and all
    }
  }
  EXPECT_GT(reblogs, 10);
  EXPECT_LT(reblogs, 50);
}

// What statuses hold, in shares like a real server's: replies, images, polls, cards, edits,
// content warnings, other languages; mentions and tags as their content links them.
TEST(MockMastodonStatus, SharesOfWhatStatusesHoldAndContentMatchesMentionsAndTags) {
  std::map<std::string, int> seen;
  std::set<std::string> languages;
  std::map<std::string, std::string> accounts;  // id -> the account as sent (without last_status_at)
  for (const auto& doc : Fetch(RecentIds(400))) {
    for (const auto& status : doc.GetArray()) {
      if (!status["reblog"].IsNull()) continue;
      ++seen["statuses"];
      const std::string content = status["content"].GetString();
      EXPECT_EQ(content.substr(0, 3), "<p>");
      // The text is escaped as Mastodon's formatter does: an apostrophe only as &#39;.
      EXPECT_EQ(content.find('\''), std::string::npos) << content;
      seen["escaped apostrophes"] += Count(content, "&#39;") > 0;
      EXPECT_EQ(Count(content, "class=\"h-card\""), static_cast<int>(status["mentions"].Size())) << content;
      for (const auto& m : status["mentions"].GetArray()) {
        EXPECT_NE(content.find(std::string("\">@<span>") + m["acct"].GetString() + "</span></a></span>"),
                  std::string::npos)
            << content;
        EXPECT_NE(content.find(std::string("href=\"") + m["url"].GetString() + "\""), std::string::npos) << content;
      }
      EXPECT_EQ(Count(content, "class=\"mention hashtag\""), static_cast<int>(status["tags"].Size())) << content;
      for (const auto& t : status["tags"].GetArray()) {
        EXPECT_NE(content.find(std::string("#<span>") + t["name"].GetString() + "</span>"), std::string::npos);
      }
      languages.insert(status["language"].GetString());
      if (!status["in_reply_to_id"].IsNull()) {
        ++seen["replies"];
        auto parent = MastodonApi("a.social", std::string("/api/v1/statuses/") + status["in_reply_to_id"].GetString(),
                                  QueryParams{}, false, NoFates(), kNow + 3600'000);  // posted before; none hidden
        if (parent.status == 200) {
          rapidjson::Document p;
          p.Parse(parent.body.c_str());
          EXPECT_TRUE(p["reblog"].IsNull());
          EXPECT_STREQ(p["account"]["id"].GetString(), status["in_reply_to_account_id"].GetString());
        }
      }
      if (status["media_attachments"].Size() > 0) {
        ++seen["media"];
        const auto& image = status["media_attachments"][0];
        EXPECT_STREQ(image["type"].GetString(), "image");
        EXPECT_TRUE(image["meta"]["original"]["width"].IsInt());
        EXPECT_TRUE(image["meta"]["small"]["aspect"].IsNumber());
      }
      if (status["poll"].IsObject()) ++seen["polls"];
      if (status["card"].IsObject()) {
        ++seen["cards"];
        EXPECT_NE(content.find(std::string("href=\"") + status["card"]["url"].GetString()), std::string::npos);
      }
      if (status["edited_at"].IsString()) ++seen["edited"];
      if (status["spoiler_text"].GetStringLength() > 0) {
        ++seen["warned"];
        EXPECT_TRUE(status["sensitive"].GetBool());
      }
      if (status["emojis"].Size() > 0) ++seen["custom emoji"];
      for (unsigned char c : content) {
        if (c >= 0x80) {
          ++seen["non-ASCII"];
          break;
        }
      }
      rapidjson::Document account;
      account.CopyFrom(status["account"], account.GetAllocator());
      account.RemoveMember("last_status_at");
      auto [it, fresh] = accounts.emplace(account["id"].GetString(), Json(account));
      if (!fresh) {
        ++seen["authors met again"];
        EXPECT_EQ(it->second, Json(account));
      }
    }
  }
  for (const char* kind :
       {"replies", "media", "polls", "cards", "edited", "warned", "custom emoji", "non-ASCII", "authors met again"}) {
    EXPECT_GT(seen[kind], 2) << kind;
    EXPECT_LT(seen[kind], seen["statuses"] / 2) << kind;
  }
  EXPECT_GE(languages.size(), 4u);
  EXPECT_GT(seen["escaped apostrophes"], 0);  // the check above met an apostrophe
}

// 4.2 had no quotes_count, quote or quote_approval, nor indexable and hide_collections, nor 4.6's
// tagged_collections and feature_approval.
TEST(MockMastodonStatus, AnOldServerSendsWhat42Sent) {
  const std::string id = std::to_string(RecentIds(1)[0]);
  rapidjson::Document old_status, new_status;
  old_status.Parse(MastodonApi("old.social", "/api/v1/statuses/" + id, {}, false, NoFates(), kNow).body.c_str());
  new_status.Parse(MastodonApi("a.social", "/api/v1/statuses/" + id, {}, false, NoFates(), kNow).body.c_str());
  for (const char* key : {"quotes_count", "quote", "quote_approval", "tagged_collections"}) {
    EXPECT_FALSE(old_status.HasMember(key)) << key;
    EXPECT_TRUE(new_status.HasMember(key)) << key;
  }
  const rapidjson::Value& old_account =
      old_status["reblog"].IsObject() ? old_status["reblog"]["account"] : old_status["account"];
  EXPECT_FALSE(old_account.HasMember("indexable"));
  EXPECT_FALSE(old_account.HasMember("hide_collections"));
  EXPECT_FALSE(old_account.HasMember("feature_approval"));
  EXPECT_TRUE(new_status["account"].HasMember("indexable"));
  // An anonymous caller may not feature anyone (Mastodon 4.6's rule for no account: denied).
  const rapidjson::Value& approval = new_status["account"]["feature_approval"];
  EXPECT_STREQ(approval["current_user"].GetString(), "denied");
  EXPECT_TRUE(approval["automatic"].IsArray() && approval["manual"].IsArray() && approval["manual"].Empty());
}

TEST(MockMastodonHost, ReadsHostEqualsPortAndRefusesTheRest) {
  std::string error;
  auto ok = ParseMastodonHost("a.social=0", &error);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->first, "a.social");
  EXPECT_EQ(ok->second, 0);
  EXPECT_EQ(ParseMastodonHost("old.social=65535", &error)->second, 65535);
  for (const char* bad : {"a.social", "=80", "a.social=", "a.social=x", "a.social=-1", "a.social=65536", "a social=1",
                          "a/b=1", ".a=1", "a.social=1=2", "é.social=1", "a.social=99999999999999999999"}) {
    error.clear();
    EXPECT_FALSE(ParseMastodonHost(bad, &error)) << bad;
    EXPECT_NE(error.find("--mastodon-host"), std::string::npos) << bad;
  }
}

// At its own port's root a server answers as under /mastodon/<host>/, in the same window.
TEST(MockMastodonHost, AtItsRootAServerIsTheOneUnderItsPrefix) {
  MockConfig config = NoFates();
  config.mastodon_rate_limit = 2;
  MockApi api(config);
  HttpCall root{"GET", "/api/v1/statuses", Ids(2), ""};
  HttpReply reply = api.HandleMastodonServer("a.social", root, kNow);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, MastodonApi("a.social", "/api/v1/statuses", Ids(2), false, config, kNow).body);
  bool limit_header = false;
  for (const auto& [k, v] : reply.headers) limit_header = limit_header || (k == "X-RateLimit-Remaining" && v == "1");
  EXPECT_TRUE(limit_header);
  HttpCall prefixed{"GET", "/mastodon/a.social/api/v1/statuses", Ids(2), ""};
  EXPECT_EQ(api.Handle(prefixed, kNow).status, 200);
  EXPECT_EQ(api.HandleMastodonServer("a.social", root, kNow).status, 429);  // the window is the server's
  EXPECT_EQ(api.HandleMastodonServer("b.social", root, kNow).status, 200);
  for (HttpCall other : {HttpCall{"GET", "/2/tweets", Ids(1), "Bearer t"}, HttpCall{"POST", "/api/v1/statuses", {}, ""},
                         HttpCall{"GET", "/healthz", {}, ""}}) {
    reply = api.HandleMastodonServer("c.social", other, kNow);
    EXPECT_EQ(reply.status, 404) << other.method << " " << other.path;
    EXPECT_EQ(reply.body, R"({"error":"Record not found"})");
  }
  EXPECT_EQ(api.HandleMastodonServer("locked.social", root, kNow).status, 401);
  root.authorization = "Bearer t";
  EXPECT_EQ(api.HandleMastodonServer("locked.social", root, kNow).status, 200);
}

}  // namespace
}  // namespace tweetkeeper::mock
