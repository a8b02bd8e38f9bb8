#include "mock_api/tweets_endpoint.hpp"

#include <algorithm>
#include <set>

#include "mock_api/engagement.hpp"
#include "mock_api/post_text.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {

namespace {

constexpr size_t kMaxIds = 100;

// Query parameters of operation getPostsByIds in openapi.json (getPostsById: the same but ids).
constexpr const char* kKnownParams = "ids,tweet.fields,expansions,media.fields,poll.fields,user.fields,place.fields";
constexpr const char* kKnownSingleParams = "tweet.fields,expansions,media.fields,poll.fields,user.fields,place.fields";

// The enums of TweetExpansionsParameter and the other *FieldsParameter of openapi.json (2.159).
constexpr const char* kExpansions =
    "article.cover_media,article.media_entities,attachments.media_keys,attachments.media_source_tweet,"
    "attachments.poll_ids,author_id,edit_history_tweet_ids,entities.mentions.username,geo.place_id,"
    "in_reply_to_user_id,entities.note.mentions.username,referenced_tweets.id,"
    "referenced_tweets.id.attachments.media_keys,referenced_tweets.id.author_id";
constexpr const char* kMediaFields =
    "alt_text,duration_ms,height,media_key,non_public_metrics,organic_metrics,preview_image_url,promoted_metrics,"
    "public_metrics,type,url,variants,width";
constexpr const char* kPollFields = "duration_minutes,end_datetime,id,options,voting_status";
constexpr const char* kUserFields =
    "affiliation,confirmed_email,connection_status,created_at,description,entities,id,is_identity_verified,"
    "location,most_recent_tweet_id,name,parody,pinned_tweet_id,profile_banner_url,profile_image_url,protected,"
    "public_metrics,receives_your_dm,subscription,subscription_type,url,username,verified,"
    "verified_followers_count,verified_type,withheld";
constexpr const char* kPlaceFields = "contained_within,country,country_code,full_name,geo,id,name,place_type";

// TweetFields enum of openapi.json (2.159); the real API rejects anything else.
constexpr const char* kTweetFields =
    "article,attachments,author_id,card_uri,community_id,context_annotations,conversation_id,created_at,"
    "display_text_range,edit_controls,edit_history_tweet_ids,entities,geo,id,in_reply_to_user_id,lang,"
    "media_metadata,non_public_metrics,note_tweet,organic_metrics,possibly_sensitive,promoted_metrics,"
    "public_metrics,referenced_tweets,reply_settings,scopes,source,suggested_source_links,"
    "suggested_source_links_with_counts,text,withheld";

bool IsOneOf(const std::string& value, const char* list) {
  const std::vector<std::string> items = SplitCommas(list);
  return std::find(items.begin(), items.end(), value) != items.end();
}

// ^[0-9]{1,19}$, the TweetId pattern.
bool IsTweetId(const std::string& s) {
  return !s.empty() && s.size() <= 19 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Repeated parameters are joined, as if sent once with commas.
bool Joined(const QueryParams& params, const std::string& key, std::string* out) {
  auto range = params.equal_range(key);
  if (range.first == range.second) return false;
  out->clear();
  for (auto it = range.first; it != range.second; ++it) *out += (out->empty() ? "" : ",") + it->second;
  return true;
}

void WriteString(JsonWriter& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

// The hashtag and mention entities, offsets in code points, the end exclusive; the mention opens
// the text, the hashtag ends it.
void WriteEntities(JsonWriter& w, const PostText& said, int length) {
  w.Key("entities");
  w.StartObject();
  if (!said.hashtag.empty()) {
    w.Key("hashtags");
    w.StartArray();
    w.StartObject();
    w.Key("start");
    w.Int(length - 1 - static_cast<int>(CodePoints(said.hashtag)));
    w.Key("end");
    w.Int(length);
    w.Key("tag");
    WriteString(w, said.hashtag);
    w.EndObject();
    w.EndArray();
  }
  if (!said.mention.empty()) {
    w.Key("mentions");
    w.StartArray();
    w.StartObject();
    w.Key("start");
    w.Int(0);
    w.Key("end");
    w.Int(1 + static_cast<int>(said.mention.size()));
    w.Key("username");
    WriteString(w, said.mention);
    w.Key("id");
    WriteString(w, std::to_string(MentionedUserId(said.mention)));
    w.EndObject();
    w.EndArray();
  }
  w.EndObject();
}

void WriteEditControls(JsonWriter& w, uint64_t id) {
  w.Key("edit_controls");
  w.StartObject();
  w.Key("edits_remaining");
  w.Int(5);
  w.Key("is_edit_eligible");
  w.Bool(true);
  w.Key("editable_until");
  WriteString(w, FormatCreatedAt(SnowflakeMillis(id) + 3'600'000));
  w.EndObject();
}

// The tweet with the fields asked for. A mock tweet is text by its author (post_text.cpp: a
// mention and a hashtag in some, their entities when asked): no media, polls, places, references
// or edits, so the fields about those are absent, as the API leaves out what does not apply; and
// the metrics only the author may see (non_public_metrics, organic_metrics, promoted_metrics) are
// not given to app-only callers.
void WriteTweet(JsonWriter& w, uint64_t id, const TweetsRequest& req, const MockConfig& config, int64_t now_ms) {
  const std::string id_str = std::to_string(id);
  const PostText said = MockPostText(id);
  const std::string& text = said.text;
  const auto length = static_cast<int>(CodePoints(text));
  const auto want = [&req](const char* field) { return req.tweet_fields.count(field) > 0; };
  w.StartObject();
  w.Key("id");
  WriteString(w, id_str);
  w.Key("text");
  WriteString(w, text);
  w.Key("edit_history_tweet_ids");
  w.StartArray();
  WriteString(w, id_str);
  // Edited a second after it was posted (--edited-every): the newer version last, as X lists them.
  const uint64_t newer = id + (uint64_t{1000} << 22);
  if (config.edited_every != 0 && id % config.edited_every == 5 && SnowflakeMillis(newer) <= now_ms) {
    WriteString(w, std::to_string(newer));
  }
  w.EndArray();
  const std::optional<std::string> created_at = CreatedAt(id);
  if (want("created_at") && created_at) {
    w.Key("created_at");
    WriteString(w, *created_at);
  }
  if (want("author_id")) {
    w.Key("author_id");
    WriteString(w, std::to_string(AuthorOf(id)));
  }
  if (want("conversation_id")) {
    w.Key("conversation_id");
    WriteString(w, id_str);
  }
  if (want("lang")) {
    w.Key("lang");
    WriteString(w, said.lang);
  }
  if (want("entities") && (!said.hashtag.empty() || !said.mention.empty())) WriteEntities(w, said, length);
  if (want("possibly_sensitive")) {
    w.Key("possibly_sensitive");
    w.Bool(false);
  }
  if (want("reply_settings")) {
    w.Key("reply_settings");
    WriteString(w, "everyone");
  }
  if (want("display_text_range")) {
    w.Key("display_text_range");
    w.StartArray();
    w.Int(0);
    w.Int(length);
    w.EndArray();
  }
  if (want("edit_controls") && !PredatesSnowflake(id)) WriteEditControls(w, id);  // editable for an hour, as X's are
  if (want("public_metrics")) {
    const PublicMetrics m = Engagement(config, Network::kX, id, AgeSeconds(id, now_ms));
    w.Key("public_metrics");
    w.StartObject();
    WriteCounts(w, {{config.repost_count_alias ? "repost_count" : "retweet_count", m.retweet_count},
                    {"reply_count", m.reply_count},
                    {"like_count", m.like_count},
                    {"quote_count", m.quote_count},
                    {"bookmark_count", m.bookmark_count},
                    {"impression_count", m.impression_count}});
    w.EndObject();
  }
  w.EndObject();
}

}  // namespace

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

TweetsRequest ParseTweetsRequest(const QueryParams& params, bool single) {
  TweetsRequest req;
  const auto path_id = params.find(kPathIdParam);
  const char* known = single ? kKnownSingleParams : kKnownParams;
  for (const auto& [key, value] : params) {
    if ((key != kPathIdParam || !single) && !IsOneOf(key, known)) {
      req.errors.push_back({key, {value}, "The query parameter [" + key + "] is not one of [" + known + "]"});
    }
  }

  std::string ids_text;
  if (single) {
    if (path_id == params.end() || !IsTweetId(path_id->second)) {
      const std::string id = path_id == params.end() ? "" : path_id->second;
      req.errors.push_back({"id", {id}, "The `id` query parameter value [" + id + "] does not match ^[0-9]{1,19}$"});
    } else {
      req.ids.push_back(path_id->second);
      req.values.push_back(std::stoull(path_id->second));
      req.n_listed = 1;
    }
  } else if (!Joined(params, "ids", &ids_text) || ids_text.empty()) {
    req.errors.push_back({"ids", {}, "The `ids` query parameter can not be empty"});
  } else {
    const std::vector<std::string> listed = SplitCommas(ids_text);
    req.n_listed = listed.size();
    if (listed.size() > kMaxIds) {
      req.errors.push_back({"ids",
                            {ids_text},
                            "The number of values in the `ids` query parameter list [" + std::to_string(listed.size()) +
                                "] is not between 1 and " + std::to_string(kMaxIds)});
    } else {
      std::set<uint64_t> seen;
      for (const std::string& id : listed) {
        if (!IsTweetId(id)) {
          req.errors.push_back(
              {"ids", {id}, "The `ids` query parameter value [" + id + "] does not match ^[0-9]{1,19}$"});
        } else if (const uint64_t value = std::stoull(id); seen.insert(value).second) {
          req.ids.push_back(id);  // duplicates are answered once, like the real API
          req.values.push_back(value);
        }
      }
    }
  }

  std::string fields_text;
  if (Joined(params, "tweet.fields", &fields_text)) {
    for (const std::string& field : SplitCommas(fields_text)) {
      if (!IsOneOf(field, kTweetFields)) {
        req.errors.push_back(
            {"tweet.fields",
             {field},
             "The `tweet.fields` query parameter value [" + field + "] is not one of [" + kTweetFields + "]"});
      }
      req.tweet_fields.insert(field);
    }
  }
  // The other list parameters: each value from the spec's enum, or a 400 that names it.
  const struct {
    const char* name;
    const char* allowed;
    std::set<std::string>* into;
  } lists[] = {{"expansions", kExpansions, &req.expansions},
               {"media.fields", kMediaFields, nullptr},
               {"poll.fields", kPollFields, nullptr},
               {"user.fields", kUserFields, &req.user_fields},
               {"place.fields", kPlaceFields, nullptr}};
  for (const auto& list : lists) {
    std::string text;
    if (!Joined(params, list.name, &text)) continue;
    for (const std::string& value : SplitCommas(text)) {
      if (!IsOneOf(value, list.allowed)) {
        req.errors.push_back({list.name,
                              {value},
                              std::string("The `") + list.name + "` query parameter value [" + value +
                                  "] is not one of [" + list.allowed + "]"});
      } else if (list.into) {
        list.into->insert(value);
      }
    }
  }
  return req;
}

namespace {

// includes.users for the author_id expansion: each author once, with the user.fields asked for.
void WriteIncludes(JsonWriter& w, const std::vector<uint64_t>& tweets, const TweetsRequest& req) {
  if (tweets.empty() || !req.expansions.count("author_id")) return;  // no empty includes (minItems 1)
  std::set<uint64_t> authors;
  for (uint64_t id : tweets) authors.insert(AuthorOf(id));
  const auto want = [&req](const char* field) { return req.user_fields.count(field) > 0; };
  w.Key("includes");
  w.StartObject();
  w.Key("users");
  w.StartArray();
  for (uint64_t id : authors) {
    const XUser user = XUserOf(id);
    w.StartObject();
    w.Key("id");
    WriteString(w, std::to_string(user.id));
    w.Key("name");
    WriteString(w, user.name);
    w.Key("username");
    WriteString(w, user.username);
    if (want("created_at")) {
      w.Key("created_at");
      WriteString(w, FormatCreatedAt(user.created_ms));
    }
    if (want("description")) {
      w.Key("description");
      WriteString(w, user.description);
    }
    if (want("protected")) {
      w.Key("protected");
      w.Bool(false);
    }
    if (want("verified")) {
      w.Key("verified");
      w.Bool(false);
    }
    if (want("public_metrics")) {
      w.Key("public_metrics");
      w.StartObject();
      w.Key("followers_count");
      w.Int64(user.followers);
      w.Key("following_count");
      w.Int64(user.following);
      w.Key("tweet_count");
      w.Int64(user.tweets);
      w.Key("listed_count");
      w.Int64(user.listed);
      w.EndObject();
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WriteProblem(JsonWriter& w, const TweetsRequest& req, size_t i, const MockConfig& config, int64_t now_ms) {
  if (TweetStateAt(req.values[i], config, now_ms) == TweetState::kProtected) {
    WriteNotAuthorized(w, req.ids[i]);
  } else {
    WriteNotFound(w, req.ids[i]);
  }
}

EndpointReply Refused(const TweetsRequest& req) {
  EndpointReply reply;
  reply.status = 400;
  reply.content_type = kProblemJson;
  reply.body = InvalidRequestProblem(req.errors);
  return reply;
}

}  // namespace

EndpointReply GetTweets(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  const TweetsRequest req = ParseTweetsRequest(params);
  if (!req.errors.empty()) return Refused(req);
  EndpointReply reply;

  std::vector<size_t> found;
  std::vector<size_t> missing;
  for (size_t i = 0; i < req.values.size(); ++i) {
    const TweetState state = TweetStateAt(req.values[i], config, now_ms);
    if (state != TweetState::kOmitted) (state == TweetState::kVisible ? found : missing).push_back(i);
  }
  // The API promises no order; answering in reverse catches clients that zip by position.
  std::reverse(found.begin(), found.end());
  for (size_t i : found) reply.returned.push_back(req.values[i]);

  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  if (!found.empty()) {  // no "data" key at all when nothing resolved
    w.Key("data");
    w.StartArray();
    for (size_t i : found) WriteTweet(w, req.values[i], req, config, now_ms);
    w.EndArray();
  }
  WriteIncludes(w, reply.returned, req);
  if (!missing.empty()) {
    w.Key("errors");
    w.StartArray();
    for (size_t i : missing) WriteProblem(w, req, i, config, now_ms);
    w.EndArray();
  }
  w.EndObject();
  reply.body = buf.GetString();
  return reply;
}

EndpointReply GetTweetById(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  const TweetsRequest req = ParseTweetsRequest(params, true);
  if (!req.errors.empty()) return Refused(req);
  EndpointReply reply;
  const TweetState state = TweetStateAt(req.values[0], config, now_ms);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  if (state == TweetState::kVisible) {
    reply.returned.push_back(req.values[0]);
    w.Key("data");
    WriteTweet(w, req.values[0], req, config, now_ms);
    WriteIncludes(w, reply.returned, req);
  } else if (state != TweetState::kOmitted) {
    w.Key("errors");
    w.StartArray();
    WriteProblem(w, req, 0, config, now_ms);
    w.EndArray();
  }
  w.EndObject();
  reply.body = buf.GetString();
  return reply;
}

void WriteTweetObject(JsonWriter& w, uint64_t id, const TweetsRequest& req, const MockConfig& config, int64_t now_ms) {
  WriteTweet(w, id, req, config, now_ms);
}

}  // namespace tweetkeeper::mock
