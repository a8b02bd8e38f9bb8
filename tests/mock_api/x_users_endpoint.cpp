#include "mock_api/x_users_endpoint.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <string_view>

#include "mock_api/mix.hpp"
#include "mock_api/problems.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr uint64_t kFirstAuthor = 100000;   // AuthorOf's users: 100000 .. 104999
constexpr uint64_t kAuthors = 5000;
constexpr uint64_t kFirstLocked = 1000000;  // protected users: 1000000 .. 1999999
constexpr uint64_t kLockedUsers = 1000000;

bool ValidUsername(const std::string& s) {
  return !s.empty() && s.size() <= 15 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::optional<uint64_t> Decimal(const std::string& s, int max_digits = 19) {
  uint64_t v = 0;
  if (s.empty() || static_cast<int>(s.size()) > max_digits) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// RFC 3339 as the spec's date-time: YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM).
std::optional<int64_t> ParseTime(const std::string& s) {
  int y, mo, d, h, mi, sec, n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
    return std::nullopt;
  size_t i = 19;
  int64_t ms = 0;
  if (i < s.size() && s[i] == '.') {
    int digits = 0;
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++digits)
      if (digits < 3) ms = ms * 10 + (s[i] - '0');
    if (digits == 0) return std::nullopt;
    for (; digits < 3; ++digits) ms *= 10;
  }
  int64_t offset_s = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i + 6 == s.size() && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
    const int oh = std::atoi(s.substr(i + 1, 2).c_str()), om = std::atoi(s.substr(i + 4, 2).c_str());
    offset_s = (s[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return (static_cast<int64_t>(timegm(&tm)) - offset_s) * 1000 + ms;
}

std::string Base36(uint64_t v) {
  std::string out;
  do {
    out.insert(out.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36]);
    v /= 36;
  } while (v);
  return out;
}

std::optional<uint64_t> FromBase36(const std::string& s) {
  if (s.empty() || s.size() > 13) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 36 + static_cast<uint64_t>(d);
  }
  return v;
}

uint64_t LockedId(const std::string& username) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : Lower(username)) h = (h ^ c) * 0x100000001b3ULL;
  return kFirstLocked + Mix(h) % kLockedUsers;
}

EndpointReply Json(std::string body, int status = 200) {
  EndpointReply r;
  r.status = status;
  r.body = std::move(body);
  if (status != 200) r.content_type = kProblemJson;
  return r;
}

// {"errors":[one Problem about a user]}: a 200 that names no user, as X answers for one it will
// not show (FACTS.md's per-id errors, for a user).
std::string UserProblem(const std::string& value, const std::string& parameter, const std::string& title,
                        const std::string& detail, const char* type) {
  return OneError([&](JsonWriter& w) {
    for (const auto& [k, v] : {std::pair<const char*, std::string>{"value", value},
                               {"detail", detail},
                               {"title", title},
                               {"resource_type", "user"},
                               {"parameter", parameter},
                               {"resource_id", value},
                               {"type", std::string(kProblemsBase) + type}}) {
      w.Key(k);
      w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
    }
    if (std::string_view(type) == "not-authorized-for-resource") {  // the spec requires its section
      w.Key("section");
      w.String("data");
    }
  });
}

std::string UserNotFound(const std::string& value, const char* parameter) {
  return UserProblem(value, parameter, "Not Found Error",
                     std::string("Could not find user with ") + parameter + ": [" + value + "].", "resource-not-found");
}

std::string NotAuthorized(const std::string& id) {
  return UserProblem(id, "id", "Authorization Error",
                     "Sorry, you are not authorized to see the user with id: [" + id + "].",
                     "not-authorized-for-resource");
}

// The value of a single-valued parameter, or "".
std::string One(const QueryParams& params, const char* name) {
  const auto it = params.find(name);
  return it == params.end() ? "" : it->second;
}

// The list parameters both endpoints share, checked as /2/tweets checks them.
TweetsRequest Fields(const QueryParams& params) {
  QueryParams lists;
  for (const char* name : {"tweet.fields", "expansions", "media.fields", "poll.fields", "user.fields", "place.fields"}) {
    const auto range = params.equal_range(name);
    lists.insert(range.first, range.second);
  }
  lists.emplace("ids", "20");
  TweetsRequest req = ParseTweetsRequest(lists);
  return req;
}

}  // namespace

