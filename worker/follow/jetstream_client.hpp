#pragma once
// A Jetstream subscriber (bluesky-social/jetstream's /subscribe, its v1 JSON over a websocket,
// ws:// or wss://) in a thread of its own: it connects with requireHello and sends the DIDs to
// follow as an options_update (10,000 at most per connection; an update replaces the filter, so
// a change of the DIDs is one message, not a reconnection), reads text frames into a bounded
// queue, pings when the stream is idle (a silent peer is dropped after 40 s), and reconnects after
// any failure with backoff, from the cursor the caller says then (the stream's own time_us, in
// microseconds). The frames are hostile until parsed (bluesky_follow.hpp ParseJetstreamEvent).
// Given Jetstream's zstd dictionary it asks for compress=true and decodes each binary frame (one
// zstd frame) into the same text, bounded (zstd/frame_decoder.hpp); a frame that does not decode
// drops the connection, which is made again from the caller's cursor.
// Boost.Beast (Debian libboost-dev, header-only): libcurl 7.88's websockets are experimental and
// off in Debian's build.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "zstd/frame_decoder.hpp"

namespace tweetkeeper::worker::follow {

class JetstreamClient {
 public:
  // base: ws(s)://host[:port] (the /subscribe path is added). cursor_us: called at each
  // connection for where to start (0: live). dictionary: Jetstream's zstd dictionary, to read
  // its compressed stream (nullptr: uncompressed). max_queued_bytes: kMaxQueuedBytes but in tests.
  JetstreamClient(std::string base, std::function<std::int64_t()> cursor_us,
                  std::shared_ptr<const zstd::Dictionary> dictionary = nullptr,
                  std::size_t max_queued_bytes = kMaxQueuedBytes);
  ~JetstreamClient();
  JetstreamClient(const JetstreamClient&) = delete;
  JetstreamClient& operator=(const JetstreamClient&) = delete;

  // The DIDs to follow (none: no connection; a Jetstream without wantedDids is the firehose).
  void SetDids(std::vector<std::string> dids);
  // Or these collections of the whole network, no DIDs (stream counts: every like, repost and
  // post, whoever made it); set once, before the first connection.
  void SetNetwork(std::vector<std::string> collections);
  // Frames received, oldest first: at most max, waiting up to `wait` for the first.
  std::vector<std::string> Take(std::chrono::milliseconds wait, std::size_t max);
  // Connections made so far (each reconnection one more), and the last failure, one line.
  std::uint64_t connections() const { return connections_.load(); }
  std::string last_error() const;
  void Stop();
  // Drops the connection and every frame of it not taken yet, and connects again from the
  // caller's cursor (after the caller failed to handle frames it took).
  void Reconnect();

  // At most this many frames, and this many bytes of them, wait in the queue: a frame past either
  // is not queued, the connection is dropped and made again from the caller's cursor (memory
  // stays bounded; nothing is lost). The frames alone bounded nothing: 200,000 of up to 16 MiB
  // each. Posts of around a kilobyte meet the frame bound first; the bytes' holds against big ones.
  static constexpr std::size_t kMaxQueued = 200'000;
  static constexpr std::size_t kMaxQueuedBytes = 256u << 20;
  // A frame is at most 16 MiB on the wire (Jetstream's events are bounded by 10 MB), and so is
  // the text a compressed one decodes to.
  static constexpr std::size_t kMaxFrameBytes = 16u << 20;

 private:
  void Loop();
  bool Connection(const std::vector<std::string>& dids, std::uint64_t generation);
  // The DIDs to follow now, and their generation (one more at each SetDids).
  std::uint64_t DidsNow(std::vector<std::string>* dids) const;
  // A frame received, queued for Take(); false (not queued) when the queue is full.
  bool Enqueue(std::string frame);

  std::string base_;
  std::function<std::int64_t()> cursor_us_;
  const std::shared_ptr<const zstd::Dictionary> dictionary_;
  const std::size_t max_queued_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable frames_ready_;
  std::deque<std::pair<std::uint64_t, std::string>> frames_;  // (connection, frame)
  std::size_t queued_bytes_ = 0;                               // of the frames in frames_
  std::uint64_t discard_below_ = 0;  // frames of connections before this one are dropped
  std::atomic<bool> reconnect_{false};
  std::vector<std::string> dids_;
  std::uint64_t dids_generation_ = 0;
  std::vector<std::string> collections_;  // SetNetwork()
  std::string last_error_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> connections_{0};
  std::thread thread_;
};

// The options_update message that sets a subscription's filter to the posts of these DIDs.
std::string JetstreamOptionsUpdate(const std::vector<std::string>& dids);

}  // namespace tweetkeeper::worker::follow
