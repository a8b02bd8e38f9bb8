#include "export/export_format.hpp"

#include <rapidjson/document.h>
#include <rapidjson/encodings.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <unordered_set>

#include "json/bounded.hpp"
#include "json/write.hpp"

namespace tweetkeeper::exporter {

std::string CsvField(const std::optional<std::string>& value, bool typed) {
  if (!value) return "";
  // OWASP's CSV injection: text starting with one of these is a formula to a spreadsheet (a
  // post's "=HYPERLINK(...)" sends the sheet's cells to its server). A leading single quote makes
  // it text, and the cell is quoted. Not in a column the database typed: "-1" stays a number.
  const bool formula =
      !typed && !value->empty() && std::string_view("=+-@\t\r").find(value->front()) != std::string_view::npos;
  if (!formula && value->find_first_of(",\"\r\n") == std::string::npos) return *value;
  std::string out = formula ? "\"'" : "\"";
  for (char c : *value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvRow(const std::vector<std::optional<std::string>>& fields, const std::vector<bool>& typed) {
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) row += ',';
    row += CsvField(fields[i], i < typed.size() && typed[i]);
  }
  row += "\r\n";
  return row;
}

std::optional<std::vector<Age>> ParseAges(std::string_view text, std::string* error) {
  std::vector<Age> ages;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string_view token = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::int64_t n = 0;
    std::size_t i = 0;
    for (; i < token.size() && token[i] >= '0' && token[i] <= '9' && n < 1'000'000; ++i) n = n * 10 + (token[i] - '0');
    const std::string unit(token.substr(std::min(i, token.size())));
    const std::int64_t scale = unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : unit == "w" ? 604800 : 0;
    if (token.empty() || i == 0 || scale == 0 || n >= 1'000'000) {
      *error = "not an age: \"" + std::string(token.substr(0, 40)) + "\" (a whole number and s, m, h, d or w: 1h,6h,24h,7d)";
      return std::nullopt;
    }
    for (const Age& a : ages) {
      if (a.seconds == n * scale) {
        *error = "an age given twice: " + a.label + " and " + std::string(token);
        return std::nullopt;
      }
    }
    ages.push_back({std::string(token), n * scale});
    if (ages.size() > 50) {
      *error = "more than 50 ages";
      return std::nullopt;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ages;
}

namespace {
using AsciiWriter = rapidjson::Writer<rapidjson::StringBuffer, rapidjson::UTF8<>, rapidjson::ASCII<>>;
}  // namespace

PageResult Twarc2Page(const std::vector<StoredPost>& posts, const PageSource& source, const std::string& url,
                      const std::string& version, bool answer_counts) {
  PageResult result;
  std::vector<rapidjson::Document> tweets, users;
  std::unordered_set<std::string> user_ids;
  std::vector<std::int64_t> ids;
  // The answer's own counts of each tweet whose public_metrics were replaced, and when the latest
  // were observed.
  rapidjson::Document answered(rapidjson::kObjectType), observed(rapidjson::kObjectType);
  for (const StoredPost& post : posts) {
    rapidjson::Document tweet;
    if (!json::Parse(tweet, post.payload).empty() || !tweet.IsObject()) {
      result.unreadable.push_back(post.id);
      continue;
    }
    if (post.latest && !answer_counts) {
      auto& a = tweet.GetAllocator();
      const std::string key = std::to_string(post.id);
      observed.AddMember(rapidjson::Value(key.c_str(), observed.GetAllocator()),
                         rapidjson::Value(post.latest->observed_at.c_str(), observed.GetAllocator()), observed.GetAllocator());
      rapidjson::Value metrics(rapidjson::kObjectType);
      const Counts& c = *post.latest;
      for (const auto& [name, value] : {std::pair{"retweet_count", c.retweet}, std::pair{"reply_count", c.reply},
                                        std::pair{"like_count", c.like}, std::pair{"quote_count", c.quote},
                                        std::pair{"bookmark_count", c.bookmark}, std::pair{"impression_count", c.impression}}) {
        if (value) metrics.AddMember(rapidjson::StringRef(name), rapidjson::Value(static_cast<int64_t>(*value)), a);
      }
      const auto old = tweet.FindMember("public_metrics");
      if (old != tweet.MemberEnd()) {
        // (In its place: the tweet's keys keep the answer's order.)
        answered.AddMember(rapidjson::Value(key.c_str(), answered.GetAllocator()),
                           rapidjson::Value(old->value, answered.GetAllocator()), answered.GetAllocator());
        old->value = metrics;
      } else {
        tweet.AddMember("public_metrics", metrics, a);
      }
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
  json::Member(w, "url", url);
  json::Member(w, "version", version);
  json::Member(w, "retrieved_at", source.retrieved_at);
  w.EndObject();
  w.Key("__tweetkeeper");
  w.StartObject();
  json::Member(w, "lease_id", source.lease_id);
  json::Member(w, "seen_at", source.seen_at);
  w.Key("ids");
  w.StartArray();
  for (std::int64_t id : ids) json::String(w, std::to_string(id));
  w.EndArray();
  if (observed.MemberCount() > 0) {
    w.Key("counts_observed_at");
    observed.Accept(w);
    w.Key("answer_public_metrics");
    answered.Accept(w);
  }
  w.EndObject();
  w.EndObject();
  result.line.assign(buffer.GetString(), buffer.GetSize());
  return result;
}

}  // namespace tweetkeeper::exporter
