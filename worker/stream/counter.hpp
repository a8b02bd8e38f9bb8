#pragma once
// Stream counts' state, without I/O (stream_reader.cpp feeds it events and reads and stores what
// it says): the counts of the posts the stream counts, the records counted for them (to subtract
// a delete, which names only its record), and a ring of the last ring_us of every event that
// counted for any post, tracked or not, by post. The ring lets a post join the stream from a read
// as of a moment the reader has already passed (its events since are replayed; its records made
// since the ring's start are known, so their deletes subtract), and lets a later read be compared
// with the stream's count at the read's own moment rather than now.
// Exactly once: a record is counted at most once (a create seen again, after a reconnection or a
// restart from the stored position, is known by its key and skipped), and a delete subtracts only
// a record counted.

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stream/count_event.hpp"

namespace tweetkeeper::worker::stream {

using Counts = std::array<std::int64_t, kKinds>;

// What a read did (store_stream_counts()'s read results).
enum class ReadResult { kAdopted, kAgain, kCompared, kSkipped, kNotYet };
const char* ResultName(ReadResult r);

// What a flush stores: store_stream_counts()'s arguments.
struct Flush {
  std::int64_t position_us = 0;
  std::int64_t reads_through_us = 0;  // reads as of up to this can be decided (reads_through_us())
  std::int64_t events = 0, counted = 0;
  std::vector<std::int64_t> ids, at_us;
  std::vector<std::int64_t> counts;  // four per id
  std::vector<std::int64_t> keys, key_ids;  // records kept (their keys as signed 64-bit)
  std::vector<int> kinds;                   // 1..4
  std::vector<std::int64_t> gone;
  std::vector<std::int64_t> read_ids, read_as_of_us;
  std::vector<ReadResult> read_results;
  std::vector<std::int64_t> differences;  // four per read (0s but for kCompared)
  // Account events, in the stream's order (store_stream_accounts()).
  std::vector<std::string> account_dids, account_statuses;
  std::vector<bool> account_actives;
  bool empty() const {
    return ids.empty() && keys.empty() && gone.empty() && read_ids.empty() && account_dids.empty();
  }
};

class Counter {
 public:
  explicit Counter(std::int64_t ring_us) : ring_us_(ring_us) {}

  // A fresh start from the database (the stored position, the counted posts and their records):
  // everything in memory, the ring too, is dropped. warm_from_us (0: none): the stream is read
  // again from there up to the position only to fill the ring (nothing counted twice), so that a
  // post first read just before a restart is adopted with the records made before it.
  void Reset(std::int64_t position_us, std::int64_t warm_from_us = 0);
  void AddPost(std::int64_t id, const PostKey& key, const Counts& counts);
  // A record counted for post `id` (named `key`: the post may not be counted now, after a gap).
  void AddRecord(std::uint64_t record, std::int64_t id, Kind kind, const PostKey& key);

  // One event, in the stream's order. Events of one time_us are applied together, once an event
  // of a later time comes (Jetstream's v1 clock is strictly increasing; a stream where two events
  // share a time_us must not have a flush cut between them: the position is a time_us whose
  // events are all counted).
  void Apply(const CountEvent& e);
  // An event that counts for nothing still moves the position.
  void Pass(std::int64_t time_us);
  // An account event (Parsed::kAccount): passed on with the next flush, and the position moves.
  void Account(const CountEvent& e);

  // A read of post `id` (its key) as of as_of_us with these counts; `counted`: the database
  // counts it with the stream already. The difference (read minus stream) when compared. The next
  // flush stores what it did; a read not yet decidable (past reads_through_us()) is not stored
  // and goes on waiting in the database.
  ReadResult Read(std::int64_t id, const PostKey& key, std::int64_t as_of_us, const Counts& counts, bool counted,
                  Counts* difference);

  // What to store since the last flush (then cleared); the position is every event's before it.
  Flush Take();
  // A flush the database did not take (its connection lost): into the next one.
  void Restore(const Flush& f);
  // Posts the database no longer counts (a flush's answer).
  void Forget(const std::vector<std::int64_t>& ids);

  // Every event up to this time_us is counted (a stream resumes after it).
  std::int64_t position_us() const { return std::max(last_us_, start_us_); }
  // Reads as of up to this time_us can be decided: every event before them is counted and in the
  // ring. Not while a warm replay has not yet passed the stored position (the counts are the
  // position's, the ring not yet whole up to it): then only reads before the ring's start, which
  // are decided without it (read again, or not compared).
  std::int64_t reads_through_us() const {
    return last_us_ >= start_us_ ? position_us() : std::min(start_us_, ring_start_us_ - 1);
  }
  std::size_t posts() const { return posts_.size(); }
  std::size_t records() const { return records_.size(); }
  std::int64_t undone() const { return undone_; }  // records counted and deleted since the start
  std::size_t ring_size() const { return ring_.size(); }
  std::int64_t ring_start_us() const { return ring_start_us_; }

 private:
  struct Post {
    PostKey key;
    Counts counts{};
    std::int64_t last_us = 0;
    bool dirty = false;
  };
  struct Record {
    std::int64_t id;
    Kind kind;
  };
  // An event in the ring: a record made (+1) or deleted (-1) for post `key`.
  struct Entry {
    std::int64_t time_us;
    std::uint64_t record;
    std::uint64_t next;  // the sequence number of the same post's next entry; 0: none
    PostKey key;
    Kind kind;
    int delta;
  };
  struct Span {
    std::uint64_t head, tail;
  };
  void Push(std::int64_t time_us, const PostKey& key, std::uint64_t record, Kind kind, int delta);
  void Expire();
  void Count(Post& post, std::int64_t id, Kind kind, std::uint64_t record, std::int64_t time_us);
  void Undo(const CountEvent& e);
  void Release();  // applies the held events
  void ApplyNow(const CountEvent& e);
  void PassNow(std::int64_t time_us);
  void Warm(const CountEvent& e);  // an event at or before the stored position: into the ring only
  ReadResult Decide(std::int64_t id, const PostKey& key, std::int64_t as_of_us, const Counts& counts, bool counted,
                    Counts* difference);

  const std::int64_t ring_us_;
  std::int64_t undone_ = 0;
  std::int64_t start_us_ = 0, last_us_ = 0, ring_start_us_ = 0;
  std::unordered_map<std::int64_t, Post> posts_;
  std::unordered_map<PostKey, std::int64_t> by_key_;
  std::unordered_map<std::int64_t, PostKey> record_posts_;  // the posts of records loaded, by id
  std::unordered_map<std::uint64_t, Record> records_;
  std::deque<Entry> ring_;
  std::uint64_t ring_base_ = 1;  // the sequence number of ring_.front()
  std::unordered_map<PostKey, Span> ring_posts_;
  std::unordered_map<std::uint64_t, std::uint64_t> ring_records_;  // record made -> its entry
  Flush pending_;
  std::vector<std::pair<CountEvent, bool>> held_;  // the last time_us's events (and whether each counts)
};

}  // namespace tweetkeeper::worker::stream
