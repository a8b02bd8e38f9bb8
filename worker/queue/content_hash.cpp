#include "queue/content_hash.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace tweetkeeper::worker {
namespace {

using rapidjson::Value;
using Keys = std::vector<std::string_view>;
const Keys kNone;

// Keys payload_content() removes: from the payload's top level, and from the author object.
const Keys kPayloadCounts = {
    "public_metrics", "non_public_metrics", "organic_metrics", "promoted_metrics", "edit_controls",
    "likeCount",      "repostCount",        "replyCount",      "quoteCount",       "bookmarkCount",
    "viewer",         "favourites_count",   "reblogs_count",   "replies_count",    "quotes_count",
    "favourited",     "reblogged",          "muted",           "bookmarked",       "pinned"};
const Keys kAuthorCounts = {"public_metrics", "followers_count",
                                                                  "following_count", "statuses_count"};
// And one level down: payload.author.viewer (Bluesky), payload.account's counts (Mastodon).
const Keys kBlueskyAuthor = {"viewer"};
const Keys kMastodonAccount = {"followers_count", "following_count",
                                                                     "statuses_count", "last_status_at"};

bool In(const Keys& set, std::string_view key) {
  return std::find(set.begin(), set.end(), key) != set.end();
}

// PostgreSQL's escape_json.
void String(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (static_cast<unsigned char>(c) < ' ') {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(c));
          out += hex;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void Write(std::string& out, const Value& v, const Keys& skip = kNone, bool top = false);

void Object(std::string& out, const Value& v, const Keys& skip, bool top) {
  // jsonb keeps one value per key (the last) and orders keys by length, then by their bytes.
  std::vector<const Value::Member*> members;
  for (const auto& m : v.GetObject()) {
    const std::string_view key(m.name.GetString(), m.name.GetStringLength());
    if (In(skip, key)) continue;
    auto same = std::find_if(members.begin(), members.end(), [&](const Value::Member* o) {
      return std::string_view(o->name.GetString(), o->name.GetStringLength()) == key;
    });
    if (same != members.end()) *same = &m;
    else members.push_back(&m);
  }
  std::sort(members.begin(), members.end(), [](const Value::Member* a, const Value::Member* b) {
    const auto la = a->name.GetStringLength(), lb = b->name.GetStringLength();
    if (la != lb) return la < lb;
    return std::memcmp(a->name.GetString(), b->name.GetString(), la) < 0;
  });
  out += '{';
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i) out += ", ";
    const std::string_view key(members[i]->name.GetString(), members[i]->name.GetStringLength());
    String(out, key);
    out += ": ";
    if (top && key == "author") Write(out, members[i]->value, kBlueskyAuthor);
    else if (top && key == "account") Write(out, members[i]->value, kMastodonAccount);
    else Write(out, members[i]->value);
  }
  out += '}';
}

void Write(std::string& out, const Value& v, const Keys& skip, bool top) {
  if (v.IsObject()) return Object(out, v, skip, top);
  if (v.IsArray()) {
    out += '[';
    bool first = true;
    for (const Value& e : v.GetArray()) {
      if (!first) out += ", ";
      first = false;
      Write(out, e);
    }
    out += ']';
  } else if (v.IsString()) {
    String(out, std::string_view(v.GetString(), v.GetStringLength()));
  } else if (v.IsNull()) {
    out += "null";
  } else if (v.IsBool()) {
    out += v.GetBool() ? "true" : "false";
  } else {  // a number as rapidjson writes it (the text complete_batch gets, and numeric reads)
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    v.Accept(w);
    out.append(buffer.GetString(), buffer.GetSize());
  }
}

}  // namespace

std::optional<std::string> PayloadContent(std::string_view payload, std::string_view author) {
  rapidjson::Document p, a;
  p.Parse<rapidjson::kParseIterativeFlag>(payload.data(), payload.size());
  if (p.HasParseError() || !p.IsObject()) return std::nullopt;
  std::string out = "[";
  Write(out, p, kPayloadCounts, true);
  out += ", ";
  if (author.empty()) {
    out += "null";
  } else {
    a.Parse<rapidjson::kParseIterativeFlag>(author.data(), author.size());
    if (a.HasParseError() || !a.IsObject()) return std::nullopt;
    Write(out, a, kAuthorCounts);
  }
  out += ']';
  return out;
}

std::optional<std::string> ContentHash(std::string_view payload, std::string_view author) {
  const std::optional<std::string> content = PayloadContent(payload, author);
  if (!content) return std::nullopt;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(content->data(), content->size(), digest, &length, EVP_md5(), nullptr) != 1) return std::nullopt;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace tweetkeeper::worker
