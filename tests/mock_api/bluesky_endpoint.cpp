#include "mock_api/bluesky_endpoint.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <string_view>
#include <set>
#include <vector>

#include "mock_api/json_fields.hpp"
#include "mock_api/mix.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr const char* kSortable = "234567abcdefghijklmnopqrstuvwxyz";
constexpr size_t kMaxUris = 25;  // getPosts.json: "maxLength": 25
constexpr const char* kCollection = "/app.bsky.feed.post/";

int SortableValue(char c) {
  const char* p = c ? std::char_traits<char>::find(kSortable, 32, c) : nullptr;
  return p ? static_cast<int>(p - kSortable) : -1;
}

// A record in DAG-CBOR, the bytes a repository stores and its CID names (atproto's data model):
// maps with their keys sorted by length, then bytewise; integers and lengths in their shortest
// form; no floats. Records here hold strings, integers, booleans, maps and arrays only.
void CborHead(std::string* out, unsigned major, uint64_t n) {
  const auto put = [&](int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  };
  const char m = static_cast<char>(major << 5);
  if (n < 24) {
    out->push_back(static_cast<char>(m | n));
  } else if (n < 0x100) {
    out->push_back(static_cast<char>(m | 24));
    put(1);
  } else if (n < 0x10000) {
    out->push_back(static_cast<char>(m | 25));
    put(2);
  } else if (n < 0x100000000ULL) {
    out->push_back(static_cast<char>(m | 26));
    put(4);
  } else {
    out->push_back(static_cast<char>(m | 27));
    put(8);
  }
}

void DagCbor(const rapidjson::Value& v, std::string* out) {
  if (v.IsObject()) {
    std::vector<const rapidjson::Value::Member*> members;
    for (const auto& m : v.GetObject()) members.push_back(&m);
    std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
      const std::string_view x(a->name.GetString(), a->name.GetStringLength());
      const std::string_view y(b->name.GetString(), b->name.GetStringLength());
      return x.size() != y.size() ? x.size() < y.size() : x < y;
    });
    CborHead(out, 5, members.size());
    for (const auto* m : members) {
      DagCbor(m->name, out);
      DagCbor(m->value, out);
    }
  } else if (v.IsArray()) {
    CborHead(out, 4, v.Size());
    for (const auto& e : v.GetArray()) DagCbor(e, out);
  } else if (v.IsString()) {
    CborHead(out, 3, v.GetStringLength());
    out->append(v.GetString(), v.GetStringLength());
  } else if (v.IsUint64()) {
    CborHead(out, 0, v.GetUint64());
  } else if (v.IsInt64()) {
    CborHead(out, 1, static_cast<uint64_t>(-1 - v.GetInt64()));
  } else if (v.IsBool()) {
    out->push_back(v.GetBool() ? '\xf5' : '\xf4');
  } else {
    out->push_back('\xf6');  // null (a record of the mock has no float)
  }
}

// A CID v1 of `bytes` with this codec (0x71 dag-cbor: a record; 0x55 raw: a blob, an image), a
// sha2-256 multihash, in multibase base32 (lower case, no padding, prefix 'b'): 59 characters.
std::string Cid(unsigned char codec, const std::string& bytes_in) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes_in.data(), bytes_in.size(), digest, &size, EVP_sha256(), nullptr);
  std::string bytes = {'\x01', static_cast<char>(codec), '\x12', '\x20'};
  bytes.append(reinterpret_cast<const char*>(digest), size);
  static constexpr char kBase32[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string out = "b";
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 5) {
      out.push_back(kBase32[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0) out.push_back(kBase32[(buffer << (5 - bits)) & 31]);
  return out;
}

// The record's CID as the AppView gives it: of its DAG-CBOR bytes.
std::string RecordCid(const rapidjson::Value& record) {
  std::string cbor;
  DagCbor(record, &cbor);
  return Cid(0x71, cbor);
}

// FNV-1a: a stable hash of a URI or handle (std::hash may differ between builds).
uint64_t Fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return Mix(h);
}

