#include "mock_api/bluesky_endpoint.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <set>
#include <unordered_map>
#include <vector>

#include "mock_api/engagement.hpp"
#include "mock_api/engagement_events.hpp"
#include "mock_api/json_fields.hpp"
#include "mock_api/mix.hpp"
#include "mock_api/post_text.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr const char* kSortable = "234567abcdefghijklmnopqrstuvwxyz";
constexpr size_t kMaxUris = 25;  // getPosts.json and getProfiles.json: "maxLength": 25
constexpr const char* kCollection = "/app.bsky.feed.post/";

int SortableValue(char c) {
  const char* p = c ? std::char_traits<char>::find(kSortable, 32, c) : nullptr;
  return p ? static_cast<int>(p - kSortable) : -1;
}

// A CID v1 of `bytes` with this codec (0x71 dag-cbor: a record; 0x55 raw: a blob, an image), a
// sha2-256 multihash: its binary form (36 bytes) and its string, in multibase base32 (lower case,
// no padding, prefix 'b'): 59 characters.
std::string CidBytes(unsigned char codec, const std::string& bytes_in) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes_in.data(), bytes_in.size(), digest, &size, EVP_sha256(), nullptr);
  std::string bytes = {'\x01', static_cast<char>(codec), '\x12', '\x20'};
  bytes.append(reinterpret_cast<const char*>(digest), size);
  return bytes;
}

constexpr char kBase32[] = "abcdefghijklmnopqrstuvwxyz234567";

