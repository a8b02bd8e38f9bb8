// See post_url.hpp. The rules, with their sources in ../shared/providers/FACTS.md:
//  - X: https://{x.com,twitter.com,mobile.twitter.com,...}/<user>/status/<id> and /i/web/status/<id>;
//    ids are Snowflakes (created_ms = (id >> 22) + 1288834974657 from November 2010 on).
//  - Bluesky: https://bsky.app/profile/<handle or DID>/post/<rkey> and
//    at://<handle or DID>/app.bsky.feed.post/<rkey>; a post's rkey is a TID (13 characters of
//    base32-sortable, 53 bits of microseconds then 10 of clock id); DIDs are did:plc or did:web.
//  - Mastodon: https://<host>/@<user>/<id> and https://<host>/users/<user>/statuses/<id>; ids are
//    numbers, milliseconds << 16 on Mastodon servers (other software may differ: then no time).
#include "post_url.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "cpp_only.hpp"

namespace tweetkeeper {
namespace {

constexpr int64_t kTwitterEpochMs = INT64_C(1288834974657);
constexpr int64_t kPlausibleFromMs = INT64_C(1451606400000);   // 2016-01-01: before, not a Mastodon time
constexpr int64_t kBlueskyFromMs = INT64_C(1640995200000);     // 2022-01-01: before Bluesky's first post
constexpr int64_t kPlausibleUntilMs = INT64_C(4102444800000);  // 2100-01-01
constexpr size_t kQuoteMax = 200;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAlnum(char c) { return IsDigit(c) || IsAlpha(c); }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string LowerCopy(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), Lower);
  return out;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (Lower(s[i]) != prefix[i]) return false;
  return true;
}

// Valid UTF-8 (no overlong forms, no surrogates): only such text is quoted back.
bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = c;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// The value in quotes for a message: control characters as \xNN, cut to kQuoteMax characters.
std::string Quote(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && ++chars > kQuoteMax) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

[[noreturn]] void Fail(std::string_view url, const std::string& why, const char* what = "post") {
  throw PostUrlError(std::string("not a ") + what + " URL " + Quote(url) + ": " + why);
}

// A positive int64 in plain decimal (1 to 19 digits, no sign, no leading zero).
std::optional<int64_t> PositiveId(std::string_view s) {
  if (s.empty() || s.size() > 19 || s[0] == '0') return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> Plausible(int64_t ms, int64_t from) {
  if (ms < from || ms >= kPlausibleUntilMs) return std::nullopt;
  return ms;
}

// A DNS name as hosts and atproto handles use it: labels of letters, digits and inner hyphens,
// at least two of them, the last not starting with a digit; 253 characters at most.
bool IsDomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t labels = 0, start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!IsAlnum(c) && c != '-') return false;
    ++labels;
    if (dot == std::string_view::npos) return labels >= 2 && !IsDigit(label.front());
    start = dot + 1;
  }
}

bool IsTid(std::string_view s) {
  static constexpr std::string_view kFirst = "234567abcdefghij";
  static constexpr std::string_view kRest = "234567abcdefghijklmnopqrstuvwxyz";
  if (s.size() != 13 || kFirst.find(s[0]) == std::string_view::npos) return false;
  return std::all_of(s.begin() + 1, s.end(), [](char c) { return kRest.find(c) != std::string_view::npos; });
}

// A TID's time: its 53 bits after the top one are microseconds since 1970.
int64_t TidMillis(std::string_view tid) {
  static constexpr std::string_view kAlphabet = "234567abcdefghijklmnopqrstuvwxyz";
  uint64_t v = 0;
  for (char c : tid) v = (v << 5) | static_cast<uint64_t>(kAlphabet.find(c));
  return static_cast<int64_t>((v >> 10) / 1000);
}

