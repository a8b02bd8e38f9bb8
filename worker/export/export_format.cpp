#include "export/export_format.hpp"
#include "json/bounded.hpp"

#include <rapidjson/document.h>
#include <rapidjson/encodings.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <unordered_set>

namespace tweetkeeper::exporter {

std::string CsvField(const std::optional<std::string>& value) {
  if (!value) return "";
  if (value->find_first_of(",\"\r\n") == std::string::npos) return *value;
  std::string out = "\"";
  for (char c : *value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvRow(const std::vector<std::optional<std::string>>& fields) {
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) row += ',';
    row += CsvField(fields[i]);
  }
  row += "\r\n";
  return row;
}

namespace {
using AsciiWriter = rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::ASCII<>>;

void Str(AsciiWriter& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
}  // namespace

PageResult Twarc2Page(const std::vector<StoredPost>& posts, const PageSource& source, const std::string& url,
                      const std::string& version) {
  PageResult result;
  std::vector<rapidjson::Document> tweets, users;
  std::unordered_set<std::string> user_ids;
  std::vector<std::int64_t> ids;
  for (const StoredPost& post : posts) {
    rapidjson::Document tweet;
    if (!json::Parse(tweet, post.payload).empty() || !tweet.IsObject()) {
      result.unreadable.push_back(post.id);
      continue;
    }
    tweets.push_back(std::move(tweet));
    ids.push_back(post.id);
    if (post.author.empty()) continue;
    rapidjson::Document user;
    if (!json::Parse(user, post.author).empty() || !user.IsObject()) continue;  // the tweet stands without it
    auto id = user.FindMember("id");
    const std::string key = id != user.MemberEnd() && id->value.IsString() ? id->value.GetString() : post.author;
    if (user_ids.insert(key).second) users.push_back(std::move(user));
  }
  if (tweets.empty()) return result;

  rapidjson::StringBuffer buffer;
  AsciiWriter w(buffer);
  w.StartObject();
  w.Key("data");
  w.StartArray();
  for (const auto& tweet : tweets) tweet.Accept(w);
  w.EndArray();
  if (!users.empty()) {  // the API sends no empty includes
    w.Key("includes");
    w.StartObject();
    w.Key("users");
    w.StartArray();
    for (const auto& user : users) user.Accept(w);
    w.EndArray();
    w.EndObject();
  }
  w.Key("__twarc");
  w.StartObject();
  w.Key("url");
  Str(w, url);
  w.Key("version");
  Str(w, version);
  w.Key("retrieved_at");
  Str(w, source.retrieved_at);
  w.EndObject();
  w.Key("__tweetkeeper");
  w.StartObject();
  w.Key("lease_id");
  w.Int64(source.lease_id);
  w.Key("seen_at");
  Str(w, source.seen_at);
  w.Key("ids");
  w.StartArray();
  for (std::int64_t id : ids) Str(w, std::to_string(id));
  w.EndArray();
  w.EndObject();
  w.EndObject();
  result.line.assign(buffer.GetString(), buffer.GetSize());
  return result;
}

}  // namespace tweetkeeper::exporter
