#include "mock_api/lookup_endpoint.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

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

void WriteTweet(JsonWriter& w, uint64_t id, int64_t now_ms) {
  const std::string id_str = std::to_string(id);
  const PublicMetrics m = MetricsAt(id, AgeSeconds(id, now_ms));
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
  w.Key("text");
  WriteString(w, MockPostText(id).text);
  WriteCounts(w, {{"retweet_count", m.retweet_count}, {"favorite_count", m.like_count}});
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
  bool map = false;
  if (auto it = params.find("map"); it != params.end()) map = it->second == "true" || it->second == "1" || it->second == "t";

  std::vector<uint64_t> returned;
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  if (map) {
    w.StartObject();
    w.Key("id");
    w.StartObject();
    for (uint64_t id : ids) {
      const TweetState state = ClassifyTweet(id, config, now_ms);
      if (state == TweetState::kOmitted) continue;
      const std::string key = std::to_string(id);
      w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
      if (state == TweetState::kVisible) {
        WriteTweet(w, id, now_ms);
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
      if (ClassifyTweet(*it, config, now_ms) == TweetState::kVisible) {
        WriteTweet(w, *it, now_ms);
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
