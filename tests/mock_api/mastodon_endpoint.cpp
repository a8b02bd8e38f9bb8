#include "mock_api/mastodon_endpoint.hpp"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "mock_api/engagement.hpp"
#include "mock_api/json_fields.hpp"
#include "mock_api/mix.hpp"
#include "mock_api/post_text.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr size_t kMaxStatuses = 20;  // DEFAULT_STATUSES_LIMIT
constexpr uint64_t kAccountsPerServer = 2000;
constexpr int64_t kDayMs = 86'400'000;

EndpointReply Error(int status, const std::string& message) {
  EndpointReply r;
  r.status = status;
  r.body = "{\"error\":\"" + message + "\"}";
  return r;
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::optional<uint64_t> StatusId(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0) return std::nullopt;
  return v;
}

// Mastodon's ids: milliseconds << 16 (FACTS.md 2.6).
int64_t StatusMillis(uint64_t id) { return static_cast<int64_t>(id >> 16); }

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// A run of draws from one seed: each status and account keeps its shape on every run.
struct Dice {
  uint64_t s;
  uint64_t Next() { return s = Mix(s); }
  bool OneIn(uint64_t n) { return Next() % n == 0; }
  uint64_t Below(uint64_t n) { return Next() % n; }
};

// What a server's version sends (the documentation's "Version history" of each attribute).
struct Server {
  std::string host;
  bool v43 = true;  // Account indexable and hide_collections, PreviewCard authors
  bool v45 = true;  // Status quotes_count, quote (4.4) and quote_approval
  bool v46 = true;  // Account avatar_description, header_description, show_media, show_media_replies,
                    // show_featured, feature_approval; Status tagged_collections; PreviewCard
                    // missing_attribution
};

Server ServerOf(const std::string& host) {
  const bool old = StartsWith(host, "old");
  return {host, !old, !old, !old};
}

// Whether the server shows status `id` now: not from the future, not deleted or hidden.
bool Shown(uint64_t id, const MockConfig& config, int64_t now_ms) {
  if (StatusMillis(id) > now_ms) return false;
  if (config.omitted_every != 0 && id % config.omitted_every == 13) return false;
  if (config.deleted_every != 0 && id % config.deleted_every == 7) return false;
  if (config.protected_every != 0 && id % config.protected_every == 11) return false;
  return true;
}


// The seed of a status's counts (as before there were shapes: the workers' tests know them).
uint64_t StatusSeed(const std::string& host, uint64_t id) { return Mix(id ^ Mix(host.size())); }

uint64_t AuthorNumber(const std::string& host, uint64_t id) {
  return Mix(StatusSeed(host, id) ^ 0x61757468ULL) % kAccountsPerServer;
}

// One status in eight is a reblog (a boost), if an older status can be its original.
bool DrawnAsReblog(const std::string& host, uint64_t id) { return Mix(StatusSeed(host, id) ^ 0x72626c67ULL) % 8 == 0; }

// The status a reblog boosts: older, shown (a boost of a deleted status is gone with it), and
// no reblog itself (Mastodon boosts the original). Nothing: `id` is a status of its own.
std::optional<uint64_t> RebloggedStatus(const std::string& host, uint64_t id, const MockConfig& config,
                                        int64_t now_ms) {
  if (!DrawnAsReblog(host, id)) return std::nullopt;
  Dice d{Mix(StatusSeed(host, id) ^ 0x6f726967ULL)};
  const int64_t ms = StatusMillis(id) - 60'000 - static_cast<int64_t>(d.Below(3 * kDayMs));
  if (ms <= 0) return std::nullopt;
  const uint64_t base = (static_cast<uint64_t>(ms) << 16) | (d.Next() & 0xffc0);
  for (uint64_t k = 0; k < 64; ++k) {
    if (Shown(base + k, config, now_ms) && !DrawnAsReblog(host, base + k)) return base + k;
  }
  return std::nullopt;
}

struct Account {
  uint64_t number = 0;  // which of the server's accounts
  uint64_t seed = 0;
  uint64_t id = 0;
  std::string username;
  std::string display_name;
  int64_t created_ms = 0;  // midnight (UTC): Mastodon sends accounts' created_at as the day
};

