#pragma once
// What stream counts (tweetkeeper-worker --stream-counts) read of a Jetstream event: a like, a
// repost, a reply or a quote made (naming the post it counts for) or deleted (naming only its own
// record: Jetstream's delete carries no record). Frames are hostile until parsed: a frame that is
// not a Jetstream event is refused with the reason; an event of anything else (an account, an
// identity, a post that neither replies nor quotes, a like of a feed generator) counts for nothing.
// Counts follow the AppView's (its data plane's indexing plugins): likes and reposts by their
// subject, replies by their parent only (direct replies), quotes by the embedded post, from
// app.bsky.embed.record and app.bsky.embed.recordWithMedia alike.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tweetkeeper::worker::stream {

// The order of the counts everywhere (tweets' retweet_count, reply_count, like_count,
// quote_count; stream_records.kind is the index + 1).
enum Kind { kRepost = 0, kReply = 1, kLike = 2, kQuote = 3, kKinds = 4 };

// A post a record counts for: "<did>/<rkey>" of an at://<did>/app.bsky.feed.post/<rkey> URI.
using PostKey = std::string;

struct CountEvent {
  std::int64_t time_us = 0;
  bool create = false;  // else a delete
  // A create: for which post each kind counts ("" where it counts for none; a post may both reply
  // and quote). A delete: the kinds its collection can have counted (likes: like; posts: reply
  // and quote).
  std::array<PostKey, kKinds> subject{};
  std::array<bool, kKinds> may_undo{};
  // The record, per kind it counts as: a 64-bit hash of its author, collection and key (and kind),
  // the same for its create and its delete.
  std::array<std::uint64_t, kKinds> record{};
  // An account event (Parsed::kAccount): whose, whether active, and if not why (Jetstream's
  // status: deleted, takendown, suspended, deactivated, ...; at most 40 characters).
  std::string did;
  bool active = true;
  std::string status;
};

// The key of a record counted as `kind` (FNV-1a of "did collection rkey kind").
std::uint64_t RecordKey(std::string_view did, std::string_view collection, std::string_view rkey, Kind kind);

// The post an at:// URI names, "" when it names no post (another collection, a malformed URI).
PostKey PostOf(std::string_view at_uri);

enum class Parsed { kEvent, kNothing, kAccount, kRefused };
// One frame: kEvent (event filled), kNothing (a Jetstream event that counts for nothing; time_us
// still set, the position moves), kAccount (an account event: did, active, status; it counts for
// nothing either), or kRefused (reason says why; not a Jetstream event).
Parsed ParseCountEvent(std::string_view frame, CountEvent* event, std::string* reason);

}  // namespace tweetkeeper::worker::stream