// An atproto account as a URL names it: a DID (did:plc:<24 base32 characters> or
// did:web:<host>) or a handle (a domain, lower-cased). Empty with `why` set when it is neither.
std::string Actor(std::string_view s, std::string* why) {
  if (StartsWithNoCase(s, "did:")) {
    if (s.substr(0, 8) == "did:plc:") {
      const std::string_view id = s.substr(8);
      if (id.size() == 24 &&
          std::all_of(id.begin(), id.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '2' && c <= '7'); }))
        return std::string(s);
      *why = "a did:plc is \"did:plc:\" and 24 characters of a-z and 2-7";
      return {};
    }
    if (s.substr(0, 8) == "did:web:") {
      if (IsDomain(s.substr(8))) return "did:web:" + LowerCopy(s.substr(8));
      *why = "a did:web names a host";
      return {};
    }
    *why = "Bluesky accounts are did:plc or did:web DIDs";
    return {};
  }
  if (IsDomain(s)) return LowerCopy(s);
  *why = "the account is neither a handle (a domain name) nor a DID";
  return {};
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    const size_t end = slash == std::string_view::npos ? path.size() : slash;
    out.push_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (out.size() > 1 && out.back().empty()) out.pop_back();  // one trailing slash
  return out;
}

bool IsXHost(std::string_view host) {
  static constexpr std::array<std::string_view, 6> kHosts = {"x.com",       "www.x.com",       "mobile.x.com",
                                                             "twitter.com", "www.twitter.com", "mobile.twitter.com"};
  return std::find(kHosts.begin(), kHosts.end(), host) != kHosts.end();
}

bool IsXUser(std::string_view s) {
  return !s.empty() && s.size() <= 50 && std::all_of(s.begin(), s.end(), [](char c) { return IsAlnum(c) || c == '_'; });
}

bool IsMastodonUser(std::string_view s) {
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return IsAlnum(c) || c == '_' || c == '.' || c == '-'; });
}

// What may follow an X post's id in a URL people copy: /photo/<n>, /video/<n>, or one of the
// post's own pages.
bool XTail(const std::vector<std::string_view>& seg, size_t from) {
  if (seg.size() == from) return true;
  if (seg.size() == from + 2 && (seg[from] == "photo" || seg[from] == "video"))
    return seg[from + 1].size() == 1 && IsDigit(seg[from + 1][0]);
  static constexpr std::array<std::string_view, 5> kPages = {"analytics", "quotes", "retweets", "likes", "history"};
  return seg.size() == from + 1 && std::find(kPages.begin(), kPages.end(), seg[from]) != kPages.end();
}

PostRef XPost(std::string_view url, std::string_view user, std::string_view id_text) {
  const auto id = PositiveId(id_text);
  if (!id) Fail(url, "an X post id is a positive number of at most 19 digits, got " + Quote(id_text));
  PostRef ref;
  ref.network = Network::kX;
  ref.author = std::string(user);
  ref.key = std::to_string(*id);
  if ((*id >> 22) >= 86400000) ref.created_ms = (*id >> 22) + kTwitterEpochMs;  // Snowflake ids only
  ref.canonical = "https://x.com/i/web/status/" + ref.key;
  return ref;
}

PostRef BlueskyPost(std::string_view url, std::string_view actor, std::string_view rkey) {
  std::string why;
  std::string author = Actor(actor, &why);
  if (author.empty()) Fail(url, why + ", got " + Quote(actor));
  if (!IsTid(rkey)) Fail(url, "a Bluesky post's key is a TID (13 characters of 2-7 and a-z), got " + Quote(rkey));
  PostRef ref;
  ref.network = Network::kBluesky;
  ref.author = std::move(author);
  ref.key = std::string(rkey);
  ref.created_ms = Plausible(TidMillis(rkey), kBlueskyFromMs);
  ref.canonical = "at://" + ref.author + "/app.bsky.feed.post/" + ref.key;
  return ref;
}

PostRef MastodonPost(std::string_view url, const std::string& host, std::string_view user, std::string_view id_text) {
  const size_t at = user.find('@');
  if (!IsMastodonUser(user.substr(0, at)) || (at != std::string_view::npos && !IsDomain(user.substr(at + 1))))
    Fail(url, "a Mastodon user is letters, digits and _ . - (and @domain for a remote one), got " + Quote(user));
  const auto id = PositiveId(id_text);
  if (!id) Fail(url, "a Mastodon status id is a positive number of at most 19 digits, got " + Quote(id_text));
  PostRef ref;
  ref.network = Network::kMastodon;
  ref.host = host;
  ref.author = at == std::string_view::npos ? std::string(user)
                                            : std::string(user.substr(0, at)) + "@" + LowerCopy(user.substr(at + 1));
  ref.key = std::to_string(*id);
  ref.created_ms = Plausible(*id >> 16, kPlausibleFromMs);
  ref.canonical = "https://" + host + "/@" + ref.author + "/" + ref.key;
  return ref;
}

