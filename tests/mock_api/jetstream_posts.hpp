#pragma once
// The posts whose engagement the mock's Jetstream streams (issue 52): POST /mock/jetstream/posts
// registers them (at:// URIs, one a line; at most kMaxStreamedPosts in all), POST /mock/reset
// forgets them. Each keeps what its events need: its record's CID and its count curve
// (engagement_events.hpp). One registry per process, shared by the HTTP side and the Jetstream.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/engagement_events.hpp"

namespace tweetkeeper::mock {

constexpr size_t kMaxStreamedPosts = 1'000'000;

struct StreamedPost {
  StreamedPost(TrackedPost p, const MockConfig& config) : post(std::move(p)), curve(config, post.seed, post.created_ms) {}
  TrackedPost post;
  EngagementCurve curve;
};

class StreamedPosts {
 public:
  explicit StreamedPosts(size_t max = kMaxStreamedPosts) : max_(max) {}
  // Registers the body's URIs (blank lines and a trailing \r ignored; a URI given again is kept
  // once). Either all are registered, and *count says how many distinct ones the body named, or
  // none and the error says why (a malformed URI, by its line; past the cap).
  bool Register(const std::string& body, const MockConfig& config, size_t* count, std::string* error);
  void Clear();
  // Changes at each Clear(): a reader that saw another epoch starts over.
  uint64_t epoch() const;
  size_t size() const;
  // The posts [from, from + n) of this epoch (fewer at its end; none when the epoch moved on).
  std::vector<std::shared_ptr<const StreamedPost>> Slice(uint64_t epoch, size_t from, size_t n) const;

 private:
  const size_t max_;
  mutable std::mutex mutex_;
  uint64_t epoch_ = 0;
  std::vector<std::shared_ptr<const StreamedPost>> posts_;
  std::unordered_set<std::string> uris_;
};

StreamedPosts& JetstreamPosts();

}  // namespace tweetkeeper::mock