bool IsDidChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == ':' || c == '%' || c == '-';
}

bool ValidDid(const std::string& s) {
  if (s.rfind("did:", 0) != 0 || s.size() > 2048) return false;
  const size_t colon = s.find(':', 4);
  if (colon == std::string::npos || colon == 4 || colon + 1 >= s.size()) return false;
  for (size_t i = 4; i < colon; ++i)
    if (s[i] < 'a' || s[i] > 'z') return false;
  return std::all_of(s.begin() + static_cast<long>(colon) + 1, s.end(), IsDidChar) && s.back() != ':';
}

// A handle: dot-separated labels of letters, digits and hyphens, at least two.
bool ValidHandle(const std::string& s) {
  if (s.empty() || s.size() > 253 || s.find('.') == std::string::npos) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    if (dot == std::string::npos) dot = s.size();
    const size_t len = dot - start;
    if (len == 0 || len > 63 || s[start] == '-' || s[dot - 1] == '-') return false;
    for (size_t i = start; i < dot; ++i) {
      const char c = s[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    start = dot + 1;
    if (dot == s.size()) break;
  }
  return true;
}

struct PostUri {
  std::string authority;  // DID or handle
  std::string rkey;
};

bool IsRkeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_' || c == ':' || c == '~';
}

// What the lexicon's at-uri format takes (what getPosts' validator lets through):
// at://<DID or handle>[/<collection, an NSID>[/<record key>]]. Anything else is refused whole.
bool IsAtUri(const std::string& uri) {
  if (uri.rfind("at://", 0) != 0 || uri.size() > 8192) return false;
  std::vector<std::string> parts;
  for (size_t at = 5;;) {
    const size_t slash = uri.find('/', at);
    parts.push_back(uri.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  if (parts.size() > 3 || !(ValidDid(parts[0]) || ValidHandle(parts[0]))) return false;
  if (parts.size() >= 2) {  // an NSID: three or more segments of letters, digits and inner hyphens
    size_t segments = 0;
    for (size_t at = 0; at <= parts[1].size(); ++segments) {
      size_t dot = parts[1].find('.', at);
      if (dot == std::string::npos) dot = parts[1].size();
      const std::string seg = parts[1].substr(at, dot - at);
      if (seg.empty() || seg.size() > 63 || seg.front() == '-' || seg.back() == '-') return false;
      for (char c : seg)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
      at = dot + 1;
    }
    if (segments < 3) return false;
  }
  if (parts.size() == 3) {
    const std::string& rkey = parts[2];
    if (rkey.empty() || rkey.size() > 512 || rkey == "." || rkey == "..") return false;
    if (!std::all_of(rkey.begin(), rkey.end(), IsRkeyChar)) return false;
  }
  return true;
}

// at://<did or handle>/app.bsky.feed.post/<rkey>: a post's URI. An at-uri of anything else
// (another collection, a repository, a collection without a key) names no post: the AppView
// leaves it out of its answer.
std::optional<PostUri> ParseAtUri(const std::string& uri) {
  if (!IsAtUri(uri)) return std::nullopt;
  const size_t slash = uri.find('/', 5);
  if (slash == std::string::npos) return std::nullopt;
  PostUri p{uri.substr(5, slash - 5), ""};
  if (!(ValidDid(p.authority) || ValidHandle(p.authority))) return std::nullopt;
  if (uri.compare(slash, std::char_traits<char>::length(kCollection), kCollection) != 0) return std::nullopt;
  p.rkey = uri.substr(slash + std::char_traits<char>::length(kCollection));
  if (p.rkey.empty()) return std::nullopt;  // (IsAtUri checked its characters)
  return p;
}

EndpointReply XrpcError(int status, const char* error, const std::string& message) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("error");
  w.String(error);
  w.Key("message");
  w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  w.EndObject();
  EndpointReply reply;
  reply.status = status;
  reply.body = buf.GetString();
  return reply;
}

std::string IsoMillis(int64_t unix_ms) {
  std::string s = FormatCreatedAt(unix_ms);  // "...T19:00:55.000Z"
  const int64_t ms = ((unix_ms % 1000) + 1000) % 1000;
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03lld", static_cast<long long>(ms));
  return s.replace(s.size() - 5, 4, frac);
}

}  // namespace

