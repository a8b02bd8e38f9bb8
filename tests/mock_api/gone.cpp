#include "mock_api/gone.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/json_fields.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

int64_t SystemNowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

std::optional<GoneReason> ReasonNamed(const std::string& name, std::initializer_list<GoneReason> allowed) {
  for (GoneReason r : allowed)
    if (name == GoneReasonName(r)) return r;
  return std::nullopt;
}

std::string AllowedNames(std::initializer_list<GoneReason> allowed) {
  std::string out;
  for (GoneReason r : allowed) out += (out.empty() ? "" : ", ") + std::string(GoneReasonName(r));
  return out;
}

bool Digits(const std::string& s) {
  return !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
}

// A string member, or nothing when absent or not a string.
std::optional<std::string> Member(const rapidjson::Value& v, const char* key) {
  if (!v.HasMember(key) || !v[key].IsString()) return std::nullopt;
  return std::string(v[key].GetString(), v[key].GetStringLength());
}

// One change to be made, checked before any is.
struct Change {
  std::map<std::string, std::vector<GoneState>>* table;
  std::string key;
  GoneReason reason;
  std::string did, rkey;  // Bluesky: who, and for a post its record key
  bool account = false;   // a Bluesky account's status
};

}  // namespace

const char* GoneReasonName(GoneReason reason) {
  switch (reason) {
    case GoneReason::kActive: return "active";
    case GoneReason::kDeleted: return "deleted";
    case GoneReason::kProtected: return "protected";
    case GoneReason::kSuspended: return "suspended";
    case GoneReason::kDeactivated: return "deactivated";
    case GoneReason::kTakendown: return "takendown";
    case GoneReason::kPrivate: return "private";
  }
  return "active";
}

GoneWorld::GoneWorld() : GoneWorld(SystemNowUs) {}
GoneWorld::GoneWorld(Clock clock) : clock_(std::move(clock)) {}

