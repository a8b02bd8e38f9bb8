#include "follow/bluesky_follow.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <map>

#include "follow/answer.hpp"
#include "follow/names.hpp"
#include "json/bounded.hpp"
#include "provider/bluesky.hpp"  // ParseRfc3339Millis
#include "provider/json_fields.hpp"
#include "provider/x_v2.hpp"  // EncodeQueryValue, RepeatedQuery

namespace tweetkeeper::worker::follow {
namespace {

constexpr std::string_view kPostCollection = "app.bsky.feed.post";

// A DID as follow() reads it in at://<DID>: the DID, or "" when it is none.
std::string DidOf(std::string_view did) {
  const auto profile = ProfileOf("at://" + std::string(did));
  return profile ? profile->account_id : "";
}

// A handle as follow() reads it (lower case), or "" ("handle.invalid" included: an account whose
// handle no longer validates is known by its DID only).
std::string HandleOf(std::string_view handle) {
  if (handle == "handle.invalid") return "";
  const auto profile = ProfileOf("at://" + std::string(handle));
  return profile ? profile->handle : "";
}

// The at:// URI of a post of did, as schedule_post() reads it, or nullopt.
std::optional<PostRef> OwnPost(std::string_view uri, std::string_view did) {
  auto post = PostOf(uri);
  if (!post || post->network != Network::kBluesky || post->author != did) return std::nullopt;
  return post;
}

// The XRPC error name of a 400 ({"error": "...", "message": "..."}), or "".
std::string XrpcError(const HttpResponse& r, std::string* message) {
  rapidjson::Document doc;
  if (!json::Parse(doc, r.body).empty() || !doc.IsObject()) return {};
  *message = CleanText(StringMember(doc, "message"), 300);
  return CleanText(StringMember(doc, "error"), 100);
}

}  // namespace

std::string BlueskyProfileUrl(const std::string& base, const std::string& actor) {
  return base + "/xrpc/app.bsky.actor.getProfile?actor=" + EncodeQueryValue(actor);
}

Account ParseBlueskyProfile(const HttpResponse& r) {
  Account a;
  if (r.status == 400) {
    std::string message;
    const std::string error = XrpcError(r, &message);
    // An unknown actor is InvalidRequest "Profile not found"; taken down or deactivated ones
    // have their own names. Anything else 400 says is about the request: not the account's fault.
    if ((error == "InvalidRequest" && message == "Profile not found") || error == "AccountTakedown" ||
        error == "AccountDeactivated") {
      a.status = Account::Status::kMissing;
      a.reason = message.empty() ? error : message;
      return a;
    }
  }
  rapidjson::Document doc;
  if (!ParseOkBody(doc, r, rapidjson::kObjectType, "not a profile object", &a.reason)) return a;
  a.account_id = DidOf(StringMember(doc, "did"));
  if (a.account_id.empty()) {
    a.reason = "the profile's did is not a did:plc or did:web: " + Snippet(r.body);
    return a;
  }
  a.status = Account::Status::kFound;
  a.handle = HandleOf(StringMember(doc, "handle"));
  return a;
}

std::string BlueskyProfilesUrl(const std::string& base, const std::vector<std::string>& actors) {
  return base + "/xrpc/app.bsky.actor.getProfiles" + RepeatedQuery("actors", actors);
}

std::vector<Account> ParseBlueskyProfiles(const HttpResponse& r, const std::vector<std::string>& actors) {
  std::vector<Account> out(actors.size());
  const auto fail_all = [&](const std::string& reason) {
    for (Account& a : out) a.reason = reason;
    return out;
  };
  rapidjson::Document doc;
  std::string reason;
  if (!ParseOkBody(doc, r, &reason)) return fail_all(reason);
  // (MemberEnd() of a document that is no object is an assertion, not an iterator.)
  if (!doc.IsObject() || !doc.HasMember("profiles") || !doc["profiles"].IsArray())
    return fail_all("a 200 body with no profiles array: " + Snippet(r.body));
  const auto profiles = doc.FindMember("profiles");
  std::map<std::string, Account> by_did, by_handle;
  for (const auto& p : profiles->value.GetArray()) {
    if (!p.IsObject()) continue;
    Account a;
    a.account_id = DidOf(StringMember(p, "did"));
    if (a.account_id.empty()) continue;  // not a did:plc or did:web: no account of ours
    a.status = Account::Status::kFound;
    a.handle = HandleOf(StringMember(p, "handle"));
    by_did.emplace(a.account_id, a);
    if (!a.handle.empty()) by_handle.emplace(a.handle, a);
  }
  for (std::size_t i = 0; i < actors.size(); ++i) {
    const std::string did = DidOf(actors[i]);
    const auto& index = did.empty() ? by_handle : by_did;
    const auto it = index.find(did.empty() ? HandleOf(actors[i]) : did);
    if (it != index.end()) {
      out[i] = it->second;
    } else {
      out[i].status = Account::Status::kMissing;
      out[i].reason = "Profile not found (getProfiles left it out)";
    }
  }
  return out;
}

std::string BlueskyAuthorFeedUrl(const std::string& base, const std::string& did, const std::string& cursor) {
  std::string url = base + "/xrpc/app.bsky.feed.getAuthorFeed?actor=" + EncodeQueryValue(did) + "&limit=" +
                    std::to_string(kBlueskyFeedPageSize) + "&filter=posts_with_replies";
  if (!cursor.empty()) url += "&cursor=" + EncodeQueryValue(cursor);
  return url;
}

TimelinePage ParseBlueskyAuthorFeed(const HttpResponse& r, const std::string& did) {
  TimelinePage page;
  if (r.status == 400) {
    const Account a = ParseBlueskyProfile(r);  // the same errors name a missing account
    if (a.status == Account::Status::kMissing) {
      page.ok = true;
      page.account = a;
      return page;
    }
  }
  rapidjson::Document doc;
  if (!ParseOkBody(doc, r, rapidjson::kObjectType, "no feed array", &page.reason)) return page;
  if (!doc.HasMember("feed") || !doc["feed"].IsArray()) {
    page.reason = "unparsable 200 body: no feed array";
    return page;
  }
  const auto feed = doc.FindMember("feed");
  for (const rapidjson::Value& item : feed->value.GetArray()) {
    if (!item.IsObject()) continue;
    if (item.HasMember("reason")) continue;  // a repost of someone's post, or the pinned post
    const auto post = item.FindMember("post");
    if (post == item.MemberEnd() || !post->value.IsObject()) continue;
    const std::string_view uri = StringMember(post->value, "uri");
    if (uri.rfind("at://" + did + "/", 0) != 0) continue;  // not the account's own post
    const auto own = OwnPost(uri, did);
    const auto record = post->value.FindMember("record");
    const auto created = record != post->value.MemberEnd() && record->value.IsObject()
                             ? ParseRfc3339Millis(StringMember(record->value, "createdAt"))
                             : std::nullopt;
    const auto indexed = ParseRfc3339Millis(StringMember(post->value, "indexedAt"));
    if (!own || (!created && !indexed)) {
      page.reason = "a post left out: no record key or time as the AppView sends them";
      continue;
    }
    // createdAt is the client's word; the AppView's indexedAt bounds it (no post from the future).
    std::int64_t ms = indexed.value_or(INT64_MAX);
    if (created) ms = std::min(ms, *created);
    page.posts.push_back({own->key, own->canonical, ms});
  }
  page.next_token = CleanText(StringMember(doc, "cursor"), 200);
  page.ok = true;
  return page;
}

bool ParseJetstreamEvent(std::string_view frame, JetstreamEvent* event, std::string* reason) {
  rapidjson::Document doc;
  const std::string error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, frame);
  if (!error.empty() || !doc.IsObject()) {
    *reason = "not a Jetstream event: " + (error.empty() ? std::string("not an object") : error);
    return false;
  }
  JetstreamEvent e;
  e.did = DidOf(StringMember(doc, "did"));
  const auto time = doc.FindMember("time_us");
  if (e.did.empty() || time == doc.MemberEnd() || !time->value.IsInt64() || time->value.GetInt64() <= 0) {
    *reason = "not a Jetstream event (no did or time_us): " + Snippet(frame);
    return false;
  }
  e.time_us = time->value.GetInt64();
  const std::string_view kind = StringMember(doc, "kind");
  if (kind == "commit") {
    const auto commit = doc.FindMember("commit");
    if (commit == doc.MemberEnd() || !commit->value.IsObject()) {
      *reason = "a commit event without its commit: " + Snippet(frame);
      return false;
    }
    const rapidjson::Value& c = commit->value;
    const std::string_view operation = StringMember(c, "operation");
    if (StringMember(c, "collection") == kPostCollection && (operation == "create" || operation == "delete")) {
      const std::string_view rkey = StringMember(c, "rkey");
      const auto post = OwnPost("at://" + e.did + "/" + std::string(kPostCollection) + "/" + std::string(rkey), e.did);
      if (!post || post->key != rkey) {
        *reason = "a post's record key is not a TID: " + Snippet(frame);
        return false;
      }
      e.rkey = std::string(rkey);
      if (operation == "delete") {
        e.kind = JetstreamEvent::Kind::kPostDeleted;
      } else {
        const auto record = c.FindMember("record");
        const auto created = record != c.MemberEnd() && record->value.IsObject()
                                 ? ParseRfc3339Millis(StringMember(record->value, "createdAt"))
                                 : std::nullopt;
        // createdAt is the client's word: never later than Jetstream saw the post.
        const std::int64_t seen_ms = e.time_us / 1000;
        e.created_ms = created ? std::min(*created, seen_ms) : seen_ms;
        e.kind = JetstreamEvent::Kind::kPostCreated;
      }
    }
  } else if (kind == "account") {
    const auto account = doc.FindMember("account");
    if (account != doc.MemberEnd() && account->value.IsObject()) {
      const auto active = account->value.FindMember("active");
      e.active = active == account->value.MemberEnd() || !active->value.IsBool() || active->value.GetBool();
      e.status = CleanText(StringMember(account->value, "status"), 40);
      e.kind = JetstreamEvent::Kind::kAccount;
    }
  } else if (kind == "identity") {
    const auto identity = doc.FindMember("identity");
    if (identity != doc.MemberEnd() && identity->value.IsObject()) {
      const std::string_view handle = StringMember(identity->value, "handle");
      e.handle = HandleOf(handle);
      e.kind = JetstreamEvent::Kind::kIdentity;
    }
  }
  *event = std::move(e);
  return true;
}

std::string JetstreamUrl(const std::string& base, const std::vector<std::string>& dids, std::int64_t cursor_us) {
  std::string url = base + "/subscribe?wantedCollections=" + std::string(kPostCollection);
  for (std::size_t i = 0; i < dids.size() && i < kJetstreamMaxDids; ++i) url += "&wantedDids=" + EncodeQueryValue(dids[i]);
  if (cursor_us > 0) url += "&cursor=" + std::to_string(cursor_us);
  return url;
}

}  // namespace tweetkeeper::worker::follow
