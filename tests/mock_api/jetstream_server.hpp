#pragma once
// The mock's Jetstream (--jetstream-port): GET /subscribe upgraded to a websocket, speaking
// Jetstream's v1 JSON as bluesky-social/jetstream's /subscribe does (its README and
// pkg/server; the v2 rewrite keeps the format on that path): query parameters wantedCollections,
// wantedDids (at most 10,000), cursor (Unix microseconds; replay from it, at most 36 hours back,
// older ones clamped silently; absent or in the future: live) and requireHello (nothing is sent
// until an options_update message); options_update text messages replace the filter; bad
// parameters are an HTTP 400 before the upgrade, a bad options_update closes with 1008. The events
// are the posting accounts' (bluesky_endpoint.hpp JetstreamEvents), the engagement of the posts
// registered by POST /mock/jetstream/posts (likes, reposts, replies, quotes and their undos,
// engagement_events.hpp, whenever registered: a replay has them all) and --jetstream-rate events a
// second of traffic on posts nobody tracks. Each connection gets them in non-decreasing time_us
// (Jetstream v1's clock is strictly increasing; here two events may share a time_us, and are then
// adjacent), generated a second at a time and sent as their time comes; a replay goes as fast as
// the reader reads, a bounded piece per tick, so no connection's start stalls the others.
// POST /mock/jetstream/drop on the mock's HTTP port closes every connection without a close frame
// (a dropped stream).
// compress=true or the header Socket-Encoding: zstd: each event a binary frame, one zstd frame
// with the mock's dictionary (jetstream_zstd.hpp), as Jetstream compresses with its own.
// Boost.Beast: cpp-httplib, the mock's HTTP server, has no websockets.

#include <cstdint>
#include <memory>
#include <string>

#include "mock_api/mock_config.hpp"

namespace tweetkeeper::mock {

class JetstreamServer {
 public:
  // Binds address:port (0: any free one); throws std::runtime_error when it cannot.
  JetstreamServer(const MockConfig& config, const std::string& address, int port);
  ~JetstreamServer();
  int port() const;
  // Serves until Stop() (call from another thread).
  void Run();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tweetkeeper::mock