std::string CidString(const std::string& bytes) {
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

// The binary form of a CID string this file wrote ("" for anything else).
std::string CidStringBytes(std::string_view s) {
  if (s.empty() || s[0] != 'b') return "";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : s.substr(1)) {
    const char* at = std::char_traits<char>::find(kBase32, 32, c);
    if (c == '\0' || at == nullptr) return "";
    buffer = (buffer << 5) | static_cast<uint32_t>(at - kBase32);
    bits += 5;
    if (bits >= 8) {
      out.push_back(static_cast<char>((buffer >> (bits - 8)) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

std::string Cid(unsigned char codec, const std::string& bytes) { return CidString(CidBytes(codec, bytes)); }

// A record in DAG-CBOR, the bytes a repository stores and its CID names (atproto's data model):
// maps with their keys sorted by length, then bytewise; integers and lengths in their shortest
// form; no floats; a link ({"$link": CID}, as JSON writes it) as tag 42. Records here hold
// strings, integers, booleans, maps, arrays and links only.
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
  if (v.IsObject() && v.MemberCount() == 1 && v.HasMember("$link") && v["$link"].IsString()) {
    // A link (a blob's ref): the CID as tag 42 of a byte string, its binary form after a 0x00.
    const std::string cid = CidStringBytes({v["$link"].GetString(), v["$link"].GetStringLength()});
    CborHead(out, 6, 42);
    CborHead(out, 2, cid.size() + 1);
    out->push_back('\0');
    out->append(cid);
  } else if (v.IsObject()) {
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

// The values of the array parameter `name` (uris, actors: repeated, ?uris=a&uris=b), in the order
// given; `refused` is set to the AppView's 400 when there is none or more than its 25.
std::vector<std::string> ListParam(const QueryParams& params, const std::string& name,
                                   std::optional<EndpointReply>* refused) {
  std::vector<std::string> values;
  const auto range = params.equal_range(name);
  for (auto it = range.first; it != range.second; ++it) values.push_back(it->second);
  if (values.empty()) {
    *refused = XrpcError(400, "InvalidRequest", "Error: Params must have the property \"" + name + "\"");
  } else if (values.size() > kMaxUris) {
    *refused = XrpcError(400, "InvalidRequest", "Error: " + name + " must not have more than 25 elements");
  }
  return values;
}

std::string IsoMillis(int64_t unix_ms) {
  std::string s = FormatCreatedAt(unix_ms);  // "...T19:00:55.000Z"
  const int64_t ms = ((unix_ms % 1000) + 1000) % 1000;
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03lld", static_cast<long long>(ms));
  return s.replace(s.size() - 5, 4, frac);
}

// A TID (a record key): microseconds since the epoch << 10 | a clock id, in 13 base32-sortable
// characters.
std::string Tid(int64_t unix_ms, uint64_t clock) {
  const uint64_t v = (static_cast<uint64_t>(unix_ms) * 1000 << 10) | (clock & 0x3FF);
  std::string out(13, '2');
  for (int i = 12; i >= 0; --i) out[static_cast<size_t>(12 - i)] = kSortable[(v >> (5 * i)) & 31];
  return out;
}

using Alloc = rapidjson::Document::AllocatorType;

rapidjson::Value Str(const std::string& s, Alloc& a) {
  return rapidjson::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a);
}

// What a post embeds, from a hash of its URI: most nothing, one in five a link card, one in ten
// images, one in ten a quote, one in ten a quote with images. A quarter of posts are replies.
enum class Embed { kNone, kExternal, kImages, kQuote, kQuoteWithImages };

Embed EmbedOf(uint64_t h) {
  switch (h % 10) {
    case 0:
    case 1: return Embed::kExternal;
    case 2: return Embed::kImages;
    case 3: return Embed::kQuote;
    case 4: return Embed::kQuoteWithImages;
    default: return Embed::kNone;
  }
}

bool IsReply(uint64_t h) { return (h >> 8) % 4 == 0; }

// A post the mock knows (whether or not it shows it): at://<did>/app.bsky.feed.post/<TID>.
struct MockPost {
  std::string uri;
  std::string did;
  std::string rkey;
  uint64_t h = 0;       // of the URI: what the post holds and its counts
  uint64_t clock = 0;   // the TID's clock id: its fate, which a test chooses
  int64_t tid_ms = 0;   // when it was posted
  int64_t created_ms = 0;
  int64_t indexed_ms = 0;
};

MockPost Describe(const std::string& uri, const std::string& did, const std::string& rkey, int64_t tid_ms) {
  MockPost m{uri, did, rkey, Fnv(uri), TidClock(rkey), tid_ms, 0, 0};
  // Most clients stamp createdAt at posting, as the TID; one post in 17 (clock id % 17 == 3)
  // is backdated by ten days (an import), which only its answer reveals. The AppView indexes
  // it seconds later.
  m.created_ms = tid_ms - (m.clock % 17 == 3 ? 10LL * 86'400'000 : 0);
  m.indexed_ms = tid_ms + static_cast<int64_t>(m.h % 5000);
  return m;
}

// The post a reply answers or a quote quotes: an earlier post (a minute to two days) of one of
// 5,000 accounts, itself neither a reply nor a quote, so that what refers to it stays shallow.
MockPost Referenced(const MockPost& from, uint64_t salt) {
  MockPost r;
  for (uint64_t k = 0; k < 64; ++k) {
    const uint64_t x = Mix(from.h ^ Mix(salt + k));
    const std::string did = MockDid("user" + std::to_string(x % 5000) + ".bsky.social");
    const int64_t ms = from.tid_ms - 60'000 - static_cast<int64_t>((x >> 13) % (2 * 86'400'000LL));
    const std::string rkey = Tid(ms, (x >> 50) & 0x3FF);
    r = Describe("at://" + did + kCollection + rkey, did, rkey, ms);
    if (!IsReply(r.h) && (EmbedOf(r.h) == Embed::kNone || EmbedOf(r.h) == Embed::kExternal)) break;
  }
  return r;
}

// Whether the AppView shows the post now: posted, not deleted, taken down or left out.
bool Shown(const MockPost& m, const MockConfig& config, int64_t now_ms) {
  if (m.tid_ms > now_ms) return false;
  if (config.omitted_every != 0 && m.clock % config.omitted_every == 13) return false;
  if (config.deleted_every != 0 && m.clock % config.deleted_every == 7) return false;     // deleted
  if (config.protected_every != 0 && m.clock % config.protected_every == 11) return false;  // taken down
  return true;
}

// Whether POST /mock/gone deleted the post, or made its author's account inactive, by now.
bool MadeGone(const MockPost& m, const MockConfig& config, int64_t now_ms) {
  return config.gone->BlueskyHidden(m.uri, m.did, now_ms * 1000 + 999);
}

std::string PageOf(const MockPost& m) { return "https://example.com/articles/" + m.rkey; }

// A blob (an image): its CID names its bytes, which the mock does not have.
rapidjson::Value Blob(const MockPost& m, int i, Alloc& a) {
  rapidjson::Value link(rapidjson::kObjectType);
  link.AddMember("$link", Str(Cid(0x55, "image " + m.uri + " " + std::to_string(i)), a), a);
  rapidjson::Value blob(rapidjson::kObjectType);
  blob.AddMember("$type", "blob", a);
  blob.AddMember("ref", link, a);
  blob.AddMember("mimeType", "image/jpeg", a);
  blob.AddMember("size", static_cast<uint64_t>(40'000 + Mix(m.h + static_cast<uint64_t>(i)) % 900'000), a);
  return blob;
}

constexpr const char* kAlts[] = {"", "A harbour at dusk, boats tied up along the quay",
                                 "Chart: monthly readings, rising since spring", "", "A cat asleep on a stack of books",
                                 "Screenshot of the release notes"};

struct Picture {
  std::string alt;
  int width;
  int height;
};

std::vector<Picture> PicturesOf(const MockPost& m) {
  std::vector<Picture> out;
  const int n = 1 + static_cast<int>((m.h >> 12) % 4);
  for (int i = 0; i < n; ++i) {
    const uint64_t x = Mix(m.h + static_cast<uint64_t>(i) * 7919);
    const bool wide = x % 3 != 0;
    out.push_back({kAlts[x % std::size(kAlts)], wide ? 2000 : 1536, wide ? 1125 : 2048});
  }
  return out;
}

rapidjson::Value AspectRatio(const Picture& p, Alloc& a) {
  rapidjson::Value r(rapidjson::kObjectType);
  r.AddMember("height", p.height, a);
  r.AddMember("width", p.width, a);
  return r;
}

// A post's images embed of `type` (a static string): one entry per picture, which `image` makes
// of the picture and its index.
rapidjson::Value ImagesEmbed(const MockPost& m, Alloc& a, const char* type,
                             const std::function<rapidjson::Value(const Picture& p, int i)>& image) {
  rapidjson::Value images(rapidjson::kArrayType);
  int i = 0;
  for (const Picture& p : PicturesOf(m)) images.PushBack(image(p, i++), a);
  rapidjson::Value embed(rapidjson::kObjectType);
  embed.AddMember("$type", rapidjson::StringRef(type), a);
  embed.AddMember("images", images, a);
  return embed;
}

rapidjson::Value ImagesRecord(const MockPost& m, Alloc& a) {
  return ImagesEmbed(m, a, "app.bsky.embed.images", [&](const Picture& p, int i) {
    rapidjson::Value image(rapidjson::kObjectType);
    image.AddMember("alt", Str(p.alt, a), a);
    image.AddMember("aspectRatio", AspectRatio(p, a), a);
    image.AddMember("image", Blob(m, i, a), a);
    return image;
  });
}

// As the AppView's image URI builder names them: https://cdn.bsky.app/img/<preset>/plain/<did>/<cid>@jpeg
rapidjson::Value ImagesView(const MockPost& m, Alloc& a) {
  return ImagesEmbed(m, a, "app.bsky.embed.images#view", [&](const Picture& p, int i) {
    const std::string cid = Cid(0x55, "image " + m.uri + " " + std::to_string(i));
    rapidjson::Value view(rapidjson::kObjectType);
    view.AddMember("thumb", Str("https://cdn.bsky.app/img/feed_thumbnail/plain/" + m.did + "/" + cid + "@jpeg", a), a);
    view.AddMember("fullsize", Str("https://cdn.bsky.app/img/feed_fullsize/plain/" + m.did + "/" + cid + "@jpeg", a), a);
    view.AddMember("alt", Str(p.alt, a), a);
    view.AddMember("aspectRatio", AspectRatio(p, a), a);
    return view;
  });
}

rapidjson::Value ExternalCard(const MockPost& m, Alloc& a) {
  rapidjson::Value external(rapidjson::kObjectType);
  external.AddMember("uri", Str(PageOf(m), a), a);
  external.AddMember("title", "A page the post links to", a);
  external.AddMember("description", "What the page's card says of it", a);
  return external;
}

rapidjson::Value Record(const MockPost& m, Alloc& a, int depth = 0);

rapidjson::Value StrongRef(const MockPost& m, Alloc& a, int depth) {
  rapidjson::Document scratch;
  const std::string cid = RecordCid(Record(m, scratch.GetAllocator(), depth + 1));
  rapidjson::Value ref(rapidjson::kObjectType);
  ref.AddMember("cid", Str(cid, a), a);
  ref.AddMember("uri", Str(m.uri, a), a);
  return ref;
}

// The post's record as its author's repository holds it (app.bsky.feed.post): text with facets
// for its mention and hashtag, langs, and a reply or embed when it has one. Records referred to
// past depth 2 are written plain (Referenced() makes them plain anyway).
rapidjson::Value Record(const MockPost& m, Alloc& a, int depth) {
  const PostText said = MockPostText(m.h);
  std::string text = said.text;
  rapidjson::Value facets(rapidjson::kArrayType);
  const auto facet = [&](size_t start, size_t end, rapidjson::Value feature) {
    rapidjson::Value index(rapidjson::kObjectType);
    index.AddMember("byteEnd", static_cast<uint64_t>(end), a);
    index.AddMember("byteStart", static_cast<uint64_t>(start), a);
    rapidjson::Value features(rapidjson::kArrayType);
    features.PushBack(feature, a);
    rapidjson::Value f(rapidjson::kObjectType);
    f.AddMember("features", features, a);
    f.AddMember("index", index, a);
    facets.PushBack(f, a);
  };
  if (!said.mention.empty()) {  // "@ana_lima ..." as a Bluesky handle: "@ana-lima.bsky.social ..."
    std::string handle = said.mention;
    std::replace(handle.begin(), handle.end(), '_', '-');
    std::replace(handle.begin(), handle.end(), '.', '-');
    handle += ".bsky.social";
    text = "@" + handle + text.substr(1 + said.mention.size());
    rapidjson::Value mention(rapidjson::kObjectType);
    mention.AddMember("$type", "app.bsky.richtext.facet#mention", a);
    mention.AddMember("did", Str(MockDid(handle), a), a);
    facet(0, 1 + handle.size(), std::move(mention));
  }
  if (!said.hashtag.empty()) {  // at the end: " #tag"
    rapidjson::Value tag(rapidjson::kObjectType);
    tag.AddMember("$type", "app.bsky.richtext.facet#tag", a);
    tag.AddMember("tag", Str(said.hashtag, a), a);
    facet(text.size() - 1 - said.hashtag.size(), text.size(), std::move(tag));
  }
  rapidjson::Value record(rapidjson::kObjectType);
  record.AddMember("$type", "app.bsky.feed.post", a);
  record.AddMember("createdAt", Str(IsoMillis(m.created_ms), a), a);
  record.AddMember("text", Str(text, a), a);
  rapidjson::Value langs(rapidjson::kArrayType);
  langs.PushBack(Str(said.lang, a), a);
  record.AddMember("langs", langs, a);
  if (!facets.Empty()) record.AddMember("facets", facets, a);
  const bool plain = depth >= 2;
  if (!plain && IsReply(m.h)) {  // a reply to a post that starts its thread: root and parent
    const MockPost parent = Referenced(m, 1);
    rapidjson::Value reply(rapidjson::kObjectType);
    reply.AddMember("parent", StrongRef(parent, a, depth), a);
    reply.AddMember("root", StrongRef(parent, a, depth), a);
    record.AddMember("reply", reply, a);
  }
  const Embed kind = plain ? Embed::kNone : EmbedOf(m.h);
  if (kind == Embed::kNone) return record;
  rapidjson::Value embed(rapidjson::kObjectType);
  if (kind == Embed::kExternal) {
    embed.AddMember("$type", "app.bsky.embed.external", a);
    embed.AddMember("external", ExternalCard(m, a), a);
  } else if (kind == Embed::kImages) {
    embed = ImagesRecord(m, a);
  } else {
    rapidjson::Value quote(rapidjson::kObjectType);
    quote.AddMember("$type", "app.bsky.embed.record", a);
    quote.AddMember("record", StrongRef(Referenced(m, 2), a, depth), a);
    if (kind == Embed::kQuote) {
      embed = std::move(quote);
    } else {
      embed.AddMember("$type", "app.bsky.embed.recordWithMedia", a);
      embed.AddMember("media", ImagesRecord(m, a), a);
      embed.AddMember("record", quote, a);
    }
  }
  record.AddMember("embed", embed, a);
  return record;
}

// The accounts of the mock's world whose DIDs it knows: user<k>.bsky.social for k below
// kWorldAccounts (the authors Referenced() draws, and the posting accounts of follow_world.hpp).
constexpr uint64_t kWorldAccounts = 5000;

const std::unordered_map<std::string, uint64_t>& WorldDids() {
  static const std::unordered_map<std::string, uint64_t> dids = [] {
    std::unordered_map<std::string, uint64_t> m;
    for (uint64_t k = 0; k < kWorldAccounts; ++k) m.emplace(MockDid("user" + std::to_string(k) + ".bsky.social"), k);
    return m;
  }();
  return dids;
}

std::optional<uint64_t> WorldAccount(const std::string& did) {
  const auto it = WorldDids().find(did);
  if (it == WorldDids().end()) return std::nullopt;
  return it->second;
}

// The handle a DID has: its world name, or one from a hash for the DIDs of no world account.
std::string HandleOfDid(const std::string& did) {
  if (const auto k = WorldAccount(did)) return "user" + std::to_string(*k) + ".bsky.social";
  return "user" + std::to_string(Fnv(did) % 100000) + ".bsky.social";
}

// The author as profileViewBasic: the same for every post of a DID; most have an avatar (a blob
// on the CDN, named by its CID).
rapidjson::Value Author(const std::string& did, Alloc& a) {
  const uint64_t who = Fnv(did);
  rapidjson::Value author(rapidjson::kObjectType);
  author.AddMember("did", Str(did, a), a);
  author.AddMember("handle", Str(HandleOfDid(did), a), a);
  author.AddMember("displayName", Str(MockDisplayName(who), a), a);
  if (who % 5 != 0) {
    author.AddMember(
        "avatar", Str("https://cdn.bsky.app/img/avatar/plain/" + did + "/" + Cid(0x55, "avatar " + did) + "@jpeg", a),
        a);
  }
  author.AddMember("labels", rapidjson::Value(rapidjson::kArrayType), a);
  // The account's creation: 2023-04-01 and up to 400 days after.
  author.AddMember("createdAt", Str(IsoMillis(1680307200000LL + static_cast<int64_t>(who % 400) * 86'400'000), a), a);
  return author;
}

void AddCounts(rapidjson::Value& view, const MockPost& m, const MockConfig& config, int64_t now_ms, bool bookmarks, Alloc& a) {
  // As of the start of the Date second (engagement_events.hpp: what Jetstream streamed before it).
  const PublicMetrics c = Engagement(config, Network::kBluesky, m.h, AgeAtSecond(m.created_ms, now_ms / 1000));
  if (bookmarks) view.AddMember("bookmarkCount", c.bookmark_count, a);
  view.AddMember("replyCount", c.reply_count, a);
  view.AddMember("repostCount", c.retweet_count, a);
  view.AddMember("likeCount", c.like_count, a);
  view.AddMember("quoteCount", c.quote_count, a);
}

rapidjson::Value EmbedView(const MockPost& m, const MockConfig& config, int64_t now_ms, int depth, Alloc& a);

// A quoted post as the AppView embeds it: app.bsky.embed.record#viewRecord (its record, author and
// counts, as its own answer gives them), or #viewNotFound when the AppView does not show it.
rapidjson::Value QuotedView(const MockPost& q, const MockConfig& config, int64_t now_ms, int depth, Alloc& a) {
  rapidjson::Value view(rapidjson::kObjectType);
  if (!Shown(q, config, now_ms) || MadeGone(q, config, now_ms)) {
    view.AddMember("$type", "app.bsky.embed.record#viewNotFound", a);
    view.AddMember("uri", Str(q.uri, a), a);
    view.AddMember("notFound", true, a);
    return view;
  }
  rapidjson::Value value = Record(q, a, depth);
  view.AddMember("$type", "app.bsky.embed.record#viewRecord", a);
  view.AddMember("uri", Str(q.uri, a), a);
  view.AddMember("cid", Str(RecordCid(value), a), a);
  view.AddMember("author", Author(q.did, a), a);
  view.AddMember("value", value, a);
  view.AddMember("labels", rapidjson::Value(rapidjson::kArrayType), a);
  AddCounts(view, q, config, now_ms, false, a);
  view.AddMember("indexedAt", Str(IsoMillis(q.indexed_ms), a), a);
  if (depth <= 1) {  // the quoted post's own embed, one level down
    rapidjson::Value embeds(rapidjson::kArrayType);
    if (depth < 2 && EmbedOf(q.h) != Embed::kNone) embeds.PushBack(EmbedView(q, config, now_ms, depth + 1, a), a);
    view.AddMember("embeds", embeds, a);
  }
  return view;
}

// The embed's view, as the AppView hydrates it (views/index.ts: embed()).
rapidjson::Value EmbedView(const MockPost& m, const MockConfig& config, int64_t now_ms, int depth, Alloc& a) {
  rapidjson::Value view(rapidjson::kObjectType);
  switch (EmbedOf(m.h)) {
    case Embed::kNone: break;
    case Embed::kExternal:
      view.AddMember("$type", "app.bsky.embed.external#view", a);
      view.AddMember("external", ExternalCard(m, a), a);
      break;
    case Embed::kImages: view = ImagesView(m, a); break;
    case Embed::kQuote:
      view.AddMember("$type", "app.bsky.embed.record#view", a);
      view.AddMember("record", QuotedView(Referenced(m, 2), config, now_ms, depth, a), a);
      break;
    case Embed::kQuoteWithImages: {
      rapidjson::Value record(rapidjson::kObjectType);  // (the inner record view has no $type)
      record.AddMember("record", QuotedView(Referenced(m, 2), config, now_ms, depth, a), a);
      view.AddMember("$type", "app.bsky.embed.recordWithMedia#view", a);
      view.AddMember("media", ImagesView(m, a), a);
      view.AddMember("record", record, a);
      break;
    }
  }
  return view;
}

rapidjson::Value PostView(const MockPost& m, const MockConfig& config, int64_t now_ms, Alloc& a) {
  rapidjson::Value record = Record(m, a);
  rapidjson::Value view(rapidjson::kObjectType);
  view.AddMember("uri", Str(m.uri, a), a);
  view.AddMember("cid", Str(RecordCid(record), a), a);
  view.AddMember("author", Author(m.did, a), a);
  view.AddMember("record", record, a);
  if (EmbedOf(m.h) != Embed::kNone) view.AddMember("embed", EmbedView(m, config, now_ms, 1, a), a);
  AddCounts(view, m, config, now_ms, true, a);
  view.AddMember("indexedAt", Str(IsoMillis(m.indexed_ms), a), a);
  view.AddMember("labels", rapidjson::Value(rapidjson::kArrayType), a);
  return view;
}


// The record key of the post world account k made at ms: a TID whose clock id the model shows,
// stamped at posting (not backdated) and not one getPosts refuses.
std::string FollowRkey(uint64_t k, int64_t ms, const MockConfig& config);
// Whether the post is a posting account's post deleted by now (--follow-delete-every).
bool DeletedByNow(const MockPost& m, const MockConfig& config, int64_t now_ms);

// The feed's cursor: "<ms>::<record key>" of the last post of the page (the AppView's
// time-and-CID keyset); the next page holds older posts.
std::optional<int64_t> CursorMillis(const std::string& cursor) {
  const size_t sep = cursor.find("::");
  if (sep == 0 || sep == std::string::npos || sep > 15) return std::nullopt;
  int64_t v = 0;
  for (size_t i = 0; i < sep; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(cursor[i]))) return std::nullopt;
    v = v * 10 + (cursor[i] - '0');
  }
  return v;
}

std::string Param(const QueryParams& params, const char* name) {
  const auto it = params.find(name);
  return it == params.end() ? "" : it->second;
}

std::string Serialized(const rapidjson::Document& doc) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  doc.Accept(w);
  return buf.GetString();
}

// The DID an actor parameter names (a DID, or a handle the mock's world resolves), or an error.
std::optional<std::string> ActorDid(const std::string& actor_in, EndpointReply* error) {
  std::string actor = actor_in;
  if (actor.empty()) {
    *error = XrpcError(400, "InvalidRequest", "Error: Params must have the property \"actor\"");
    return std::nullopt;
  }
  if (ValidDid(actor)) return actor;
  std::transform(actor.begin(), actor.end(), actor.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!ValidHandle(actor)) {
    *error = XrpcError(400, "InvalidRequest", "Error: actor must be a valid did or a handle");
    return std::nullopt;
  }
  if (actor.rfind("gone", 0) == 0) {
    *error = XrpcError(400, "InvalidRequest", "Profile not found");
    return std::nullopt;
  }
  return MockDid(actor);
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

bool IsDid(const std::string& s) { return ValidDid(s); }

std::string MockDid(const std::string& handle) { return PlcDid(Fnv(handle)); }

std::string PlcDid(uint64_t h) {
  std::string did = "did:plc:";
  for (int i = 0; i < 24; ++i) {
    if (i == 12) h = Mix(h);
    did += kSortable[(h >> ((i % 12) * 5)) & 31];
  }
  return did;
}

EndpointReply GetBlueskyPosts(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  std::optional<EndpointReply> refused;
  const std::vector<std::string> uris = ListParam(params, "uris", &refused);
  if (refused) return *refused;
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
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value views(rapidjson::kArrayType);
  // Not the request's order: clients must match posts by uri (FACTS.md 1.2).
  for (auto it = posts.rbegin(); it != posts.rend(); ++it) {
    const std::string& uri = it->first;
    const PostUri& p = it->second;
    // An at:// URI with a handle finds nothing (the AppView looks posts up by the exact URI).
    if (!ValidDid(p.authority)) continue;
    const std::optional<int64_t> tid_ms = TidMillis(p.rkey);
    if (!tid_ms) continue;  // not a post's key: not found
    // A post's fate follows its record key's clock id (its last 10 bits), which a test chooses.
    const MockPost m = Describe(uri, p.authority, p.rkey, *tid_ms);
    if (Shown(m, config, now_ms) && !DeletedByNow(m, config, now_ms) && !MadeGone(m, config, now_ms))
      views.PushBack(PostView(m, config, now_ms, a), a);
  }
  doc.AddMember("posts", views, a);
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  doc.Accept(w);
  EndpointReply reply;
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

namespace {

std::string FollowRkey(uint64_t k, int64_t ms, const MockConfig& config) {
  const std::string did = MockDid("user" + std::to_string(k) + ".bsky.social");
  const uint64_t start = Mix(k) & 0x3FF;
  for (uint64_t i = 0; i < 1024; ++i) {
    const uint64_t clock = (start + i) & 0x3FF;
    const std::string rkey = Tid(ms, clock);
    const MockPost m = Describe("at://" + did + kCollection + rkey, did, rkey, ms);
    if (Shown(m, config, INT64_MAX / 2) && m.created_ms == ms &&
        !(config.bluesky_refused_every != 0 && clock % config.bluesky_refused_every == 5))
      return rkey;
  }
  return Tid(ms, start);
}

// When world account k's post made at ms is deleted (--follow-delete-every), or 0: never.
int64_t FollowDeletedAt(uint64_t k, int64_t ms, const MockConfig& config) {
  if (config.follow_delete_every == 0) return 0;
  const Cadence c = CadenceOf("bluesky", k, config);
  if (c.period_ms <= 0) return 0;
  const int64_t n = (ms - c.phase_ms) / c.period_ms;
  return Mix(k * 1000003 + static_cast<uint64_t>(n)) % config.follow_delete_every == 0 ? ms + kFollowDeleteAfterMs : 0;
}

// Whether a post the AppView would show is a world account's post deleted by now.
bool DeletedByNow(const MockPost& m, const MockConfig& config, int64_t now_ms) {
  if (config.follow_delete_every == 0) return false;
  const auto k = WorldAccount(m.did);
  if (!k || *k >= config.follow_accounts) return false;
  const Cadence c = CadenceOf("bluesky", *k, config);
  if (c.period_ms <= 0 || ((m.tid_ms - c.phase_ms) % c.period_ms + c.period_ms) % c.period_ms != 0) return false;
  if (FollowRkey(*k, m.tid_ms, config) != m.rkey) return false;
  const int64_t at = FollowDeletedAt(*k, m.tid_ms, config);
  return at != 0 && now_ms >= at;
}

}  // namespace

namespace {
// The profileViewDetailed of an actor (as asked: a DID, or a handle the mock resolves) into
// *profile, or false when the AppView has none: an unknown DID of the mock's world. (Not an
// optional<Value>: a Value is moved, never copied, which optional's assignment cannot say.)
bool DetailedProfile(const std::string& actor, const std::string& did, const MockConfig& config, int64_t now_ms,
                     rapidjson::Document::AllocatorType& a, rapidjson::Value* out) {
  // The mock's world knows its own accounts' DIDs, and those its handles resolve to.
  if (ValidDid(actor) && !WorldAccount(did)) return false;
  rapidjson::Value& profile = out->SetObject();
  rapidjson::Value author = Author(did, a);
  if (!ValidDid(actor)) {
    std::string handle = actor;
    std::transform(handle.begin(), handle.end(), handle.begin(), [](unsigned char c) { return std::tolower(c); });
    author["handle"] = Str(handle, a);
  }
  for (auto& m : author.GetObject()) profile.AddMember(rapidjson::Value(m.name, a), rapidjson::Value(m.value, a), a);
  const uint64_t who = Fnv(did);
  const auto k = WorldAccount(did);
  const Cadence cadence = k ? CadenceOf("bluesky", *k, config) : Cadence{};
  profile.AddMember("followersCount", static_cast<int64_t>(who % 5000), a);
  profile.AddMember("followsCount", static_cast<int64_t>(who % 700), a);
  profile.AddMember("postsCount", cadence.period_ms > 0 ? now_ms / cadence.period_ms % 100000 : static_cast<int64_t>(who % 900), a);
  profile.AddMember("indexedAt", Str(IsoMillis(1680307200000LL + static_cast<int64_t>(who % 400) * 86'400'000), a), a);
  return true;
}
}  // namespace

EndpointReply GetBlueskyProfile(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  EndpointReply error;
  const std::optional<std::string> did = ActorDid(Param(params, "actor"), &error);
  if (!did) return error;
  rapidjson::Document doc(rapidjson::kObjectType);
  if (!DetailedProfile(Param(params, "actor"), *did, config, now_ms, doc.GetAllocator(), &doc))
    return XrpcError(400, "InvalidRequest", "Profile not found");
  EndpointReply reply;
  reply.body = Serialized(doc);
  return reply;
}

// app.bsky.actor.getProfiles: up to 25 actors; those with no profile are left out of the answer
// (the AppView's skeleton drops actors it cannot resolve, its presentation those it has no view
// of), and the rest come in the order asked, each once.
EndpointReply GetBlueskyProfiles(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  std::optional<EndpointReply> refused;
  const std::vector<std::string> actors = ListParam(params, "actors", &refused);
  if (refused) return *refused;
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value profiles(rapidjson::kArrayType);
  std::set<std::string> seen;
  for (size_t i = 0; i < actors.size(); ++i) {
    std::string lowered = actors[i];
    std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
    if (!ValidDid(actors[i]) && !ValidHandle(lowered))
      return XrpcError(400, "InvalidRequest", "Error: actors/" + std::to_string(i) + " must be a valid did or a handle");
    EndpointReply ignored;
    const std::optional<std::string> did = ActorDid(actors[i], &ignored);
    if (!did || !seen.insert(*did).second) continue;
    rapidjson::Value profile;
    if (DetailedProfile(actors[i], *did, config, now_ms, a, &profile)) profiles.PushBack(profile, a);
  }
  doc.AddMember("profiles", profiles, a);
  EndpointReply reply;
  reply.body = Serialized(doc);
  return reply;
}

EndpointReply GetAuthorFeed(const QueryParams& params, const MockConfig& config, int64_t now_ms) {
  EndpointReply error;
  const std::optional<std::string> did = ActorDid(Param(params, "actor"), &error);
  if (!did) return error;
  int64_t limit = 50;
  if (params.count("limit")) {
    const std::string v = Param(params, "limit");
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0') return XrpcError(400, "InvalidRequest", "Error: limit must be an integer");
    if (n < 1) return XrpcError(400, "InvalidRequest", "Error: limit can not be less than 1");
    if (n > 100) return XrpcError(400, "InvalidRequest", "Error: limit can not be greater than 100");
    limit = n;
  }
  const std::string filter = params.count("filter") ? Param(params, "filter") : "posts_with_replies";
  static const std::set<std::string> kFilters = {"posts_with_replies", "posts_no_replies", "posts_with_media",
                                                 "posts_and_author_threads", "posts_with_video"};
  if (!kFilters.count(filter))
    return XrpcError(400, "InvalidRequest",
                     "Error: filter must be one of (posts_with_replies|posts_no_replies|posts_with_media|"
                     "posts_and_author_threads|posts_with_video)");
  int64_t to = now_ms;
  if (params.count("cursor")) {
    const auto ms = CursorMillis(Param(params, "cursor"));
    if (!ms) return XrpcError(400, "InvalidRequest", "Error: Malformed cursor");
    to = std::min(to, *ms - 1);
  }
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value feed(rapidjson::kArrayType);
  std::string cursor;
  if (const auto k = WorldAccount(*did); k && filter != "posts_with_media" && filter != "posts_with_video") {
    // A page holds `limit` posts the feed shows (not the deleted ones, nor replies when they are
    // filtered out), and a cursor when more of them are older.
    const size_t asked = static_cast<size_t>(limit) * 4 + 10;
    const std::vector<int64_t> times = PostTimes(CadenceOf("bluesky", *k, config), 0, to, asked, true);
    int64_t last_ms = 0;
    bool more = false;
    for (int64_t ms : times) {
      const std::string rkey = FollowRkey(*k, ms, config);
      const MockPost m = Describe("at://" + *did + kCollection + rkey, *did, rkey, ms);
      if (filter == "posts_no_replies" && IsReply(m.h)) continue;
      if (DeletedByNow(m, config, now_ms)) continue;
      if (static_cast<int64_t>(feed.Size()) == limit) {
        more = true;
        break;
      }
      rapidjson::Value item(rapidjson::kObjectType);
      item.AddMember("post", PostView(m, config, now_ms, a), a);
      feed.PushBack(item, a);
      last_ms = ms;
    }
    if (!more && times.size() == asked && feed.Size() > 0) more = true;  // older ones beyond this look
    if (more && last_ms != 0) cursor = std::to_string(last_ms) + "::" + FollowRkey(*k, last_ms, config);
  }
  doc.AddMember("feed", feed, a);
  if (!cursor.empty()) doc.AddMember("cursor", Str(cursor, a), a);
  EndpointReply reply;
  reply.body = Serialized(doc);
  return reply;
}

std::vector<MadePost> BlueskyMadePosts(int64_t from_ms, int64_t to_ms, const MockConfig& config) {
  std::vector<MadePost> out;
  for (uint64_t k = 0; k < std::min(config.follow_accounts, kWorldAccounts); ++k) {
    const std::string did = MockDid("user" + std::to_string(k) + ".bsky.social");
    for (int64_t ms : PostTimes(CadenceOf("bluesky", k, config), from_ms, to_ms, 1'000'000, false))
      out.push_back({"at://" + did + kCollection + FollowRkey(k, ms, config), ms, FollowDeletedAt(k, ms, config)});
  }
  return out;
}

std::vector<std::pair<std::string, double>> BlueskyPosters(const MockConfig& config) {
  std::vector<std::pair<std::string, double>> out;
  for (uint64_t k = 0; k < std::min(config.follow_accounts, kWorldAccounts); ++k)
    out.emplace_back("https://bsky.app/profile/user" + std::to_string(k) + ".bsky.social",
                     CadenceOf("bluesky", k, config).per_second());
  return out;
}

namespace {

// A Jetstream commit of an app.bsky.feed.post record: its create (`created`: the post, its record
// and CID as getPosts shows them) or, without one, its delete.
std::string PostCommitJson(const std::string& did, const std::string& rkey, int64_t time_us, const MockPost* created) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("did", Str(did, a), a);
  doc.AddMember("time_us", time_us, a);
  doc.AddMember("kind", "commit", a);
  rapidjson::Value commit(rapidjson::kObjectType);
  commit.AddMember("rev", Str(Tid(time_us / 1000, 0), a), a);
  commit.AddMember("operation", created ? "create" : "delete", a);
  commit.AddMember("collection", "app.bsky.feed.post", a);
  commit.AddMember("rkey", Str(rkey, a), a);
  if (created) {
    rapidjson::Value record = Record(*created, a);
    const std::string cid = RecordCid(record);
    commit.AddMember("record", record, a);
    commit.AddMember("cid", Str(cid, a), a);
  }
  doc.AddMember("commit", commit, a);
  return Serialized(doc);
}

}  // namespace

std::string JetstreamPostDeleteJson(const std::string& did, const std::string& rkey, int64_t time_us) {
  return PostCommitJson(did, rkey, time_us, nullptr);
}

std::vector<std::pair<int64_t, std::string>> JetstreamEvents(const std::set<std::string>& dids, int64_t after_us,
                                                             int64_t until_us, const MockConfig& config) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::vector<uint64_t> accounts;
  if (dids.empty()) {
    for (uint64_t k = 0; k < std::min(config.follow_accounts, kWorldAccounts); ++k) accounts.push_back(k);
  } else {
    for (const std::string& did : dids)
      if (const auto k = WorldAccount(did); k && *k < config.follow_accounts) accounts.push_back(*k);
  }
  const int64_t from_ms = after_us / 1000 - 1, to_ms = until_us / 1000;
  for (uint64_t k : accounts) {
    const std::string did = MockDid("user" + std::to_string(k) + ".bsky.social");
    const Cadence cadence = CadenceOf("bluesky", k, config);
    // Jetstream sees a post a moment after its author made it: time_us is its clock, not createdAt.
    for (int64_t ms : PostTimes(cadence, from_ms - kFollowDeleteAfterMs, to_ms, 1'000'000, false)) {
      const std::string rkey = FollowRkey(k, ms, config);
      const int64_t created_us = ms * 1000 + 50 + static_cast<int64_t>(Mix(k ^ static_cast<uint64_t>(ms)) % 900);
      const int64_t deleted_ms = FollowDeletedAt(k, ms, config);
      const auto event = [&](int64_t time_us, bool create) {
        const MockPost m = Describe("at://" + did + kCollection + rkey, did, rkey, ms);
        out.emplace_back(time_us, PostCommitJson(did, rkey, time_us, create ? &m : nullptr));
      };
      if (created_us > after_us && created_us <= until_us) event(created_us, true);
      if (deleted_ms != 0) {
        const int64_t deleted_us = deleted_ms * 1000 + 77;
        if (deleted_us > after_us && deleted_us <= until_us) event(deleted_us, false);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t BlueskySeed(const std::string& uri) { return Fnv(uri); }

std::optional<TrackedPost> TrackablePost(const std::string& uri) {
  const std::optional<PostUri> p = ParseAtUri(uri);
  if (!p || !ValidDid(p->authority)) return std::nullopt;
  const std::optional<int64_t> tid_ms = TidMillis(p->rkey);
  if (!tid_ms) return std::nullopt;
  const MockPost m = Describe(uri, p->authority, p->rkey, *tid_ms);
  rapidjson::Document scratch;
  return TrackedPost{uri, m.did, RecordCid(Record(m, scratch.GetAllocator())), m.h, m.created_ms};
}

const char* EngagementCollection(const StreamEvent& e) {
  switch (e.act) {
    case Act::kLike: return "app.bsky.feed.like";
    case Act::kRepost: return "app.bsky.feed.repost";
    default: return "app.bsky.feed.post";
  }
}

std::string EngagementCommitJson(const StreamEvent& e, const TrackedPost* tracked) {
  const std::string did = PlcDid(e.actor);
  const std::string rkey = Tid(e.record_us / 1000, e.actor & 0x3FF);
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  doc.AddMember("did", Str(did, a), a);
  doc.AddMember("time_us", e.time_us, a);
  doc.AddMember("kind", "commit", a);
  rapidjson::Value commit(rapidjson::kObjectType);
  commit.AddMember("rev", Str(Tid(e.time_us / 1000, 0), a), a);
  commit.AddMember("operation", e.create ? "create" : "delete", a);
  commit.AddMember("collection", rapidjson::StringRef(EngagementCollection(e)), a);
  commit.AddMember("rkey", Str(rkey, a), a);
  if (e.create) {
    // The subject: the tracked post, or a post of nobody's (a DID and a key from the hash).
    std::string uri, cid;
    if (tracked != nullptr && e.subject == 0) {
      uri = tracked->uri;
      cid = tracked->cid;
    } else {
      const int64_t ms = e.time_us / 1000 - 1000 - static_cast<int64_t>(Mix(e.subject) % (2 * 86'400'000ULL));
      uri = "at://" + PlcDid(e.subject) + kCollection + Tid(ms, e.subject >> 54);
      cid = Cid(0x71, "untracked " + uri);
    }
    const auto ref = [&] {
      rapidjson::Value r(rapidjson::kObjectType);
      r.AddMember("cid", Str(cid, a), a);
      r.AddMember("uri", Str(uri, a), a);
      return r;
    };
    // Made a moment (up to 0.8 s) before Jetstream saw it.
    const int64_t created_ms = e.record_us / 1000 - static_cast<int64_t>((e.actor >> 32) % 800);
    rapidjson::Value record(rapidjson::kObjectType);
    record.AddMember("$type", rapidjson::StringRef(EngagementCollection(e)), a);
    record.AddMember("createdAt", Str(IsoMillis(created_ms), a), a);
    if (e.act == Act::kLike || e.act == Act::kRepost) {
      record.AddMember("subject", ref(), a);
    } else {
      const PostText said = MockPostText(e.actor);
      record.AddMember("text", Str(said.text, a), a);
      rapidjson::Value langs(rapidjson::kArrayType);
      langs.PushBack(Str(said.lang, a), a);
      record.AddMember("langs", langs, a);
      if (e.act == Act::kReply) {
        rapidjson::Value reply(rapidjson::kObjectType);
        reply.AddMember("parent", ref(), a);
        reply.AddMember("root", ref(), a);
        record.AddMember("reply", reply, a);
      } else if (e.act == Act::kQuote) {
        rapidjson::Value quote(rapidjson::kObjectType);
        quote.AddMember("$type", "app.bsky.embed.record", a);
        quote.AddMember("record", ref(), a);
        if ((e.actor >> 40) % 10 < 3) {  // with images, as the mock's own posts' (valid blob refs)
          const MockPost self = Describe("at://" + did + kCollection + rkey, did, rkey, e.record_us / 1000);
          rapidjson::Value embed(rapidjson::kObjectType);
          embed.AddMember("$type", "app.bsky.embed.recordWithMedia", a);
          embed.AddMember("media", ImagesRecord(self, a), a);
          embed.AddMember("record", quote, a);
          record.AddMember("embed", embed, a);
        } else {
          record.AddMember("embed", quote, a);
        }
      }
    }
    const std::string record_cid = RecordCid(record);
    commit.AddMember("record", record, a);
    commit.AddMember("cid", Str(record_cid, a), a);
  }
  doc.AddMember("commit", commit, a);
  return Serialized(doc);
}

}  // namespace tweetkeeper::mock
