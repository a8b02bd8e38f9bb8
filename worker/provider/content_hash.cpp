#include "provider/content_hash.hpp"
#include "json/bounded.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "count_keys.hpp"
#include "provider/json_fields.hpp"

namespace tweetkeeper::worker {
namespace {

using rapidjson::Value;

// PostgreSQL's escape_json. (Runs of plain bytes are appended whole: most of a post is.)
void String(std::string& out, std::string_view s) {
  out += '"';
  std::size_t plain = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= ' ' && c != '"' && c != '\\') continue;
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
        out += hex;
      }
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out += '"';
}

void Write(std::string& out, const Value& v);

std::string_view Name(const Value::Member& m) { return {m.name.GetString(), m.name.GetStringLength()}; }

// A member to order, and what orders it without a visit to the member: its key's length and
// first 8 bytes (big-endian, zero-padded: compared as one integer, they order as memcmp orders
// those bytes).
struct Key {
  std::uint32_t length;
  std::uint64_t head;
  const Value::Member* member;
};

Key KeyOf(const Value::Member& m) {
  Key k{m.name.GetStringLength(), 0, &m};
  const auto* bytes = reinterpret_cast<const unsigned char*>(m.name.GetString());
  for (std::uint32_t i = 0; i < 8; ++i) k.head = k.head << 8 | (i < k.length ? bytes[i] : 0);
  return k;
}

// memcmp of the bytes past the first 8 of two keys of the same length.
int Tails(const Key& a, const Key& b) {
  return a.length > 8 ? std::memcmp(a.member->name.GetString() + 8, b.member->name.GetString() + 8, a.length - 8) : 0;
}

// jsonb's key order: length, then bytes.
bool Before(const Key& a, const Key& b) {
  if (a.length != b.length) return a.length < b.length;
  if (a.head != b.head) return a.head < b.head;
  return Tails(a, b) < 0;
}

bool SameKey(const Key& a, const Key& b) { return a.length == b.length && a.head == b.head && Tails(a, b) == 0; }

void Object(std::string& out, const Value& v) {
  // jsonb keeps one value per key (the last) and orders keys by length, then by their bytes. So:
  // a stable sort (equal keys stay in their order), then the last of each run of equal keys.
  // O(n log n) in the keys of a hostile answer: a scan of the keys seen, for each key, was
  // quadratic (a million keys fit in 16 MiB: 10^12 comparisons). A merge sort: its cost does
  // not depend on the order a server picks (std::sort took 60 million comparisons, 5 times as
  // many, for a million keys all in order but a duplicate of the first at the end).
  std::vector<Key> keys;
  keys.reserve(v.MemberCount());
  for (const auto& m : v.GetObject()) {
    if (!IsCountKey(Name(m))) keys.push_back(KeyOf(m));
  }
  std::stable_sort(keys.begin(), keys.end(), Before);
  out += '{';
  bool first = true;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i + 1 < keys.size() && SameKey(keys[i], keys[i + 1])) continue;
    if (!first) out += ", ";
    first = false;
    String(out, Name(*keys[i].member));
    out += ": ";
    Write(out, keys[i].member->value);
  }
  out += '}';
}

// RapidJSON's Writer puts a number's text straight into the content (a StringBuffer per number
// was a heap allocation per number).
struct Appender {
  using Ch = char;
  std::string& out;
  void Put(char c) { out += c; }
  void Flush() {}
};

void Write(std::string& out, const Value& v) {
  if (v.IsObject()) return Object(out, v);
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
    Appender to{out};
    rapidjson::Writer<Appender> w(to);
    v.Accept(w);
  }
}

std::optional<std::string> Content(const Value& payload, const Value* author) {
  if (!payload.IsObject() || (author && !author->IsObject())) return std::nullopt;
  std::string out;
  out.reserve(4096);
  out += '[';
  Write(out, payload);
  out += ", ";
  if (author) Write(out, *author);
  else out += "null";
  out += ']';
  return out;
}

std::optional<std::string> Md5Hex(const std::optional<std::string>& content) {
  if (!content) return std::nullopt;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(content->data(), content->size(), digest, &length, EVP_md5(), nullptr) != 1) return std::nullopt;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace

std::optional<std::string> PayloadContent(std::string_view payload, std::string_view author) {
  rapidjson::Document p, a;
  if (!json::Parse(p, payload).empty()) return std::nullopt;
  if (!author.empty()) {
    if (!json::Parse(a, author).empty()) return std::nullopt;
  }
  return Content(p, author.empty() ? nullptr : &a);
}

std::optional<std::string> ContentHash(std::string_view payload, std::string_view author) {
  return Md5Hex(PayloadContent(payload, author));
}

std::optional<std::string> ContentHash(const Value& payload, const Value* author) {
  return Md5Hex(Content(payload, author));
}

void AttachPayload(Observation& obs, const Value& payload, const Value* author, const PostKeys& keys) {
  if (!keys.payloads) return;
  const std::string* kept = nullptr;  // the hash of its last kept payload, if it has one
  if (keys.kept) {
    if (const auto it = keys.kept->find(obs.id); it != keys.kept->end()) kept = &it->second;
  }
  if (kept && keys.first_only) return;
  std::optional<std::string> hash = ContentHash(payload, author);
  if (kept && hash && *hash == *kept) return;
  // A string jsonb refuses ("\u0000", a lone surrogate escape) would fail the whole completion,
  // and the batch with it, every time: such a post keeps its counts, not this payload.
  if (!PgStorable(payload) || (author && !PgStorable(*author))) return;
  obs.payload = JsonText(payload);
  if (author) obs.author = JsonText(*author);
  if (hash) obs.content_hash = std::move(*hash);
}

}  // namespace tweetkeeper::worker