uint64_t XFollowPostId(uint64_t k, int64_t ms, const MockConfig& config) {
  const uint64_t base = static_cast<uint64_t>(ms - kTwitterEpochMs) << 22;
  const uint64_t start = Mix(k) & 0x3FFFFF;
  for (uint64_t i = 0; i < (1u << 22); ++i) {
    const uint64_t id = base | ((start + i) & 0x3FFFFF);
    if (AuthorOf(id) == kFirstAuthor + k && ClassifyTweet(id, config, INT64_MAX / 2) == TweetState::kVisible) return id;
  }
  return base;  // not reached: one in 5,000 low parts has the author
}

std::vector<MadePost> XMadePosts(int64_t from_ms, int64_t to_ms, const MockConfig& config) {
  std::vector<MadePost> out;
  for (uint64_t k = 0; k < std::min(config.follow_accounts, kAuthors); ++k) {
    for (int64_t ms : PostTimes(CadenceOf("x", k, config), from_ms, to_ms, 1'000'000, false)) {
      out.push_back({"https://x.com/i/web/status/" + std::to_string(XFollowPostId(k, ms, config)), ms});
    }
  }
  return out;
}

std::vector<std::pair<std::string, double>> XPosters(const MockConfig& config) {
  std::vector<std::pair<std::string, double>> out;
  for (uint64_t k = 0; k < std::min(config.follow_accounts, kAuthors); ++k)
    out.emplace_back("https://x.com/mock_" + std::to_string(kFirstAuthor + k), CadenceOf("x", k, config).per_second());
  return out;
}

EndpointReply GetUserByUsername(const QueryParams& params, const MockConfig&, int64_t) {
  const std::string username = One(params, kPathUsernameParam);
  if (!ValidUsername(username)) {
    return Json(InvalidRequestProblem({{"username",
                                        {username},
                                        "The `username` query parameter value [" + username +
                                            "] does not match ^[A-Za-z0-9_]{1,15}$"}}),
                400);
  }
  TweetsRequest fields = Fields(params);
  if (!fields.errors.empty()) return Json(InvalidRequestProblem(fields.errors), 400);
  const std::string lower = Lower(username);
  if (StartsWith(lower, "gone")) return Json(UserNotFound(username, "username"));
  XUser user;
  bool locked = false;
  uint64_t n = 0;
  if (StartsWith(lower, "mock_") && (n = Decimal(lower.substr(5), 7).value_or(0)) >= kFirstAuthor &&
      n < kFirstAuthor + kAuthors) {
    user = XUserOf(n);
  } else {
    locked = StartsWith(lower, "locked");
    user = XUserOf(locked ? LockedId(username) : MentionedUserId(lower));
    user.username = username;
  }
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  const auto field = [&w](const char* k, const std::string& v) {
    w.Key(k);
    w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
  };
  w.StartObject();
  w.Key("data");
  w.StartObject();
  field("id", std::to_string(user.id));
  field("name", user.name);
  field("username", user.username);
  if (fields.user_fields.count("protected")) {
    w.Key("protected");
    w.Bool(locked);
  }
  if (fields.user_fields.count("created_at")) field("created_at", FormatCreatedAt(user.created_ms));
  if (fields.user_fields.count("description")) field("description", user.description);
  w.EndObject();
  w.EndObject();
  return Json(buf.GetString());
}

