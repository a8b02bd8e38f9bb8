#include "stream/count_event.hpp"

#include <rapidjson/document.h>

#include "json/bounded.hpp"
#include "provider/json_fields.hpp"

namespace tweetkeeper::worker::stream {
namespace {

constexpr std::string_view kPost = "app.bsky.feed.post";
constexpr std::string_view kLikeCollection = "app.bsky.feed.like";
constexpr std::string_view kRepostCollection = "app.bsky.feed.repost";
constexpr std::size_t kMaxName = 300;  // a DID is at most 2 KB by the spec; ours are far shorter

using rapidjson::Value;

const Value* Member(const Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  const auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

// The uri of a strongRef ({uri, cid}) member.
std::string_view RefUri(const Value* ref) {
  if (ref == nullptr || !ref->IsObject()) return {};
  return StringMember(*ref, "uri");
}

// The post a quote embeds: app.bsky.embed.record's record, or recordWithMedia's record.record.
PostKey QuotedPost(const Value& record) {
  const Value* embed = Member(record, "embed");
  if (embed == nullptr || !embed->IsObject()) return {};
  const std::string_view type = StringMember(*embed, "$type");
  const Value* inner = Member(*embed, "record");
  if (type == "app.bsky.embed.recordWithMedia") inner = inner ? Member(*inner, "record") : nullptr;
  else if (type != "app.bsky.embed.record") return {};
  return PostOf(RefUri(inner));
}

bool NameOk(std::string_view s) {
  if (s.empty() || s.size() > kMaxName) return false;
  for (const char c : s)
    if (c <= ' ' || c == '/' || c > '~') return false;
  return true;
}

}  // namespace

std::uint64_t RecordKey(std::string_view did, std::string_view collection, std::string_view rkey, Kind kind) {
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](std::string_view part) {
    for (const char c : part) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
    h ^= 0xff;  // a separator no name holds
    h *= 1099511628211ULL;
  };
  mix(did);
  mix(collection);
  mix(rkey);
  h ^= static_cast<std::uint64_t>(kind) + 1;
  h *= 1099511628211ULL;
  return h;
}

PostKey PostOf(std::string_view uri) {
  constexpr std::string_view kScheme = "at://";
  if (uri.size() > 2 * kMaxName || uri.substr(0, kScheme.size()) != kScheme) return {};
  uri.remove_prefix(kScheme.size());
  const std::size_t slash = uri.find('/');
  if (slash == std::string_view::npos) return {};
  const std::string_view did = uri.substr(0, slash);
  std::string_view rest = uri.substr(slash + 1);
  if (did.substr(0, 4) != "did:" || rest.substr(0, kPost.size()) != kPost || rest.size() <= kPost.size() + 1 ||
      rest[kPost.size()] != '/')
    return {};
  const std::string_view rkey = rest.substr(kPost.size() + 1);
  if (!NameOk(did) || !NameOk(rkey)) return {};
  PostKey key;
  key.reserve(did.size() + 1 + rkey.size());
  key.append(did).append("/").append(rkey);
  return key;
}

Parsed ParseCountEvent(std::string_view frame, CountEvent* event, std::string* reason) {
  rapidjson::Document doc;
  const std::string error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, frame);
  if (!error.empty() || !doc.IsObject()) {
    *reason = "not a Jetstream event: " + (error.empty() ? std::string("not an object") : error);
    return Parsed::kRefused;
  }
  const Value* time = Member(doc, "time_us");
  const std::string_view did = StringMember(doc, "did");
  if (time == nullptr || !time->IsInt64() || time->GetInt64() <= 0 || !NameOk(did) || did.substr(0, 4) != "did:") {
    *reason = "not a Jetstream event: no did or time_us";
    return Parsed::kRefused;
  }
  CountEvent e;
  e.time_us = time->GetInt64();
  *event = e;
  const std::string_view kind = StringMember(doc, "kind");
  if (kind == "account") {
    const Value* account = Member(doc, "account");
    if (account == nullptr || !account->IsObject()) return Parsed::kNothing;
    const Value* active = Member(*account, "active");
    const std::string_view status = StringMember(*account, "status");
    if (active == nullptr || !active->IsBool() || status.size() > 40 || !NameOk(status.empty() ? did : status))
      return Parsed::kNothing;
    event->did = std::string(did);
    event->active = active->GetBool();
    event->status = std::string(status);
    return Parsed::kAccount;
  }
  const Value* commit = kind == "commit" ? Member(doc, "commit") : nullptr;
  if (commit == nullptr || !commit->IsObject()) return Parsed::kNothing;
  const std::string_view collection = StringMember(*commit, "collection");
  const std::string_view operation = StringMember(*commit, "operation");
  const std::string_view rkey = StringMember(*commit, "rkey");
  if (!NameOk(rkey)) return Parsed::kNothing;
  Kind kinds[2];
  std::size_t n = 0;
  if (collection == kLikeCollection) kinds[n++] = kLike;
  else if (collection == kRepostCollection) kinds[n++] = kRepost;
  else if (collection == kPost) kinds[n++] = kReply, kinds[n++] = kQuote;
  else return Parsed::kNothing;
  for (std::size_t i = 0; i < n; ++i) e.record[kinds[i]] = RecordKey(did, collection, rkey, kinds[i]);
  if (operation == "delete") {
    for (std::size_t i = 0; i < n; ++i) e.may_undo[kinds[i]] = true;
    *event = std::move(e);
    return Parsed::kEvent;
  }
  // (An update is a create that replaces the record: the caller undoes the record first.)
  if (operation != "create" && operation != "update") return Parsed::kNothing;
  const Value* record = Member(*commit, "record");
  if (record == nullptr || !record->IsObject()) return Parsed::kNothing;
  e.create = true;
  bool any = false;
  if (collection == kPost) {
    if (const Value* reply = Member(*record, "reply")) e.subject[kReply] = PostOf(RefUri(Member(*reply, "parent")));
    e.subject[kQuote] = QuotedPost(*record);
  } else {
    e.subject[kinds[0]] = PostOf(RefUri(Member(*record, "subject")));
  }
  for (std::size_t i = 0; i < n; ++i) any |= !e.subject[kinds[i]].empty();
  if (operation == "update")
    for (std::size_t i = 0; i < n; ++i) e.may_undo[kinds[i]] = true;
  *event = std::move(e);
  return any || operation == "update" ? Parsed::kEvent : Parsed::kNothing;
}

}  // namespace tweetkeeper::worker::stream