// A username as Mastodon allows them ([a-z0-9_]) from a display name: accents folded, other
// scripts left out, and the account's number, so that every account has its own.
std::string Username(const std::string& display_name, uint64_t number) {
  static constexpr std::pair<std::string_view, std::string_view> kFold[] = {
      {"ä", "a"}, {"á", "a"}, {"é", "e"},  {"ë", "e"}, {"í", "i"}, {"ı", "i"}, {"ó", "o"}, {"Ó", "o"},
      {"ö", "o"}, {"ü", "u"}, {"ß", "ss"}, {"ç", "c"}, {"ñ", "n"}, {"ø", "o"}, {"š", "s"}};
  std::string out;
  for (size_t i = 0; i < display_name.size();) {
    const unsigned char c = static_cast<unsigned char>(display_name[i]);
    if (c < 0x80) {
      if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
      if (c == ' ' && !out.empty() && out.back() != '_') out += '_';
      ++i;
      continue;
    }
    const size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    const std::string_view ch(display_name.data() + i, std::min(len, display_name.size() - i));
    for (const auto& [from, to] : kFold) {
      if (ch == from) out += to;
    }
    i += len;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return (out.empty() ? "user" : out) + std::to_string(number);
}

// Account `number` of server `host`: the same name, id and profile in every status of theirs.
Account AccountOf(const std::string& host, uint64_t number) {
  Account a;
  a.number = number;
  a.seed = Mix(Fnv1a(host) ^ Mix(number + 0x6163637400ULL));
  a.display_name = MockDisplayName(a.seed);
  a.username = Username(a.display_name, number);
  constexpr int64_t kFirstDay = 16892;  // 2016-04-01; accounts joined until the end of 2022
  a.created_ms = (kFirstDay + static_cast<int64_t>(a.seed % 2465)) * kDayMs;
  // Account ids are Snowflake-like too: the time of the sign-up (that day) << 16.
  const int64_t signed_up_ms = a.created_ms + static_cast<int64_t>(Mix(a.seed) % kDayMs);
  a.id = (static_cast<uint64_t>(signed_up_ms) << 16) | number;
  return a;
}

Account AuthorOfStatus(const std::string& host, uint64_t id) { return AccountOf(host, AuthorNumber(host, id)); }

// Whether POST /mock/gone deleted the status or made it private on `host` by now, or deleted or
// suspended its author's account there.
bool MadeGone(const std::string& host, uint64_t id, const MockConfig& config, int64_t now_ms) {
  const int64_t at_us = now_ms * 1000 + 999;
  for (const std::optional<GoneState>& s : {config.gone->MastodonStatus(host, id, at_us),
                                            config.gone->MastodonAccount(host, AuthorOfStatus(host, id).id, at_us)}) {
    if (s && s->reason != GoneReason::kActive) return true;
  }
  return false;
}

std::string MastodonDate(int64_t unix_ms) { return MastodonTime(unix_ms).substr(0, 10); }

// Paperclip's id partition: 109302837374838112 -> 109/302/837/374/838/112.
std::string IdPartition(uint64_t id) {
  std::string digits = std::to_string(id);
  digits.insert(0, (3 - digits.size() % 3) % 3, '0');
  std::string out;
  for (size_t i = 0; i < digits.size(); i += 3) out += (i ? "/" : "") + digits.substr(i, 3);
  return out;
}

std::string Hex16(uint64_t seed) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(Mix(seed)));
  return buf;
}

// HTML as Mastodon's formatter escapes text: these five characters.
std::string Escape(std::string_view text) {
  static constexpr std::string_view kFrom = "&<>\"'";
  static constexpr std::array<std::string_view, 5> kTo = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const size_t at = kFrom.find(c);
    if (at == std::string_view::npos)
      out += c;
    else
      out += kTo[at];
  }
  return out;
}

void Key(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}
void Key(JsonWriter& w, const char* key, const char* value) {
  w.Key(key);
  w.String(value);
}
void Key(JsonWriter& w, const char* key, bool value) {
  w.Key(key);
  w.Bool(value);
}
void KeyInt(JsonWriter& w, const char* key, int64_t value) {
  w.Key(key);
  w.Int64(value);
}
void KeyNull(JsonWriter& w, const char* key) {
  w.Key(key);
  w.Null();
}
void KeyNullable(JsonWriter& w, const char* key, const std::string& value) {
  if (value.empty()) return KeyNull(w, key);
  Key(w, key, value);
}

