#pragma once
// Removing the posts found gone at their source (deleted, private, suspended, account gone) from
// the WARC files tweetkeeper-worker --warc-dir wrote (tweetkeeper-warc purge, and the worker's
// --warc-purge-interval). No database here: the caller says which posts are gone (PurgeSet).
//
// A response record holds a page of posts (X: up to 100, and includes.tweets; Bluesky getPosts:
// 25; Mastodon: 20). A capture (the response, its request, the metadata records that refer to
// either) is dropped whole when every post in its response is gone; otherwise the response is
// written again without the gone posts: a `response` record with a new WARC-Record-ID, its body
// decoded (no transfer or content coding) and re-serialized, its digests recomputed, followed by a
// `metadata` record (WARC-Refers-To it) that says which record it stands for and which posts were
// removed and why; its request keeps its block and its id, its WARC-Concurrent-To names the new
// response. Every other record is copied as the gzip member it was, byte for byte (the fillers
// that kept headers within libarchive's 64 KiB blocks are placed anew).
//
// A file is replaced under its own name: NAME.purging written, fsynced, renamed over NAME (one
// atomic step: a crash leaves the old file or the new one, never neither, never both), then the
// directory fsynced. A file with nothing to purge is not touched, so a run after a crash finishes
// the job and a run after that changes nothing. What was removed and why goes into purge.log in
// the directory (JSON lines, fsynced): a line per post removed ("state":"pending", with the new
// file's SHA-256) before the rename, a line "replaced" after it. A run finishes the log of a
// run killed in between: "replaced" when the file is the new one, "abandoned" when it is not.
// Removals count when their run has a "replaced" line for that file.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tweetkeeper::worker::warc {

// A post to remove: its internal id (tweetkeeper.tweets.tweet_id) and why it is gone.
struct GonePost {
  std::int64_t post_id = 0;
  std::string reason;  // post_availability.reason: deleted, hidden, missing, ...
  std::string detail;  // the network's own word (resource-not-found, ...)
};

// The posts to remove, by the name each network gives a post in its answers.
class PurgeSet {
 public:
  void AddX(const std::string& id, GonePost post);  // X: the decimal id
  // Bluesky: author (the DID, or a handle) and record key, as at://AUTHOR/app.bsky.feed.post/KEY.
  void AddBluesky(const std::string& author, const std::string& rkey, GonePost post);
  void AddMastodon(const std::string& host, const std::string& status_id, GonePost post);  // the status on host
  // The post a key names ("x:ID", "at://...", "mastodon:HOST/ID"), or nullptr.
  const GonePost* Find(const std::string& key) const;
  std::size_t size() const { return posts_.size(); }

 private:
  std::unordered_map<std::string, GonePost> posts_;
};

// A post taken out of a response: its key (as PurgeSet names it) and why.
struct Removed {
  std::string key;
  GonePost post;
};

// What FilterBody made of a response's JSON body.
struct Filtered {
  std::size_t posts = 0;           // the posts the body holds (those it names at the top level)
  std::vector<Removed> removed;    // those in the set, taken out
  std::string body;                // the body without them (when some, not all, were removed)
  std::string error;               // why the body was not read (not JSON, too deep): then nothing removed
};

// The posts of an API answer (decoded body) and, when some are gone, the answer without them:
// X API v2 (data, an array or one post; includes.tweets), X v1.1 statuses/lookup with map=true
// (id: {ID: post or null}: a gone post's becomes null) or an array of tweets (id_str), Bluesky
// (getPosts' posts, a feed's feed[].post), Mastodon (a status or an array of them: id, on
// `host`, the server asked; a boost of a gone status goes with it). Parsed with bounds (64 levels
// deep at most, the caller's size).
Filtered FilterBody(std::string_view body, const std::string& host, const PurgeSet& set);

// The fields of a WARC record's header, in order, and where its block is.
struct RecordHead {
  std::vector<std::pair<std::string, std::string>> fields;
  std::size_t block_offset = 0;  // in the record
  std::size_t block_length = 0;
  std::size_t header_length = 0;  // through the blank line
  const std::string* Field(std::string_view name) const;  // the first such field (case-insensitive)
};

// The head of an uncompressed record, or nullopt with *error (WARC/1.0 or 1.1, a header of at most
// 64 KiB and 256 fields, a Content-Length that the record holds, followed by CRLF CRLF).
std::optional<RecordHead> ParseRecord(std::string_view record, std::string* error);

struct PurgeOptions {
  std::string dir;
  bool dry_run = false;      // say what would be removed, change nothing
  std::string run_id;        // in purge.log's lines
  // Tests only: the number of steps after which the process kills itself (SIGKILL), 0 never.
  int kill_after_step = 0;
};

struct PurgeStats {
  int files_seen = 0, files_rewritten = 0, files_failed = 0;
  std::uint64_t records_dropped = 0, responses_rewritten = 0, posts_removed = 0;
  std::uint64_t responses_unread = 0;  // a body not decoded or not JSON: no post named in it, kept
  std::vector<std::string> errors;  // one line each: the file and why it was left as it is
  std::string planned;              // dry_run: the purge.log lines a run would write
};

// Purges every closed file (*.warc.gz, never *.open) of options.dir, one at a time, under an
// exclusive lock of the directory (DIR/.purge.lock): throws std::runtime_error when another
// purge holds it or the directory cannot be read. A file that cannot be read or written is left
// as it is and named in errors. Leftover NAME.purging files (a killed purge's) are removed first.
PurgeStats PurgeDirectory(const PurgeOptions& options, const PurgeSet& set);

}  // namespace tweetkeeper::worker::warc