// The value without surrounding blanks; refuses one too long, not UTF-8, or empty.
std::string_view Trimmed(std::string_view raw, const char* what) {
  if (raw.size() > kMaxPostUrlBytes)
    Fail(raw, "it is longer than " + std::to_string(kMaxPostUrlBytes) + " bytes, the most a " + what + " URL has",
         what);
  if (!ValidUtf8(raw)) throw PostUrlError(std::string("not a ") + what + " URL: the value is not valid UTF-8");
  std::string_view url = raw;
  while (!url.empty() && (url.front() == ' ' || url.front() == '\t' || url.front() == '\r' || url.front() == '\n'))
    url.remove_prefix(1);
  while (!url.empty() && (url.back() == ' ' || url.back() == '\t' || url.back() == '\r' || url.back() == '\n'))
    url.remove_suffix(1);
  if (url.empty()) Fail(raw, "it is empty", what);
  return url;
}

// What follows the scheme: the host (lower case, a domain name) returned, the path's segments
// in *seg; query strings and fragments say nothing about a post or an account.
std::string HostAndPath(std::string_view raw, std::string_view rest, std::vector<std::string_view>* seg,
                        const char* what) {
  rest = rest.substr(0, rest.find_first_of("?#"));
  const size_t slash = rest.find('/');
  std::string host = LowerCopy(rest.substr(0, slash));
  if (!host.empty() && host.back() == '.') host.pop_back();
  if (!IsDomain(host)) Fail(raw, "the host is not a domain name (no user, no port), got " + Quote(host), what);
  seg->clear();
  if (slash != std::string_view::npos) *seg = Segments(rest.substr(slash + 1));
  return host;
}

constexpr const char* kForms =
    "X: https://x.com/<user>/status/<id>; Bluesky: https://bsky.app/profile/<handle or DID>/post/<rkey> or "
    "at://<handle or DID>/app.bsky.feed.post/<rkey>; Mastodon: https://<host>/@<user>/<id>";

}  // namespace

const char* NetworkName(Network network) {
  switch (network) {
    case Network::kX:
      return "x";
    case Network::kBluesky:
      return "bluesky";
    case Network::kMastodon:
      return "mastodon";
  }
  return "?";
}

PostRef ParsePostUrl(std::string_view raw) {
  const std::string_view url = Trimmed(raw, "post");

  if (StartsWithNoCase(url, "at://")) {
    std::string_view rest = url.substr(5);
    const std::vector<std::string_view> seg = Segments(rest);
    if (seg.size() != 3 || seg[1] != "app.bsky.feed.post")
      Fail(raw, "an at:// post URI is at://<handle or DID>/app.bsky.feed.post/<rkey>");
    return BlueskyPost(raw, seg[0], seg[2]);
  }

  size_t scheme = 0;
  if (StartsWithNoCase(url, "https://"))
    scheme = 8;
  else if (StartsWithNoCase(url, "http://"))
    scheme = 7;
  else
    Fail(raw, std::string("expected an https:// or at:// URL (") + kForms + ")");
  std::vector<std::string_view> seg;
  const std::string host = HostAndPath(raw, url.substr(scheme), &seg, "post");

  if (IsXHost(host)) {
    if (seg.size() >= 4 && seg[0] == "i" && seg[1] == "web" && seg[2] == "status" && XTail(seg, 4))
      return XPost(raw, "", seg[3]);
    if (seg.size() >= 3 && seg[0] == "i" && seg[1] == "status" && XTail(seg, 3)) return XPost(raw, "", seg[2]);
    if (seg.size() >= 3 && IsXUser(seg[0]) && (seg[1] == "status" || seg[1] == "statuses") && XTail(seg, 3))
      return XPost(raw, seg[0], seg[2]);
    Fail(raw, "an X post URL is https://x.com/<user>/status/<id>");
  }
  if (host == "bsky.app" || host == "www.bsky.app") {
    if (seg.size() == 4 && seg[0] == "profile" && seg[2] == "post") return BlueskyPost(raw, seg[1], seg[3]);
    Fail(raw, "a Bluesky post URL is https://bsky.app/profile/<handle or DID>/post/<rkey>");
  }
  if (seg.size() == 2 && seg[0].size() > 1 && seg[0][0] == '@')
    return MastodonPost(raw, host, seg[0].substr(1), seg[1]);
  if (seg.size() == 4 && seg[0] == "users" && seg[2] == "statuses") return MastodonPost(raw, host, seg[1], seg[3]);
  Fail(raw, std::string("no known post URL form (") + kForms + ")");
}