// A base-83 string shaped like a BlurHash (what clients draw while the image loads).
std::string Blurhash(uint64_t seed) {
  static constexpr char kBase83[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~";
  Dice d{seed};
  std::string out = "UF";  // 4x3 components, a mid maximum
  while (out.size() < 28) out += kBase83[d.Below(83)];
  return out;
}

std::string Avatar(const std::string& host, const Account& a, const char* kind, bool missing) {
  if (missing) return "https://" + host + "/" + kind + "s/original/missing.png";
  return "https://" + host + "/system/accounts/" + kind + "s/" + IdPartition(a.id) + "/original/" +
         Hex16(a.seed ^ Fnv1a(kind)) + (kind[0] == 'a' ? ".jpg" : ".png");
}

// Profile metadata ("fields"): a website (verified in one case in two) and pronouns, for some.
void WriteFields(JsonWriter& w, const Account& a, Dice& d) {
  w.Key("fields");
  w.StartArray();
  if (d.OneIn(3)) {
    const std::string site = "example.net/~" + a.username;
    w.StartObject();
    Key(w, "name", "Website");
    Key(w, "value",
        "<a href=\"https://" + site +
            "\" target=\"_blank\" rel=\"nofollow noopener me\" translate=\"no\"><span "
            "class=\"invisible\">https://</span><span class=\"\">" +
            site + "</span><span class=\"invisible\"></span></a>");
    if (d.OneIn(2)) {
      // verified_at: the Field example's "+00:00" form.
      Key(w, "verified_at", MastodonTime(a.created_ms + 3 * kDayMs).substr(0, 23) + "+00:00");
    } else {
      KeyNull(w, "verified_at");
    }
    w.EndObject();
  }
  if (d.OneIn(4)) {
    static constexpr const char* kPronouns[] = {"she/her", "he/him", "they/them", "sie/ihr"};
    w.StartObject();
    Key(w, "name", "Pronouns");
    Key(w, "value", kPronouns[d.Below(4)]);
    KeyNull(w, "verified_at");
    w.EndObject();
  }
  w.EndArray();
}

// An Account as REST::AccountSerializer sends a local one, in its order.
void WriteAccount(JsonWriter& w, const Server& server, const Account& a, int64_t now_ms) {
  const std::string& host = server.host;
  Dice d{a.seed};
  w.StartObject();
  Key(w, "id", std::to_string(a.id));
  Key(w, "username", a.username);
  Key(w, "acct", a.username);  // local: no @domain
  Key(w, "display_name", a.display_name);
  Key(w, "locked", d.OneIn(15));
  Key(w, "bot", d.OneIn(40));
  const uint64_t discoverable = d.Below(5);  // null for accounts that never chose
  w.Key("discoverable");
  if (discoverable == 0) {
    w.Null();
  } else {
    w.Bool(discoverable > 1);
  }
  if (server.v43) Key(w, "indexable", d.OneIn(2));
  Key(w, "group", false);
  Key(w, "created_at", MastodonTime(a.created_ms));
  Key(w, "note", "<p>" + Escape(MockBio(a.seed)) + "</p>");
  Key(w, "url", "https://" + host + "/@" + a.username);
  Key(w, "uri", "https://" + host + "/users/" + a.username);
  const bool no_avatar = d.OneIn(6);
  const bool no_header = d.OneIn(2);
  // 4.6's: drawn from dice of their own, so that what older versions send stays as it was.
  Dice v46{Mix(a.seed ^ 0x76343630ULL)};
  const bool described = !no_avatar && v46.OneIn(3);
  Key(w, "avatar", Avatar(host, a, "avatar", no_avatar));
  Key(w, "avatar_static", Avatar(host, a, "avatar", no_avatar));
  if (server.v46) Key(w, "avatar_description", described ? "A portrait in soft light" : "");
  Key(w, "header", Avatar(host, a, "header", no_header));
  Key(w, "header_static", Avatar(host, a, "header", no_header));
  if (server.v46) Key(w, "header_description", !no_header && v46.OneIn(4) ? "Hills under a cloudy sky" : "");
  const int64_t followers = static_cast<int64_t>((uint64_t{1} << d.Below(15)) + d.Below(1000));
  KeyInt(w, "followers_count", followers);
  KeyInt(w, "following_count", static_cast<int64_t>(d.Below(2000)));
  KeyInt(w, "statuses_count", static_cast<int64_t>(50 + d.Below(20000)));
  Key(w, "last_status_at", MastodonDate(now_ms));  // they posted today
  if (server.v43) {
    const uint64_t hide = d.Below(4);
    w.Key("hide_collections");
    if (hide == 0) {
      w.Null();
    } else {
      w.Bool(hide == 1);
    }
  }
  if (server.v46) {
    Key(w, "show_media", !v46.OneIn(10));
    Key(w, "show_media_replies", !v46.OneIn(3));
    Key(w, "show_featured", !v46.OneIn(10));
  }
  Key(w, "noindex", d.OneIn(5));  // local accounts only
  if (server.v46) {
    // A local account: public when discoverable, else no one; the caller is anonymous: denied
    // (Account::InteractionPolicyConcern#feature_policy_for_account, nil account).
    w.Key("feature_approval");
    w.StartObject();
    w.Key("automatic");
    w.StartArray();
    if (discoverable > 1) w.String("public");
    w.EndArray();
    w.Key("manual");
    w.StartArray();
    w.EndArray();
    Key(w, "current_user", "denied");
    w.EndObject();
  }
  w.Key("emojis");
  w.StartArray();
  w.EndArray();
  w.Key("roles");  // a local account's public roles: none
  w.StartArray();
  w.EndArray();
  WriteFields(w, a, d);
  w.EndObject();
}

// The mention of a local account in content, as Mastodon renders one.
std::string HCard(const std::string& host, const std::string& username) {
  return "<span class=\"h-card\" translate=\"no\"><a href=\"https://" + host + "/@" + username +
         "\" class=\"u-url mention\">@<span>" + username + "</span></a></span>";
}

std::string HashtagLink(const std::string& host, const std::string& tag) {
  return "<a href=\"https://" + host + "/tags/" + tag + "\" class=\"mention hashtag\" rel=\"tag\">#<span>" + tag +
         "</span></a>";
}

struct Mention {
  uint64_t id;
  std::string username;
};

// The text's @name: an account of the same server (not one of those who post in the mock).
Mention MentionedAccount(const std::string& host, const std::string& username) {
  const int64_t ms = 1546300800000 + static_cast<int64_t>(Fnv1a(host + "@" + username) % (4 * 365 * kDayMs));
  return {(static_cast<uint64_t>(ms) << 16) | 0x4d, username};
}

struct LinkCard {
  const char* url;
  const char* title;
  const char* description;
  const char* provider;
  const char* author;  // "" when the page names none
  bool image;
};

constexpr LinkCard kCards[] = {
    {"https://news.example.org/2025/coastal-erosion-report", "Coastal erosion is speeding up, report finds",
     "Three decades of satellite data show shorelines retreating faster than models predicted.", "Example News",
     "Maria Santos", true},
    {"https://blog.example.com/posts/shipping-the-release", "What we learned shipping this release",
     "A long read on testing, rollbacks and the one bug that ate a week.", "", "", false},
    {"https://www.example.net/recipes/ramen-at-home", "Ramen at home, properly",
     "Broth, tare, noodles: a weekend project that pays off.", "Example Kitchen", "", true},
    {"https://data.example.org/datasets/air-quality", "Air quality measurements, 2015–2025",
     "Open data: hourly readings from 140 stations, CSV and Parquet.", "Example Open Data", "", false},
    {"https://video.example.com/watch/festival-trailer", "Festival trailer 🎬",
     "The official trailer of this year's film festival.", "Example Video", "Festival Team", true},
};

// A link in content as Mastodon shortens it for display.
std::string LinkHtml(const std::string& url) {
  const std::string rest = url.substr(std::string_view("https://").size());
  std::string shown = rest.substr(0, 30);
  std::string hidden = rest.size() > 30 ? rest.substr(30) : "";
  return "<a href=\"" + url +
         "\" target=\"_blank\" rel=\"nofollow noopener\" translate=\"no\"><span class=\"invisible\">"
         "https://</span><span class=\"" +
         std::string(hidden.empty() ? "" : "ellipsis") + "\">" + shown + "</span><span class=\"invisible\">" + hidden +
         "</span></a>";
}

void WriteCard(JsonWriter& w, const Server& server, const LinkCard& card, uint64_t seed) {
  w.StartObject();
  Key(w, "url", card.url);
  Key(w, "title", card.title);
  Key(w, "description", card.description);
  Key(w, "type", "link");
  if (server.v43) {
    w.Key("authors");
    w.StartArray();
    if (card.author[0] != '\0') {
      w.StartObject();
      Key(w, "name", card.author);
      Key(w, "url", "");
      KeyNull(w, "account");
      w.EndObject();
    }
    w.EndArray();
  }
  Key(w, "author_name", card.author);
  Key(w, "author_url", "");
  Key(w, "provider_name", card.provider);
  Key(w, "provider_url", "");
  Key(w, "html", "");
  KeyInt(w, "width", card.image ? 400 : 0);
  KeyInt(w, "height", card.image ? 225 : 0);
  if (card.image) {
    Key(w, "image",
        "https://" + server.host + "/system/cache/preview_cards/images/" + IdPartition(seed % 1000000000) +
            "/original/" + Hex16(seed) + ".jpg");
  } else {
    KeyNull(w, "image");
  }
  Key(w, "embed_url", "");
  KeyNullable(w, "blurhash", card.image ? Blurhash(seed) : "");
  if (server.v46) KeyNull(w, "missing_attribution");  // it concerns the reader's own articles: none
  w.EndObject();
}

void WriteImages(JsonWriter& w, const std::string& host, uint64_t status_id, Dice& d) {
  static constexpr int kSizes[][2] = {{1600, 1200}, {1200, 1600}, {1920, 1080}, {1080, 1080}, {640, 480}};
  static constexpr const char* kAlt[] = {"A cyclist on a wet road at dawn", "Bar chart of the yearly averages",
                                         "Ein Teller Ramen mit Ei", "Cherry blossoms by a river 🌸"};
  const uint64_t n = 1 + d.Below(4);
  w.Key("media_attachments");
  w.StartArray();
  for (uint64_t i = 0; i < n; ++i) {
    // Uploaded a little before the status was posted: an id of that time.
    const uint64_t id = status_id - ((5000 + d.Below(120000) + 1000 * i) << 16);
    const auto& size = kSizes[d.Below(5)];
    const int sw = size[0] >= size[1] ? 640 : 640 * size[0] / size[1];
    const int sh = size[0] >= size[1] ? 640 * size[1] / size[0] : 640;
    const std::string file = IdPartition(id) + "/%s/" + Hex16(id) + ".jpeg";
    auto path = [&](const char* kind) {
      std::string p = file;
      p.replace(p.find("%s"), 2, kind);
      return "https://" + host + "/system/media_attachments/files/" + p;
    };
    w.StartObject();
    Key(w, "id", std::to_string(id));
    Key(w, "type", "image");
    Key(w, "url", path("original"));
    Key(w, "preview_url", path("small"));
    KeyNull(w, "remote_url");  // local
    w.Key("meta");
    w.StartObject();
    for (const auto& [name, mw, mh] : {std::tuple<const char*, int, int>{"original", size[0], size[1]},
                                       std::tuple<const char*, int, int>{"small", sw, sh}}) {
      w.Key(name);
      w.StartObject();
      KeyInt(w, "width", mw);
      KeyInt(w, "height", mh);
      Key(w, "size", std::to_string(mw) + "x" + std::to_string(mh));
      w.Key("aspect");
      w.Double(static_cast<double>(mw) / mh);
      w.EndObject();
    }
    if (d.OneIn(3)) {
      w.Key("focus");
      w.StartObject();
      w.Key("x");
      w.Double(static_cast<double>(static_cast<int64_t>(d.Below(201)) - 100) / 100);
      w.Key("y");
      w.Double(static_cast<double>(static_cast<int64_t>(d.Below(201)) - 100) / 100);
      w.EndObject();
    }
    w.EndObject();
    KeyNullable(w, "description", d.OneIn(3) ? "" : kAlt[d.Below(4)]);  // alt text, when given
    Key(w, "blurhash", Blurhash(id));
    w.EndObject();
  }
  w.EndArray();
}

void WritePoll(JsonWriter& w, uint64_t status_id, int64_t created_ms, int64_t now_ms, int64_t votes, Dice& d) {
  static constexpr const char* kPolls[][4] = {{"☕ Coffee", "🍵 Tea", "Neither", nullptr},
                                              {"Yes", "No", "Show me the results", nullptr},
                                              {"Morning", "Afternoon", "Evening", "Night 🌙"},
                                              {"Ja", "Nein", nullptr, nullptr}};
  const auto& titles = kPolls[d.Below(4)];
  const bool multiple = d.OneIn(3);
  const int64_t expires_ms = created_ms + (1 + static_cast<int64_t>(d.Below(7))) * kDayMs;
  std::vector<int64_t> option_votes;
  int64_t left = votes;
  for (int i = 0; i < 4 && titles[i]; ++i) {
    const int64_t v =
        (i + 1 < 4 && titles[i + 1]) ? static_cast<int64_t>(d.Below(static_cast<uint64_t>(left) + 1)) : left;
    option_votes.push_back(v);
    left -= v;
  }
  int64_t total = 0;
  for (int64_t v : option_votes) total += v;
  w.Key("poll");
  w.StartObject();
  // Poll ids count up (a sequence, not a Snowflake).
  Key(w, "id", std::to_string(10000 + Mix(status_id) % 9000000));
  Key(w, "expires_at", MastodonTime(expires_ms));
  Key(w, "expired", now_ms >= expires_ms);
  Key(w, "multiple", multiple);
  // A voter may tick several options of a multiple-choice poll: votes_count counts the ticks.
  KeyInt(w, "votes_count", multiple ? total + total / 3 : total);
  w.Key("voters_count");
  if (multiple) {
    w.Int64(total);
  } else {
    w.Null();
  }
  w.Key("options");
  w.StartArray();
  for (size_t i = 0; i < option_votes.size(); ++i) {
    w.StartObject();
    Key(w, "title", titles[i]);
    KeyInt(w, "votes_count", multiple && i == 0 ? option_votes[i] + total / 3 : option_votes[i]);
    w.EndObject();
  }
  w.EndArray();
  w.Key("emojis");
  w.StartArray();
  w.EndArray();
  w.EndObject();
}

struct App {
  const char* name;
  const char* website;  // nullptr: null
};
constexpr App kApps[] = {{"Web", nullptr},
                         {"Mastodon for iOS", "https://app.joinmastodon.org/ios"},
                         {"Mastodon for Android", "https://app.joinmastodon.org/android"},
                         {"Ivory for iOS", "https://tapbots.com/ivory/"},
                         {"Tusky", "https://tusky.app"},
                         {"Phanpy", "https://phanpy.social"}};

constexpr const char* kWarnings[] = {"Spoilers for the finale", "US politics",  "food", "eye contact",
                                     "Gesundheit, Krankenhaus", "mental health"};

void EmptyArray(JsonWriter& w, const char* key) {
  w.Key(key);
  w.StartArray();
  w.EndArray();
}

void WriteQuoteApproval(JsonWriter& w) {
  // Anyone may quote; an anonymous caller is told it may not (it has no account to quote with).
  w.Key("quote_approval");
  w.StartObject();
  w.Key("automatic");
  w.StartArray();
  w.String("public");
  w.EndArray();
  EmptyArray(w, "manual");
  Key(w, "current_user", "denied");
  w.EndObject();
}

void WriteStatus(JsonWriter& w, const Server& server, uint64_t id, const MockConfig& config, int64_t now_ms);

// A reblog: a status of its own (the booster's, counted nothing, no content) around the original.
void WriteReblog(JsonWriter& w, const Server& server, uint64_t id, uint64_t original, const MockConfig& config,
                 int64_t now_ms) {
  const std::string& host = server.host;
  const Account booster = AuthorOfStatus(host, id);
  const std::string activity =
      "https://" + host + "/users/" + booster.username + "/statuses/" + std::to_string(id) + "/activity";
  w.StartObject();
  Key(w, "id", std::to_string(id));
  Key(w, "created_at", MastodonTime(StatusMillis(id)));
  KeyNull(w, "in_reply_to_id");
  KeyNull(w, "in_reply_to_account_id");
  Key(w, "sensitive", false);
  Key(w, "spoiler_text", "");
  Key(w, "visibility", "public");
  KeyNull(w, "language");
  Key(w, "uri", activity);
  Key(w, "url", activity);
  WriteCounts(w, {{"replies_count", 0}, {"reblogs_count", 0}, {"favourites_count", 0}});
  if (server.v45) WriteCounts(w, {{"quotes_count", 0}});
  KeyNull(w, "edited_at");
  Key(w, "content", "");
  w.Key("reblog");
  WriteStatus(w, server, original, config, now_ms);
  w.Key("account");
  WriteAccount(w, server, booster, now_ms);
  for (const char* key : {"media_attachments", "mentions", "tags", "emojis"}) EmptyArray(w, key);
  if (server.v45) KeyNull(w, "quote");
  KeyNull(w, "card");
  KeyNull(w, "poll");
  if (server.v45) WriteQuoteApproval(w);
  if (server.v46) EmptyArray(w, "tagged_collections");  // no link to a Collection
  w.EndObject();
}

// What a status says: its HTML (a reply's h-card first, the text's @mention and #hashtag as
// links, a custom emoji, a card's link) and whom it mentions. A reply's parent is drawn from `d`.
struct Content {
  std::string html;
  std::vector<Mention> mentions;
  std::string tail;  // the hashtag's link ("" without one)
  uint64_t parent = 0;
  std::optional<Account> parent_author;
};
Content ComposeContent(const std::string& host, const PostText& text, const Account& author, bool reply, bool emoji,
                       const LinkCard* card, int64_t created_ms, Dice& d) {
  Content c;
  c.html = "<p>";
  if (reply) {
    c.parent = (static_cast<uint64_t>(created_ms - 1000 - static_cast<int64_t>(d.Below(6 * 3600 * 1000))) << 16) |
             (d.Below(65536) & 0xffc0);
    // A reply to a boost is a reply to the status boosted: the parent is never a reblog.
    for (int k = 0; k < 64 && DrawnAsReblog(host, c.parent); ++k) ++c.parent;
    c.parent_author = AuthorOfStatus(host, c.parent);
    if (c.parent_author->id != author.id) {  // a reply to oneself mentions no one
      c.mentions.push_back({c.parent_author->id, c.parent_author->username});
      c.html += HCard(host, c.parent_author->username) + " ";
    }
  }
  // The text, its @mention and #hashtag as links (MockPostText puts them first and last).
  std::string_view rest = text.text;
  if (!text.mention.empty() && rest.substr(0, text.mention.size() + 2) == "@" + text.mention + " ") {
    c.html += HCard(host, text.mention) + " ";
    rest.remove_prefix(text.mention.size() + 2);
    c.mentions.push_back(MentionedAccount(host, text.mention));
  }
  if (!text.hashtag.empty() && rest.size() > text.hashtag.size() + 2 &&
      rest.substr(rest.size() - text.hashtag.size() - 2) == " #" + text.hashtag) {
    rest.remove_suffix(text.hashtag.size() + 2);
    c.tail = " " + HashtagLink(host, text.hashtag);
  }
  c.html += Escape(rest) + c.tail;
  if (emoji) c.html += " :blobcat_heart:";
  if (card) c.html += " " + LinkHtml(card->url);
  c.html += "</p>";
  return c;
}

void WriteApplication(JsonWriter& w, const App& app) {
  w.Key("application");
  w.StartObject();
  Key(w, "name", app.name);
  w.Key("website");
  if (app.website) {
    w.String(app.website);
  } else {
    w.Null();
  }
  w.EndObject();
}

// The mentions, the tag (when the content links one) and the custom emoji (when it holds one).
void WriteMentionsTagsEmojis(JsonWriter& w, const std::string& host, const Content& c, const std::string& hashtag,
                             bool emoji) {
  w.Key("mentions");
  w.StartArray();
  for (const Mention& mention : c.mentions) {
    w.StartObject();
    Key(w, "id", std::to_string(mention.id));
    Key(w, "username", mention.username);
    Key(w, "url", "https://" + host + "/@" + mention.username);
    Key(w, "acct", mention.username);
    w.EndObject();
  }
  w.EndArray();
  w.Key("tags");
  w.StartArray();
  if (!c.tail.empty()) {
    w.StartObject();
    Key(w, "name", hashtag);
    Key(w, "url", "https://" + host + "/tags/" + hashtag);
    w.EndObject();
  }
  w.EndArray();
  w.Key("emojis");
  w.StartArray();
  if (emoji) {
    const std::string file = "/system/custom_emojis/images/000/012/345/%s/6a1d3c0e9f2b4a77.png";
    w.StartObject();
    Key(w, "shortcode", "blobcat_heart");
    Key(w, "url", "https://" + host + std::string(file).replace(file.find("%s"), 2, "original"));
    Key(w, "static_url", "https://" + host + std::string(file).replace(file.find("%s"), 2, "static"));
    Key(w, "visible_in_picker", true);
    Key(w, "category", "Blobs");
    w.EndObject();
  }
  w.EndArray();
}

// A Status as REST::StatusSerializer sends it to a caller without a user (no favourited,
// bookmarked, ...), in its order; what it holds is drawn from its id (README.md: the shares).
void WriteStatus(JsonWriter& w, const Server& server, uint64_t id, const MockConfig& config, int64_t now_ms) {
  if (const std::optional<uint64_t> original = RebloggedStatus(server.host, id, config, now_ms)) {
    return WriteReblog(w, server, id, *original, config, now_ms);
  }
  const std::string& host = server.host;
  const uint64_t h = StatusSeed(host, id);
  const int64_t created_ms = StatusMillis(id);
  const PublicMetrics m = Engagement(config, Network::kMastodon, h, std::max<int64_t>(0, (now_ms - created_ms) / 1000));
  const Account author = AuthorOfStatus(host, id);
  const PostText text = MockPostText(Mix(h ^ 0x74657874ULL));
  const std::string sid = std::to_string(id);
  Dice d{Mix(h ^ 0x73686170ULL)};
  // The draws, always in this order, so that each status keeps its shape.
  const bool unlisted = d.OneIn(10);
  const bool reply = d.OneIn(6);
  const bool media = d.OneIn(5);
  const bool poll = !media && d.OneIn(12);  // Mastodon takes media or a poll, not both
  const bool card = !media && !poll && d.OneIn(5);
  const bool warned = d.OneIn(12);
  const bool emoji = d.OneIn(15);
  const uint64_t app = d.Below(8);  // 6 and 7: the author hides the application
  const int64_t edited_ms = d.OneIn(10) ? created_ms + 1000 + static_cast<int64_t>(d.Below(2 * 3600 * 1000)) : 0;
  const LinkCard& link = kCards[d.Below(std::size(kCards))];

  const Content c = ComposeContent(host, text, author, reply, emoji, card ? &link : nullptr, created_ms, d);

  w.StartObject();
  Key(w, "id", sid);
  Key(w, "created_at", MastodonTime(created_ms));
  if (reply) {
    Key(w, "in_reply_to_id", std::to_string(c.parent));
    Key(w, "in_reply_to_account_id", std::to_string(c.parent_author->id));
  } else {
    KeyNull(w, "in_reply_to_id");
    KeyNull(w, "in_reply_to_account_id");
  }
  Key(w, "sensitive", warned || (media && d.OneIn(4)));
  Key(w, "spoiler_text", warned ? kWarnings[d.Below(std::size(kWarnings))] : "");
  Key(w, "visibility", unlisted ? "unlisted" : "public");
  Key(w, "language", text.lang);
  Key(w, "uri", "https://" + host + "/users/" + author.username + "/statuses/" + sid);
  Key(w, "url", "https://" + host + "/@" + author.username + "/" + sid);
  WriteCounts(
      w, {{"replies_count", m.reply_count}, {"reblogs_count", m.retweet_count}, {"favourites_count", m.like_count}});
  if (server.v45) WriteCounts(w, {{"quotes_count", m.quote_count}});
  if (edited_ms != 0 && edited_ms <= now_ms) {
    Key(w, "edited_at", MastodonTime(edited_ms));
  } else {
    KeyNull(w, "edited_at");
  }
  Key(w, "content", c.html);
  KeyNull(w, "reblog");
  if (app < std::size(kApps)) WriteApplication(w, kApps[app]);
  w.Key("account");
  WriteAccount(w, server, author, now_ms);
  if (media) {
    WriteImages(w, host, id, d);
  } else {
    EmptyArray(w, "media_attachments");
  }
  WriteMentionsTagsEmojis(w, host, c, text.hashtag, emoji);
  if (server.v45) KeyNull(w, "quote");
  w.Key("card");
  if (card) {
    WriteCard(w, server, link, h);
  } else {
    w.Null();
  }
  if (poll) {
    WritePoll(w, id, created_ms, now_ms, m.like_count / 2, d);
  } else {
    KeyNull(w, "poll");
  }
  if (server.v45) WriteQuoteApproval(w);
  if (server.v46) EmptyArray(w, "tagged_collections");  // no link to a Collection
  w.EndObject();
}

bool HostCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}


