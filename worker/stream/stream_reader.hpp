#pragma once
// tweetkeeper-worker --stream-counts: the one reader of Bluesky's stream counts
// (tweetkeeper.bluesky_stream_counts; docs/workers.md, "Stream counts"). It takes the stream's
// lease, reads every like, repost and post of the network from Jetstream (one connection, no
// DIDs), counts those of the posts the database counts with the stream (counter.hpp), takes in
// the getPosts reads waiting for it (adopting their posts or comparing them), and every
// --stream-flush stores counts, history, records, reads and its position in one transaction.
// Killed at any moment, it loses nothing: it starts again from the stored position, and a record
// seen twice counts once. A lost database drops what was not stored and starts again from there.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "stop/stop_signal.hpp"
#include "zstd/frame_decoder.hpp"

namespace tweetkeeper::worker::stream {

struct StreamOptions {
  std::string name;
  std::string dsn;
  std::string jetstream_url;                    // ws(s)://host[:port]
  std::shared_ptr<const zstd::Dictionary> jetstream_dictionary;  // --jetstream-dictionary: compressed
  std::chrono::milliseconds flush{2000};        // --stream-flush
  std::int64_t ring_us = 120'000'000;           // --stream-ring: events kept to place reads in time
  std::int64_t warm_us = 30'000'000;            // --stream-warm: read again before counting starts
  int lease_seconds = 30;
  std::string replay_window = "35 hours";       // Jetstream replays 36 h
  std::chrono::seconds exit_when_idle{0};       // tests: stop after this long without an event
};

class StreamReader {
 public:
  StreamReader(StreamOptions options, StopSignal& stop);
  // Waits for the database (as every service of the worker does).
  bool Connect(std::chrono::seconds startup_timeout);
  int Run();

 private:
  StreamOptions options_;
  StopSignal& stop_;
};

}  // namespace tweetkeeper::worker::stream
