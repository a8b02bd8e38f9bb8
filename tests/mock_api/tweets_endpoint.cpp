#include "mock_api/tweets_endpoint.hpp"

#include <algorithm>
#include <set>

#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {

namespace {

constexpr size_t kMaxIds = 100;

// Query parameters of operation getPostsByIds in openapi.json.
constexpr const char* kKnownParams = "ids,tweet.fields,expansions,media.fields,poll.fields,user.fields,place.fields";

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

void WriteTweet(JsonWriter& w, uint64_t id, const TweetsRequest& req, const MockConfig& config, int64_t now_ms) {
  const std::string id_str = std::to_string(id);
  w.StartObject();
  w.Key("id");
  WriteString(w, id_str);
  w.Key("text");
  WriteString(w, "Mock tweet " + id_str);
  w.Key("edit_history_tweet_ids");
  w.StartArray();
  WriteString(w, id_str);
  w.EndArray();
  if (req.want_created_at) {
    w.Key("created_at");
    WriteString(w, FormatCreatedAt(SnowflakeMillis(id)));
  }
  if (req.want_public_metrics) {
    const PublicMetrics m = MetricsAt(id, AgeSeconds(id, now_ms));
    w.Key("public_metrics");
    w.StartObject();
    w.Key(config.repost_count_alias ? "repost_count" : "retweet_count");
    w.Int64(m.retweet_count);
    w.Key("reply_count");
    w.Int64(m.reply_count);
    w.Key("like_count");
    w.Int64(m.like_count);
    w.Key("quote_count");
    w.Int64(m.quote_count);
    w.Key("bookmark_count");
    w.Int64(m.bookmark_count);
    w.Key("impression_count");
    w.Int64(m.impression_count);
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

TweetsRequest ParseTweetsRequest(const QueryParams& params) {
  TweetsRequest req;
  for (const auto& [key, value] : params) {
    if (!IsOneOf(key, kKnownParams)) {
      req.errors.push_back({key, {value}, "The query parameter [" + key + "] is not one of [" + kKnownParams + "]"});
    }
  }

  std::string ids_text;
  if (!Joined(params, "ids", &ids_text) || ids_text.empty()) {
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
      req.want_created_at |= field == "created_at";
      req.want_public_metrics |= field == "public_metrics";
    }
  }
  return req;
}

EndpointReply GetTweets(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  const TweetsRequest req = ParseTweetsRequest(params);
  EndpointReply reply;
  if (!req.errors.empty()) {
    reply.status = 400;
    reply.content_type = kProblemJson;
    reply.body = InvalidRequestProblem(req.errors);
    return reply;
  }

  std::vector<size_t> found;
  std::vector<size_t> missing;
  for (size_t i = 0; i < req.values.size(); ++i) {
    const TweetState state = ClassifyTweet(req.values[i], config, now_ms);
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
  if (!missing.empty()) {
    w.Key("errors");
    w.StartArray();
    for (size_t i : missing) {
      if (ClassifyTweet(req.values[i], config, now_ms) == TweetState::kProtected) {
        WriteNotAuthorized(w, req.ids[i]);
      } else {
        WriteNotFound(w, req.ids[i]);
      }
    }
    w.EndArray();
  }
  w.EndObject();
  reply.body = buf.GetString();
  return reply;
}

}  // namespace tweetkeeper::mock