namespace {

constexpr const char* kProfileForms =
    "X: https://x.com/<user>; Bluesky: https://bsky.app/profile/<handle or DID>; Mastodon: "
    "https://<server>/@<user> or @<user>@<server>";

// X's paths that are no account: its own pages (a user name cannot take them).
bool IsXReserved(std::string_view first) {
  static constexpr std::array<std::string_view, 21> kPaths = {
      "home",    "explore", "search", "notifications", "messages", "settings", "compose",
      "login",   "logout",  "signup", "tos",           "privacy",  "hashtag",  "intent",
      "share",   "jobs",    "account", "i",            "download", "lists",    "communities"};
  return std::find(kPaths.begin(), kPaths.end(), LowerCopy(first)) != kPaths.end();
}

// The pages of a profile people copy the URL of, per network: the profile is the account's all
// the same.
bool ProfileTail(const std::vector<std::string_view>& seg, size_t from, Network network) {
  static constexpr std::array<std::string_view, 9> kX = {"with_replies", "media",     "likes",
                                                         "highlights",   "articles",  "followers",
                                                         "following",    "verified_followers", "superfollows"};
  static constexpr std::array<std::string_view, 3> kBluesky = {"follows", "followers", "known-followers"};
  static constexpr std::array<std::string_view, 4> kMastodon = {"with_replies", "media", "followers", "following"};
  if (seg.size() == from) return true;
  if (seg.size() != from + 1) return false;
  const auto in = [&](const auto& pages) { return std::find(pages.begin(), pages.end(), seg[from]) != pages.end(); };
  switch (network) {
    case Network::kX:
      return in(kX);
    case Network::kBluesky:
      return in(kBluesky);
    case Network::kMastodon:
      return in(kMastodon);
  }
  return false;
}

// Hosts whose /@<name> pages are not Mastodon accounts (other networks people paste such URLs of).
bool IsNotMastodon(std::string_view host) {
  static constexpr std::array<std::string_view, 10> kHosts = {
      "bsky.app",    "www.bsky.app",  "youtube.com", "www.youtube.com", "m.youtube.com",
      "threads.net", "www.threads.net", "medium.com", "tiktok.com",     "www.tiktok.com"};
  return IsXHost(host) || std::find(kHosts.begin(), kHosts.end(), host) != kHosts.end();
}

ProfileRef XProfile(std::string_view raw, const std::vector<std::string_view>& seg) {
  ProfileRef ref;
  ref.network = Network::kX;
  if (seg.size() >= 3 && seg[0] == "i" && seg[1] == "user" && ProfileTail(seg, 3, Network::kX)) {
    const auto id = PositiveId(seg[2]);
    if (!id) Fail(raw, "an X user id is a positive number of at most 19 digits, got " + Quote(seg[2]), "profile");
    ref.account_id = std::to_string(*id);
    ref.canonical = "https://x.com/i/user/" + ref.account_id;
    return ref;
  }
  // X's user names: 1 to 15 letters, digits and underscores.
  if (seg.empty() || seg[0].empty() || IsXReserved(seg[0]) || seg[0].size() > 15 || !IsXUser(seg[0]) ||
      !ProfileTail(seg, 1, Network::kX))
    Fail(raw, "an X profile URL is https://x.com/<user> (a user name of 1 to 15 letters, digits and _) or "
              "https://x.com/i/user/<id>", "profile");
  ref.handle = LowerCopy(seg[0]);
  ref.canonical = "https://x.com/" + ref.handle;
  return ref;
}

ProfileRef BlueskyProfile(std::string_view raw, std::string_view actor) {
  std::string why;
  std::string account = Actor(actor, &why);
  if (account.empty()) Fail(raw, why + ", got " + Quote(actor), "profile");
  ProfileRef ref;
  ref.network = Network::kBluesky;
  if (account.rfind("did:", 0) == 0)
    ref.account_id = account;
  else
    ref.handle = account;
  ref.canonical = "https://bsky.app/profile/" + account;
  return ref;
}

// A Mastodon account on `host` named `user`, or user@domain (a remote account: it lives there).
// User names are case-insensitive on Mastodon: kept in lower case, as X's and Bluesky's handles.
ProfileRef MastodonProfile(std::string_view raw, std::string host, std::string_view user) {
  const size_t at = user.find('@');
  const std::string_view name = user.substr(0, at);
  if (!IsMastodonUser(name) || name == "." || name == ".." ||
      (at != std::string_view::npos && !IsDomain(user.substr(at + 1))))
    Fail(raw, "a Mastodon user is letters, digits and _ . - (and @<server> for a remote one), got " + Quote(user),
         "profile");
  if (at != std::string_view::npos) host = LowerCopy(user.substr(at + 1));
  if (IsNotMastodon(host)) Fail(raw, Quote(host) + " is no Mastodon server (" + kProfileForms + ")", "profile");
  ProfileRef ref;
  ref.network = Network::kMastodon;
  ref.host = std::move(host);
  ref.handle = LowerCopy(name);
  ref.canonical = "https://" + ref.host + "/@" + ref.handle;
  return ref;
}

}  // namespace

