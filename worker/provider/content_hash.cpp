#include "provider/content_hash.hpp"
#include "json/bounded.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
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

void Object(std::string& out, const Value& v) {
  // jsonb keeps one value per key (the last) and orders keys by length, then by their bytes. So:
  // a stable sort (equal keys stay in their order), then the last of each run of equal keys.
  // O(n log n) in the keys of a hostile answer: a scan of the keys seen, for each key, was
  // quadratic (a million keys fit in 16 MiB: 10^12 comparisons).
  std::vector<const Value::Member*> members;
  members.reserve(v.MemberCount());
  for (const auto& m : v.GetObject()) {
    if (!IsCountKey(Name(m))) members.push_back(&m);
  }
  std::stable_sort(members.begin(), members.end(), [](const Value::Member* a, const Value::Member* b) {
    const auto la = a->name.GetStringLength(), lb = b->name.GetStringLength();
    if (la != lb) return la < lb;
    return std::memcmp(a->name.GetString(), b->name.GetString(), la) < 0;
  });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i + 1 < members.size() && Name(*members[i]) == Name(*members[i + 1])) continue;
    members[kept++] = members[i];
  }
  members.resize(kept);
  out += '{';
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i) out += ", ";
    String(out, Name(*members[i]));
    out += ": ";
    Write(out, members[i]->value);
  }
  out += '}';
}

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
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
    v.Accept(w);
    out.append(buffer.GetString(), buffer.GetSize());
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
