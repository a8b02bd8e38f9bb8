#include "mock_api/lookup_endpoint.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "mock_api/engagement.hpp"
#include "mock_api/problems.hpp"
#include "mock_api/post_text.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {

namespace {

constexpr size_t kMaxIds = 100;

EndpointReply Error(int code, const char* message) {
  EndpointReply reply;
  reply.status = 400;
  reply.body = V1Error(code, message);
  return reply;
}

bool IsTweetId(const std::string& s) {
  return !s.empty() && s.size() <= 19 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void WriteString(JsonWriter& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

bool Flag(const QueryParams& params, const char* name, bool otherwise) {
  const auto it = params.find(name);
  if (it == params.end()) return otherwise;
  return it->second == "true" || it->second == "1" || it->second == "t";
}

// How statuses/lookup was asked: tweet_mode=extended gives the whole text as full_text (with
// display_text_range), the default ("compat") a text of at most 140 characters; trim_user gives
// the user's id only; include_entities=false leaves entities out.
struct V1Shape {
  bool extended = false;
  bool trim_user = false;
  bool entities = true;
};

void Null(JsonWriter& w, const char* key) {
  w.Key(key);
  w.Null();
}

void Indices(JsonWriter& w, int start, int end) {
  w.Key("indices");
  w.StartArray();
  w.Int(start);
  w.Int(end);
  w.EndArray();
}

// The first `n` code points of UTF-8 text.
std::string FirstCodePoints(const std::string& s, size_t n) {
  size_t i = 0;
  for (size_t seen = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && seen++ == n) break;
  }
  return s.substr(0, i);
}

// The v1.1 user object (the members the API sends for a public account, as in X's data
// dictionary), of the same user v2's includes.users gives.
void WriteUser(JsonWriter& w, uint64_t user_id, bool trim) {
  const XUser u = XUserOf(user_id);
  const std::string id = std::to_string(u.id);
  w.StartObject();
  w.Key("id");
  w.Uint64(u.id);
  w.Key("id_str");
  WriteString(w, id);
  if (trim) {
    w.EndObject();
    return;
  }
  w.Key("name");
  WriteString(w, u.name);
  w.Key("screen_name");
  WriteString(w, u.username);
  w.Key("location");
  WriteString(w, "");
  w.Key("description");
  WriteString(w, u.description);
  Null(w, "url");
  w.Key("entities");
  w.StartObject();
  w.Key("description");
  w.StartObject();
  w.Key("urls");
  w.StartArray();
  w.EndArray();
  w.EndObject();
  w.EndObject();
  w.Key("protected");
  w.Bool(false);
  WriteCounts(w, {{"followers_count", u.followers}, {"friends_count", u.following}, {"listed_count", u.listed}});
  w.Key("created_at");
  WriteString(w, FormatV1CreatedAt(u.created_ms));
  WriteCounts(w, {{"favourites_count", static_cast<int64_t>(u.id % 1013) * 7}});
  Null(w, "utc_offset");
  Null(w, "time_zone");
  w.Key("geo_enabled");
  w.Bool(false);
  w.Key("verified");
  w.Bool(false);
  WriteCounts(w, {{"statuses_count", u.tweets}});
  Null(w, "lang");
  w.Key("profile_image_url_https");
  WriteString(w, "https://pbs.twimg.com/profile_images/" + id + "/mock_normal.jpg");
  w.Key("default_profile");
  w.Bool(true);
  w.Key("default_profile_image");
  w.Bool(false);
  Null(w, "following");
  Null(w, "follow_request_sent");
  Null(w, "notifications");
  w.Key("translator_type");
  WriteString(w, "none");
  w.Key("withheld_in_countries");
  w.StartArray();
  w.EndArray();
  w.EndObject();
}

// A tweet as statuses/lookup gives it (X's data dictionary, "Tweet object"), its text, entities
// and user those of /2/tweets. A mock tweet is no reply, quote or retweet and has no place.
void WriteTweet(JsonWriter& w, uint64_t id, const MockConfig& config, int64_t now_ms, const V1Shape& shape) {
  const std::string id_str = std::to_string(id);
  const PublicMetrics m = Engagement(config, Network::kX, id, AgeSeconds(id, now_ms));
  const PostText said = MockPostText(id);
  const int length = static_cast<int>(CodePoints(said.text));
  w.StartObject();
  if (id == 20) {
    w.Key("created_at");
    WriteString(w, "Tue Mar 21 20:50:14 +0000 2006");
  } else if (!PredatesSnowflake(id)) {  // an older id encodes no time: none is invented
    w.Key("created_at");
    WriteString(w, FormatV1CreatedAt(SnowflakeMillis(id)));
  }
  w.Key("id");
  w.Uint64(id);
  w.Key("id_str");
  WriteString(w, id_str);
  // compat: a text longer than 140 characters is cut, with an ellipsis and a link to the whole.
  const bool cut = !shape.extended && length > 140;
  if (shape.extended) {
    w.Key("full_text");
    WriteString(w, said.text);
    w.Key("display_text_range");
    w.StartArray();
    w.Int(0);
    w.Int(length);
    w.EndArray();
  } else {
    w.Key("text");
    WriteString(w, cut ? FirstCodePoints(said.text, 115) + "\u2026 https://t.co/" + id_str.substr(id_str.size() - 10)
                       : said.text);
  }
  w.Key("truncated");
  w.Bool(cut);
  if (shape.entities) {
    const bool tag = !said.hashtag.empty() && !cut;  // (a cut text has lost its closing hashtag)
    w.Key("entities");
    w.StartObject();
    w.Key("hashtags");
    w.StartArray();
    if (tag) {
      w.StartObject();
      w.Key("text");
      WriteString(w, said.hashtag);
      Indices(w, length - 1 - static_cast<int>(CodePoints(said.hashtag)), length);
      w.EndObject();
    }
    w.EndArray();
    w.Key("symbols");
    w.StartArray();
    w.EndArray();
    w.Key("user_mentions");
    w.StartArray();
    if (!said.mention.empty()) {
      const uint64_t mentioned = MentionedUserId(said.mention);
      w.StartObject();
      w.Key("screen_name");
      WriteString(w, said.mention);
      w.Key("name");
      WriteString(w, MockDisplayName(mentioned));
      w.Key("id");
      w.Uint64(mentioned);
      w.Key("id_str");
      WriteString(w, std::to_string(mentioned));
      Indices(w, 0, 1 + static_cast<int>(said.mention.size()));
      w.EndObject();
    }
    w.EndArray();
    w.Key("urls");
    w.StartArray();
    w.EndArray();
    w.EndObject();
  }
  w.Key("source");
  WriteString(w, "<a href=\"https://mobile.twitter.com\" rel=\"nofollow\">Twitter Web App</a>");
  for (const char* key : {"in_reply_to_status_id", "in_reply_to_status_id_str", "in_reply_to_user_id",
                          "in_reply_to_user_id_str", "in_reply_to_screen_name"}) {
    Null(w, key);
  }
  w.Key("user");
  WriteUser(w, AuthorOf(id), shape.trim_user);
  Null(w, "geo");
  Null(w, "coordinates");
  Null(w, "place");
  Null(w, "contributors");
  w.Key("is_quote_status");
  w.Bool(false);
  WriteCounts(w, {{"retweet_count", m.retweet_count}, {"favorite_count", m.like_count}});
  w.Key("favorited");
  w.Bool(false);
  w.Key("retweeted");
  w.Bool(false);
  w.Key("lang");
  WriteString(w, said.lang);
  w.EndObject();
}

}  // namespace

EndpointReply LookupStatuses(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  std::string ids_text;
  auto range = params.equal_range("id");
  for (auto it = range.first; it != range.second; ++it) {
    if (!it->second.empty()) ids_text += (ids_text.empty() ? "" : ",") + it->second;
  }
  if (ids_text.empty()) return Error(38, "id parameter is missing.");
  const std::vector<std::string> listed = SplitCommas(ids_text);
  if (listed.size() > kMaxIds) return Error(18, "Too many terms specified in query.");
  std::vector<uint64_t> ids;
  std::set<uint64_t> seen;
  for (const std::string& id : listed) {
    if (!IsTweetId(id)) return Error(44, "id parameter is invalid.");
    const uint64_t value = std::stoull(id);
    if (seen.insert(value).second) ids.push_back(value);  // duplicates answered once
  }
  const bool map = Flag(params, "map", false);
  const auto mode = params.find("tweet_mode");
  const V1Shape shape{mode != params.end() && mode->second == "extended", Flag(params, "trim_user", false),
                      Flag(params, "include_entities", true)};

  std::vector<uint64_t> returned;
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  if (map) {
    w.StartObject();
    w.Key("id");
    w.StartObject();
    for (uint64_t id : ids) {
      const TweetState state = TweetStateAt(id, config, now_ms);
      if (state == TweetState::kOmitted) continue;
      const std::string key = std::to_string(id);
      w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
      if (state == TweetState::kVisible) {
        WriteTweet(w, id, config, now_ms, shape);
        returned.push_back(id);
      } else {
        w.Null();
      }
    }
    w.EndObject();
    w.EndObject();
  } else {
    w.StartArray();
    // No promised order: reverse, as /2/tweets does, so clients that zip by position fail.
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
      if (TweetStateAt(*it, config, now_ms) == TweetState::kVisible) {
        WriteTweet(w, *it, config, now_ms, shape);
        returned.push_back(*it);
      }
    }
    w.EndArray();
  }
  EndpointReply reply;
  reply.body = buf.GetString();
  reply.returned = std::move(returned);
  return reply;
}

}  // namespace tweetkeeper::mock