ProfileRef ParseProfileUrl(std::string_view raw) {
  std::string_view url = Trimmed(raw, "profile");
  // An address: @user@server or user@server (no scheme, no slash).
  if (url.find('/') == std::string_view::npos && url.find('@', 1) != std::string_view::npos) {
    std::string_view acct = url.front() == '@' ? url.substr(1) : url;
    const size_t at = acct.find('@');
    if (at == std::string_view::npos || at == 0 || acct.find('@', at + 1) != std::string_view::npos)
      Fail(raw, "a Mastodon address is @<user>@<server>", "profile");
    const std::string server = LowerCopy(acct.substr(at + 1));
    if (!IsDomain(server)) Fail(raw, "the server is not a domain name, got " + Quote(acct.substr(at + 1)), "profile");
    return MastodonProfile(raw, server, acct.substr(0, at));
  }
  if (StartsWithNoCase(url, "at://")) {
    const std::vector<std::string_view> seg = Segments(url.substr(5));
    if (seg.size() != 1) Fail(raw, "an at:// account URI is at://<DID or handle>, with no path", "profile");
    return BlueskyProfile(raw, seg[0]);
  }
  size_t scheme = 0;
  if (StartsWithNoCase(url, "https://"))
    scheme = 8;
  else if (StartsWithNoCase(url, "http://"))
    scheme = 7;
  else if (const size_t sep = url.find("://"); sep != std::string_view::npos && sep < url.find_first_of("/?#"))
    Fail(raw, std::string("expected an https:// URL (") + kProfileForms + ")", "profile");
  std::vector<std::string_view> seg;
  const std::string host = HostAndPath(raw, url.substr(scheme), &seg, "profile");
  if (IsXHost(host)) return XProfile(raw, seg);
  if (host == "bsky.app" || host == "www.bsky.app") {
    if (seg.size() >= 2 && seg[0] == "profile" && ProfileTail(seg, 2, Network::kBluesky))
      return BlueskyProfile(raw, seg[1]);
    Fail(raw, "a Bluesky profile URL is https://bsky.app/profile/<handle or DID>", "profile");
  }
  if (seg.size() >= 1 && seg[0].size() > 1 && seg[0][0] == '@' && ProfileTail(seg, 1, Network::kMastodon))
    return MastodonProfile(raw, host, seg[0].substr(1));
  if (seg.size() == 2 && seg[0] == "users") return MastodonProfile(raw, host, seg[1]);
  Fail(raw, std::string("no known profile URL form (") + kProfileForms + ")", "profile");
}

}  // namespace tweetkeeper
