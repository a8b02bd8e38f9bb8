#include "mock_api/jetstream_posts.hpp"

namespace tweetkeeper::mock {

bool StreamedPosts::Register(const std::string& body, const MockConfig& config, size_t* count, std::string* error) {
  std::vector<std::string> uris;
  std::unordered_set<std::string> named;
  size_t line_number = 0;
  for (size_t at = 0; at < body.size();) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    std::string line = body.substr(at, end - at);
    at = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (!TrackablePost(line)) {
      *error = "line " + std::to_string(line_number) + " is not at://<DID>/app.bsky.feed.post/<TID>: " + line.substr(0, 200);
      return false;
    }
    if (named.insert(line).second) uris.push_back(std::move(line));
  }
  // The curves (the costly part) outside the lock.
  std::vector<std::shared_ptr<const StreamedPost>> made;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t fresh = 0;
    for (const std::string& u : uris) fresh += uris_.count(u) == 0;
    if (posts_.size() + fresh > max_) {
      *error = "at most " + std::to_string(max_) + " posts may be registered in all (" +
               std::to_string(posts_.size()) + " are, this adds " + std::to_string(fresh) + ")";
      return false;
    }
  }
  for (const std::string& u : uris) made.push_back(std::make_shared<const StreamedPost>(*TrackablePost(u), config));
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& p : made) {
    if (posts_.size() >= max_) break;  // (another request came between)
    if (uris_.insert(p->post.uri).second) posts_.push_back(std::move(p));
  }
  *count = uris.size();
  return true;
}

void StreamedPosts::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++epoch_;
  posts_.clear();
  uris_.clear();
}

uint64_t StreamedPosts::epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return epoch_;
}

size_t StreamedPosts::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return posts_.size();
}

std::vector<std::shared_ptr<const StreamedPost>> StreamedPosts::Slice(uint64_t epoch, size_t from, size_t n) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (epoch != epoch_ || from >= posts_.size()) return {};
  const size_t to = std::min(posts_.size(), from + n);
  return {posts_.begin() + static_cast<long>(from), posts_.begin() + static_cast<long>(to)};
}

StreamedPosts& JetstreamPosts() {
  static StreamedPosts posts;
  return posts;
}

}  // namespace tweetkeeper::mock