// The status account `number` of `host` posted at `ms`: shown, no reblog, and by that account in
// the model (AuthorNumber), so that GET /api/v1/statuses says the same of it.
uint64_t FollowStatusId(const std::string& host, uint64_t number, int64_t ms, const MockConfig& config) {
  const uint64_t base = static_cast<uint64_t>(ms) << 16;
  const uint64_t start = Mix(number ^ Fnv1a(host)) & 0xffff;
  for (uint64_t i = 0; i < 0x10000; ++i) {
    const uint64_t id = base | ((start + i) & 0xffff);
    if (AuthorNumber(host, id) == number && Shown(id, config, INT64_MAX / 2) && !DrawnAsReblog(host, id)) return id;
  }
  return base;  // not reached in practice: one low part in 2,000 has the author
}

// The account a lookup's acct names on `host` (user, or user@host), if the server has it.
std::optional<Account> AccountByAcct(const std::string& host, std::string acct) {
  const size_t at = acct.find('@');
  if (at != std::string::npos) {
    std::string domain = acct.substr(at + 1);
    std::transform(domain.begin(), domain.end(), domain.begin(), [](unsigned char c) { return std::tolower(c); });
    if (domain != host) return std::nullopt;  // a remote account: this server does not know it
    acct.resize(at);
  }
  std::transform(acct.begin(), acct.end(), acct.begin(), [](unsigned char c) { return std::tolower(c); });
  size_t digits = acct.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(acct[digits - 1]))) --digits;
  if (digits == acct.size() || acct.size() - digits > 4) return std::nullopt;
  const uint64_t number = std::stoull(acct.substr(digits));
  if (number >= kAccountsPerServer) return std::nullopt;
  Account a = AccountOf(host, number);
  if (a.username != acct) return std::nullopt;
  return a;
}