EndpointReply GetUserTweets(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  const std::string id_text = One(params, kPathUserIdParam);
  std::vector<InvalidParam> errors;
  const std::optional<uint64_t> user = Decimal(id_text);
  if (!user) errors.push_back({"id", {id_text}, "The `id` query parameter value [" + id_text + "] does not match ^[0-9]{1,19}$"});
  int max_results = 10;  // the documentation's default
  if (params.count("max_results")) {
    const std::string v = One(params, "max_results");
    const auto n = Decimal(v, 4);
    if (!n || *n < 5 || *n > 100) {
      errors.push_back({"max_results", {v}, "The `max_results` query parameter value [" + v + "] is not between 5 and 100"});
    } else {
      max_results = static_cast<int>(*n);
    }
  }
  std::optional<uint64_t> since_id, until_id, token;
  for (const auto& [name, into] : {std::pair<const char*, std::optional<uint64_t>*>{"since_id", &since_id}, {"until_id", &until_id}}) {
    if (!params.count(name)) continue;
    const std::string v = One(params, name);
    *into = Decimal(v);
    if (!*into)
      errors.push_back({name, {v}, std::string("The `") + name + "` query parameter value [" + v + "] does not match ^[0-9]{1,19}$"});
  }
  std::optional<int64_t> start_ms, end_ms;
  for (const auto& [name, into] : {std::pair<const char*, std::optional<int64_t>*>{"start_time", &start_ms}, {"end_time", &end_ms}}) {
    if (!params.count(name)) continue;
    const std::string v = One(params, name);
    *into = ParseTime(v);
    if (!*into)
      errors.push_back({name, {v}, std::string("The `") + name + "` query parameter value [" + v + "] is not a valid RFC 3339 date-time"});
  }
  if (params.count("pagination_token")) {
    const std::string v = One(params, "pagination_token");
    token = FromBase36(v);
    if (!token) errors.push_back({"pagination_token", {v}, "The `pagination_token` query parameter value [" + v + "] is not valid"});
  }
  if (params.count("exclude")) {
    for (const std::string& v : SplitCommas(One(params, "exclude")))
      if (v != "replies" && v != "retweets")
        errors.push_back({"exclude", {v}, "The `exclude` query parameter value [" + v + "] is not one of [replies,retweets]"});
  }
  TweetsRequest fields = Fields(params);
  errors.insert(errors.end(), fields.errors.begin(), fields.errors.end());
  if (!errors.empty()) return Json(InvalidRequestProblem(errors), 400);

  if (*user >= kFirstLocked && *user < kFirstLocked + kLockedUsers) return Json(NotAuthorized(id_text));
  const bool poster = *user >= kFirstAuthor && *user < kFirstAuthor + kAuthors;
  const bool quiet = *user >= 200000 && *user < 1000000;  // MentionedUserId's users
  if (!poster && !quiet) return Json(UserNotFound(id_text, "id"));

  // Newest first, after since_id and start_time, before until_id, end_time and the page's token.
  int64_t from = start_ms.value_or(INT64_MIN / 2), to = std::min(now_ms, end_ms.value_or(INT64_MAX / 2));
  if (since_id) from = std::max(from, SnowflakeMillis(*since_id));
  if (until_id) to = std::min(to, SnowflakeMillis(*until_id));
  if (token) to = std::min(to, SnowflakeMillis(*token));
  std::vector<uint64_t> ids;
  bool more = false;
  if (poster) {
    const uint64_t k = *user - kFirstAuthor;
    for (int64_t ms : PostTimes(CadenceOf("x", k, config), from, to, static_cast<size_t>(max_results) + 3, true)) {
      const uint64_t id = XFollowPostId(k, ms, config);
      if ((since_id && id <= *since_id) || (until_id && id >= *until_id) || (token && id >= *token)) continue;
      if (static_cast<int>(ids.size()) == max_results) {
        more = true;
        break;
      }
      ids.push_back(id);
    }
  }
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  if (!ids.empty()) {
    w.Key("data");
    w.StartArray();
    for (uint64_t id : ids) WriteTweetObject(w, id, fields, config, now_ms);
    w.EndArray();
  }
  w.Key("meta");
  w.StartObject();
  w.Key("result_count");
  w.Int(static_cast<int>(ids.size()));
  if (!ids.empty()) {
    const std::string newest = std::to_string(ids.front()), oldest = std::to_string(ids.back());
    w.Key("newest_id");
    w.String(newest.c_str());
    w.Key("oldest_id");
    w.String(oldest.c_str());
    if (more) {
      const std::string next = Base36(ids.back());
      w.Key("next_token");
      w.String(next.c_str());
    }
  }
  w.EndObject();
  w.EndObject();
  EndpointReply reply = Json(buf.GetString());
  reply.returned = ids;
  return reply;
}

}  // namespace tweetkeeper::mock