bool GoneWorld::Apply(const std::string& body, size_t* applied, int64_t* time_us, std::string* error) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    *error = "the body must be a JSON object with x, bluesky and/or mastodon arrays";
    return false;
  }
  std::vector<Change> changes;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string network(it->name.GetString(), it->name.GetStringLength());
    if (network != "x" && network != "bluesky" && network != "mastodon") {
      *error = "unknown member " + network + " (x, bluesky or mastodon)";
      return false;
    }
    if (!it->value.IsArray()) {
      *error = network + " must be an array";
      return false;
    }
    size_t i = 0;
    for (const auto& e : it->value.GetArray()) {
      const std::string where = network + "[" + std::to_string(i++) + "]: ";
      if (!e.IsObject()) {
        *error = where + "must be an object";
        return false;
      }
      const auto bad = [&](const std::string& why) {
        *error = where + why;
        return false;
      };
      if (network == "x") {
        static constexpr std::initializer_list<GoneReason> kX = {GoneReason::kDeleted, GoneReason::kProtected,
                                                                 GoneReason::kSuspended, GoneReason::kDeactivated,
                                                                 GoneReason::kActive};
        const auto post = Member(e, "post"), user = Member(e, "user"), reason = Member(e, "reason");
        if (!post == !user || !Digits(post ? *post : *user))
          return bad("one of post or user, an X id as a string of 1 to 19 digits");
        const auto r = reason ? ReasonNamed(*reason, kX) : std::nullopt;
        if (!r) return bad("reason must be one of " + AllowedNames(kX));
        changes.push_back({post ? &x_posts_ : &x_users_, std::to_string(std::stoull(post ? *post : *user)), *r, "", "", false});
      } else if (network == "bluesky") {
        const auto uri = Member(e, "uri"), did = Member(e, "did");
        if (!uri == !did) return bad("one of uri (a post) or did (an account)");
        if (uri) {
          const std::optional<TrackedPost> p = TrackablePost(*uri);
          if (!p) return bad("uri must be at://<DID>/app.bsky.feed.post/<TID>");
          if (Member(e, "reason") != std::optional<std::string>("deleted"))
            return bad("a post's reason can only be deleted (a deleted record does not come back)");
          changes.push_back({&bsky_posts_, *uri, GoneReason::kDeleted, p->did, uri->substr(uri->rfind('/') + 1), false});
        } else {
          static constexpr std::initializer_list<GoneReason> kAccount = {
              GoneReason::kDeleted, GoneReason::kTakendown, GoneReason::kSuspended, GoneReason::kDeactivated,
              GoneReason::kActive};
          if (!IsDid(*did)) return bad("did must be a DID");
          const auto status = Member(e, "status");
          const auto r = status ? ReasonNamed(*status, kAccount) : std::nullopt;
          if (!r) return bad("status must be one of " + AllowedNames(kAccount));
          changes.push_back({&bsky_accounts_, *did, *r, *did, "", true});
        }
      } else {
        static constexpr std::initializer_list<GoneReason> kStatus = {GoneReason::kDeleted, GoneReason::kPrivate,
                                                                      GoneReason::kActive};
        static constexpr std::initializer_list<GoneReason> kAccount = {GoneReason::kDeleted, GoneReason::kSuspended,
                                                                       GoneReason::kActive};
        const auto host = Member(e, "host"), id = Member(e, "id"), account = Member(e, "account"),
                   reason = Member(e, "reason");
        if (!host || host->empty() || !id == !account || !Digits(id ? *id : *account))
          return bad("host (a server) and one of id (a status id) or account (an account id) are required");
        const auto& allowed = id ? kStatus : kAccount;
        const auto r = reason ? ReasonNamed(*reason, allowed) : std::nullopt;
        if (!r) return bad("reason must be one of " + AllowedNames(allowed));
        changes.push_back({id ? &mastodon_ : &mastodon_accounts_, *host + "/" + std::to_string(std::stoull(id ? *id : *account)),
                           *r, "", "", false});
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // A post is deleted once (checked under the lock: all entries or none).
  std::set<std::string> deleting;
  for (const Change& c : changes) {
    if (c.table == &bsky_posts_ && (bsky_posts_.count(c.key) != 0 || !deleting.insert(c.key).second)) {
      *error = "bluesky: " + c.key + " is deleted already";
      return false;
    }
  }
  // Read under the lock, and after every earlier stamp: a Jetstream connection that has read the
  // registry after reading its clock finds every later change at or after that clock + 1 µs.
  const int64_t t = std::max(clock_() + 1, last_us_ + 1);
  last_us_ = t;
  for (const Change& c : changes) {
    (*c.table)[c.key].push_back({c.reason, t});
    if (c.table == &bsky_posts_) events_.push_back({t, c.did, c.rkey, GoneReason::kDeleted, 0});
    if (c.account) events_.push_back({t, c.did, "", c.reason, ++seq_});
  }
  *applied = changes.size();
  *time_us = t;
  return true;
}

std::optional<GoneState> GoneWorld::At(const std::map<std::string, History>& m, const std::string& key, int64_t at_us) {
  const auto it = m.find(key);
  if (it == m.end()) return std::nullopt;
  std::optional<GoneState> state;
  for (const GoneState& s : it->second) {
    if (s.since_us > at_us) break;
    state = s;
  }
  return state;
}

std::optional<GoneState> GoneWorld::XPost(uint64_t id, int64_t at_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(x_posts_, std::to_string(id), at_us);
}

std::optional<GoneState> GoneWorld::XUser(uint64_t id, int64_t at_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(x_users_, std::to_string(id), at_us);
}

std::optional<GoneState> GoneWorld::BlueskyPost(const std::string& uri, int64_t at_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(bsky_posts_, uri, at_us);
}

std::optional<GoneState> GoneWorld::BlueskyAccount(const std::string& did, int64_t at_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(bsky_accounts_, did, at_us);
}

std::optional<GoneState> GoneWorld::MastodonStatus(const std::string& host, uint64_t id, int64_t at_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(mastodon_, host + "/" + std::to_string(id), at_us);
}

std::optional<GoneState> GoneWorld::MastodonAccount(const std::string& host, uint64_t account_id, int64_t at_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(mastodon_accounts_, host + "/" + std::to_string(account_id), at_us);
}

bool GoneWorld::BlueskyHidden(const std::string& uri, const std::string& did, int64_t at_us) const {
  const auto gone = [](const std::optional<GoneState>& s) { return s && s->reason != GoneReason::kActive; };
  return gone(BlueskyPost(uri, at_us)) || gone(BlueskyAccount(did, at_us));
}

std::vector<GoneEvent> GoneWorld::EventsFrom(size_t from, size_t* total) const {
  std::lock_guard<std::mutex> lock(mutex_);
  *total = events_.size();
  if (from >= events_.size()) return {};
  return {events_.begin() + static_cast<long>(from), events_.end()};
}

std::vector<GoneEvent> GoneWorld::EventsIn(size_t upto, int64_t from_us, int64_t to_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto end = events_.begin() + static_cast<long>(std::min(upto, events_.size()));
  const auto first = std::lower_bound(events_.begin(), end, from_us,
                                      [](const GoneEvent& e, int64_t t) { return e.time_us < t; });
  std::vector<GoneEvent> out;
  for (auto it = first; it != end && it->time_us < to_us; ++it) out.push_back(*it);
  return out;
}

std::string JetstreamAccountJson(const GoneEvent& e) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("did");
  w.String(e.did.c_str(), static_cast<rapidjson::SizeType>(e.did.size()));
  w.Key("time_us");
  w.Int64(e.time_us);
  w.Key("kind");
  w.String("account");
  w.Key("account");
  w.StartObject();
  w.Key("active");
  w.Bool(e.status == GoneReason::kActive);
  w.Key("did");
  w.String(e.did.c_str(), static_cast<rapidjson::SizeType>(e.did.size()));
  w.Key("seq");
  w.Int64(e.seq);
  w.Key("time");
  // The relay's time of the change, as an atproto datetime (milliseconds, Z).
  std::string time = FormatCreatedAt(e.time_us / 1000);
  time.replace(time.size() - 4, 3, std::to_string(1000 + (e.time_us / 1000) % 1000).substr(1));
  w.String(time.c_str(), static_cast<rapidjson::SizeType>(time.size()));
  if (e.status != GoneReason::kActive) {
    w.Key("status");
    w.String(GoneReasonName(e.status));
  }
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

}  // namespace tweetkeeper::mock