// The account of an id, if the server has it (ids are the sign-up time << 16 | its number).
std::optional<Account> AccountById(const std::string& host, uint64_t id) {
  const uint64_t number = id & 0xffff;
  if (number >= kAccountsPerServer) return std::nullopt;
  Account a = AccountOf(host, number);
  if (a.id != id) return std::nullopt;
  return a;
}

// The value of a single-valued parameter, or nothing.
std::optional<std::string> Param(const QueryParams& params, const char* name) {
  const auto it = params.find(name);
  if (it == params.end()) return std::nullopt;
  return it->second;
}

// GET /api/v1/accounts/:id/statuses: newest first; max_id, since_id, min_id (the statuses right
// after it, not the newest ones), limit (20, at most 40); a Link header to the pages around it.
EndpointReply AccountStatuses(const Server& server, const Account& account, const QueryParams& params,
                              const MockConfig& config, int64_t now_ms) {
  int64_t limit = 20;
  if (const auto v = Param(params, "limit")) {
    const std::optional<uint64_t> n = StatusId(*v);
    limit = n ? static_cast<int64_t>(std::min<uint64_t>(*n, 40)) : 20;  // to_i, capped at 40
  }
  const auto id_param = [&](const char* name) -> std::optional<uint64_t> {
    const auto v = Param(params, name);
    return v ? StatusId(*v) : std::nullopt;
  };
  const std::optional<uint64_t> max_id = id_param("max_id"), since_id = id_param("since_id"), min_id = id_param("min_id");
  int64_t from = 0, to = now_ms;
  if (max_id) to = std::min(to, StatusMillis(*max_id));
  if (since_id) from = std::max(from, StatusMillis(*since_id));
  if (min_id) from = std::max(from, StatusMillis(*min_id));
  std::vector<uint64_t> ids;
  // min_id pages forward from it (the oldest after it first); otherwise the newest first.
  const bool forward = min_id.has_value();
  for (int64_t ms : PostTimes(CadenceOf(server.host, account.number, config), from, to, static_cast<size_t>(limit) + 2,
                              !forward)) {
    const uint64_t id = FollowStatusId(server.host, account.number, ms, config);
    if ((max_id && id >= *max_id) || (since_id && id <= *since_id) || (min_id && id <= *min_id)) continue;
    if (static_cast<int64_t>(ids.size()) == limit) break;
    ids.push_back(id);
  }
  std::sort(ids.rbegin(), ids.rend());  // always sent newest first
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartArray();
  for (uint64_t id : ids) WriteStatus(w, server, id, config, now_ms);
  w.EndArray();
  EndpointReply r;
  r.body = buf.GetString();
  if (!ids.empty()) {
    // As Mastodon's pagination_params: the request's limit and filters go on in both links.
    std::string kept;
    for (const char* name : {"limit", "exclude_replies", "exclude_reblogs", "only_media", "pinned"})
      if (const auto v = Param(params, name)) kept += std::string(name) + "=" + *v + "&";
    const std::string base =
        "https://" + server.host + "/api/v1/accounts/" + std::to_string(account.id) + "/statuses?" + kept;
    r.headers.emplace_back("Link", "<" + base + "max_id=" + std::to_string(ids.back()) + ">; rel=\"next\", <" + base +
                                       "min_id=" + std::to_string(ids.front()) + ">; rel=\"prev\"");
  }
  return r;
}
}  // namespace