std::optional<int64_t> TidMillis(const std::string& rkey) {
  if (rkey.size() != 13) return std::nullopt;
  uint64_t value = 0;
  for (char c : rkey) {
    const int v = SortableValue(c);
    if (v < 0) return std::nullopt;
    value = value * 32 + static_cast<uint64_t>(v);
  }
  if (SortableValue(rkey[0]) >= 16) return std::nullopt;  // the top bit is 0
  return static_cast<int64_t>((value >> 10) / 1000);
}

uint64_t TidClock(const std::string& rkey) {
  if (rkey.size() != 13) return 0;
  return static_cast<uint64_t>(SortableValue(rkey[11]) * 32 + SortableValue(rkey[12])) & 0x3FF;
}

std::string MockDid(const std::string& handle) {
  uint64_t h = Fnv(handle);
  std::string did = "did:plc:";
  for (int i = 0; i < 24; ++i) {
    if (i == 12) h = Mix(h);
    did += kSortable[(h >> ((i % 12) * 5)) & 31];
  }
  return did;
}

EndpointReply GetBlueskyPosts(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  std::vector<std::string> uris;
  const auto range = params.equal_range("uris");
  for (auto it = range.first; it != range.second; ++it) uris.push_back(it->second);
  if (uris.empty()) return XrpcError(400, "InvalidRequest", "Error: Params must have the property \"uris\"");
  if (uris.size() > kMaxUris) {
    return XrpcError(400, "InvalidRequest", "Error: uris must not have more than 25 elements");
  }
  std::vector<std::pair<std::string, PostUri>> posts;
  std::set<std::string> seen;
  for (size_t i = 0; i < uris.size(); ++i) {
    std::optional<PostUri> p = ParseAtUri(uris[i]);
    if (!IsAtUri(uris[i]) || (p && config.bluesky_refused_every != 0 && TidMillis(p->rkey) &&
                              TidClock(p->rkey) % config.bluesky_refused_every == 5)) {
      return XrpcError(400, "InvalidRequest", "Error: uris/" + std::to_string(i) + " must be a valid at-uri");
    }
    if (!p) continue;  // an at-uri of no post: left out
    if (seen.insert(uris[i]).second) posts.emplace_back(uris[i], std::move(*p));  // dedupeStrs
  }
  EndpointReply reply;
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("posts");
  w.StartArray();
  // Not the request's order: clients must match posts by uri (FACTS.md 1.2).
  for (auto it = posts.rbegin(); it != posts.rend(); ++it) {
    const std::string& uri = it->first;
    const PostUri& p = it->second;
    // An at:// URI with a handle finds nothing (the AppView looks posts up by the exact URI).
    if (!ValidDid(p.authority)) continue;
    const std::optional<int64_t> tid_ms = TidMillis(p.rkey);
    const uint64_t h = Fnv(uri);
    if (!tid_ms || *tid_ms > now_ms) continue;  // not a post's key, or not posted yet: not found
    // A post's fate follows its record key's clock id (its last 10 bits), which a test chooses.
    const uint64_t clock = TidClock(p.rkey);
    if (config.omitted_every != 0 && clock % config.omitted_every == 13) continue;
    if (config.deleted_every != 0 && clock % config.deleted_every == 7) continue;      // deleted: omitted
    if (config.protected_every != 0 && clock % config.protected_every == 11) continue;  // taken down: omitted
    // Most clients stamp createdAt at posting, as the TID; one post in 17 (clock id % 17 == 3)
    // is backdated by ten days (an import), which only its answer reveals. The AppView indexes
    // it seconds later.
    const int64_t created_ms = *tid_ms - (clock % 17 == 3 ? 10LL * 86'400'000 : 0);
    const int64_t indexed_ms = *tid_ms + static_cast<int64_t>(h % 5000);
    const PublicMetrics m = MetricsAt(h, std::max<int64_t>(0, (now_ms - created_ms) / 1000));
    rapidjson::Document record(rapidjson::kObjectType);
    auto& a = record.GetAllocator();
    record.AddMember("$type", "app.bsky.feed.post", a);
    record.AddMember("createdAt", rapidjson::Value(IsoMillis(created_ms).c_str(), a), a);
    record.AddMember("text", rapidjson::Value(("Mock post " + p.rkey).c_str(), a), a);
    // One post in five links to a page (app.bsky.embed.external, no thumbnail), as its card.
    const bool links = h % 10 < 2;
    const std::string page = "https://example.com/articles/" + p.rkey;
    if (links) {
      rapidjson::Value external(rapidjson::kObjectType);
      external.AddMember("uri", rapidjson::Value(page.c_str(), a), a);
      external.AddMember("title", "A page the post links to", a);
      external.AddMember("description", "What the page's card says of it", a);
      rapidjson::Value embed(rapidjson::kObjectType);
      embed.AddMember("$type", "app.bsky.embed.external", a);
      embed.AddMember("external", external, a);
      record.AddMember("embed", embed, a);
    }
    // The author as profileViewBasic: most have an avatar (a blob on the CDN, named by its CID).
    const uint64_t who = Fnv(p.authority);
    w.StartObject();
    w.Key("uri");
    w.String(uri.c_str());
    w.Key("cid");
    w.String(RecordCid(record).c_str());
    w.Key("author");
    w.StartObject();
    w.Key("did");
    w.String(p.authority.c_str());
    w.Key("handle");
    w.String(("user" + std::to_string(h % 100000) + ".bsky.social").c_str());
    w.Key("displayName");
    w.String(("Mock User " + std::to_string(who % 100000)).c_str());
    if (who % 5 != 0) {
      w.Key("avatar");
      w.String(("https://cdn.bsky.app/img/avatar/plain/" + p.authority + "/" + Cid(0x55, "avatar " + p.authority) +
                "@jpeg")
                   .c_str());
    }
    w.Key("labels");
    w.StartArray();
    w.EndArray();
    w.Key("createdAt");  // the account's: 2023-04-01 and up to 400 days after
    w.String(IsoMillis(1680307200000LL + static_cast<int64_t>(who % 400) * 86'400'000).c_str());
    w.EndObject();
    w.Key("record");
    record.Accept(w);
    if (links) {
      w.Key("embed");
      w.StartObject();
      w.Key("$type");
      w.String("app.bsky.embed.external#view");
      w.Key("external");
      w.StartObject();
      w.Key("uri");
      w.String(page.c_str());
      w.Key("title");
      w.String("A page the post links to");
      w.Key("description");
      w.String("What the page's card says of it");
      w.EndObject();
      w.EndObject();
    }
    WriteCounts(w, {{"bookmarkCount", m.bookmark_count},
                    {"replyCount", m.reply_count},
                    {"repostCount", m.retweet_count},
                    {"likeCount", m.like_count},
                    {"quoteCount", m.quote_count}});
    w.Key("indexedAt");
    w.String(IsoMillis(indexed_ms).c_str());
    w.Key("labels");
    w.StartArray();
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  reply.body = buf.GetString();
  return reply;
}

EndpointReply ResolveHandle(const QueryParams& params, const MockConfig&, int64_t) {
  const auto it = params.find("handle");
  if (it == params.end()) return XrpcError(400, "InvalidRequest", "Error: Params must have the property \"handle\"");
  std::string handle = it->second;
  std::transform(handle.begin(), handle.end(), handle.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!ValidHandle(handle)) return XrpcError(400, "InvalidRequest", "Error: handle must be a valid handle");
  if (handle.rfind("gone", 0) == 0) return XrpcError(400, "InvalidRequest", "Unable to resolve handle");
  EndpointReply reply;
  reply.body = "{\"did\":\"" + MockDid(handle) + "\"}";
  return reply;
}

}  // namespace tweetkeeper::mock