std::string MastodonResetTime(int64_t unix_s) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.000000Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string MastodonTime(int64_t unix_ms) {
  const int64_t ms = ((unix_ms % 1000) + 1000) % 1000;
  const std::time_t t = static_cast<std::time_t>((unix_ms - ms) / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::optional<std::pair<std::string, int>> ParseMastodonHost(const std::string& spec, std::string* error) {
  const size_t eq = spec.rfind('=');
  const std::string host = eq == std::string::npos ? spec : spec.substr(0, eq);
  if (eq == std::string::npos) {
    *error = "--mastodon-host " + spec + ": expected HOST=PORT (for example a.social=0)";
    return std::nullopt;
  }
  if (host.empty() || host.size() > 253 || !std::all_of(host.begin(), host.end(), HostCharacter) ||
      host.front() == '.' || host.front() == '-') {
    *error = "--mastodon-host " + spec + ": HOST must be a server name (letters, digits, '-' and '.')";
    return std::nullopt;
  }
  const std::string port_text = spec.substr(eq + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 ||
      port > 65535) {
    *error = "--mastodon-host " + spec + ": PORT must be a whole number from 0 to 65535 (0: any free port)";
    return std::nullopt;
  }
  return std::make_pair(host, port);
}

EndpointReply MastodonApi(const std::string& host, const std::string& path, const QueryParams& params, bool authorized,
                          const MockConfig& config, int64_t now_ms) {
  const Server server = ServerOf(host);
  if (path == "/api/v2/instance") {
    EndpointReply r;
    r.body = "{\"domain\":\"" + host + "\",\"title\":\"Mock " + host + "\",\"version\":\"" +
             (server.v46 ? "4.6.0" : "4.2.10") + "\"}";
    return r;
  }
  if (StartsWith(host, "locked") && !authorized) return Error(401, "This API requires an authenticated user");
  if (path == "/api/v1/statuses") {
    if (!server.v43) return Error(404, "Record not found");  // no such route before 4.3
    std::vector<uint64_t> ids;
    std::set<uint64_t> seen;
    const auto range = params.equal_range("id[]");
    for (auto it = range.first; it != range.second; ++it) {
      const std::optional<uint64_t> id = StatusId(it->second);
      if (id && seen.insert(*id).second) ids.push_back(*id);  // Array(...).uniq.map(&:to_i)
    }
    if (ids.size() > kMaxStatuses) return Error(422, "Mastodon::ValidationError");
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    w.StartArray();
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {  // not the request's order
      if (Shown(*it, config, now_ms) && !MadeGone(host, *it, config, now_ms)) WriteStatus(w, server, *it, config, now_ms);
    }
    w.EndArray();
    EndpointReply r;
    r.body = buf.GetString();
    return r;
  }
  if (path == "/api/v1/accounts/lookup") {
    const std::optional<std::string> acct = Param(params, "acct");
    const std::optional<Account> account = acct ? AccountByAcct(host, *acct) : std::nullopt;
    if (!account) return Error(404, "Record not found");
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    WriteAccount(w, server, *account, now_ms);
    EndpointReply r;
    r.body = buf.GetString();
    return r;
  }
  static const std::string kAccounts = "/api/v1/accounts/";
  if (StartsWith(path, kAccounts.c_str())) {
    const size_t slash = path.find('/', kAccounts.size());
    if (slash != std::string::npos && path.substr(slash) == "/statuses") {
      const std::optional<uint64_t> id = StatusId(path.substr(kAccounts.size(), slash - kAccounts.size()));
      const std::optional<Account> account = id ? AccountById(host, *id) : std::nullopt;
      if (!account) return Error(404, "Record not found");
      return AccountStatuses(server, *account, params, config, now_ms);
    }
  }
  static const std::string kOne = "/api/v1/statuses/";
  if (StartsWith(path, kOne.c_str()) && path.find('/', kOne.size()) == std::string::npos) {
    const std::optional<uint64_t> id = StatusId(path.substr(kOne.size()));
    if (!id || !Shown(*id, config, now_ms) || MadeGone(host, *id, config, now_ms)) return Error(404, "Record not found");
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    WriteStatus(w, server, *id, config, now_ms);
    EndpointReply r;
    r.body = buf.GetString();
    return r;
  }
  return Error(404, "Record not found");
}

std::vector<MadePost> MastodonMadePosts(const std::string& host, int64_t from_ms, int64_t to_ms,
                                       const MockConfig& config) {
  std::vector<MadePost> out;
  for (uint64_t k = 0; k < std::min(config.follow_accounts, kAccountsPerServer); ++k) {
    const Account a = AccountOf(host, k);
    for (int64_t ms : PostTimes(CadenceOf(host, k, config), from_ms, to_ms, 1'000'000, false)) {
      out.push_back({"https://" + host + "/@" + a.username + "/" + std::to_string(FollowStatusId(host, k, ms, config)), ms});
    }
  }
  return out;
}

std::vector<std::pair<std::string, double>> MastodonPosters(const std::string& host, const MockConfig& config) {
  std::vector<std::pair<std::string, double>> out;
  for (uint64_t k = 0; k < std::min(config.follow_accounts, kAccountsPerServer); ++k)
    out.emplace_back("https://" + host + "/@" + AccountOf(host, k).username, CadenceOf(host, k, config).per_second());
  return out;
}

uint64_t MastodonSeed(const std::string& host, uint64_t id) { return StatusSeed(host, id); }

}  // namespace tweetkeeper::mock
