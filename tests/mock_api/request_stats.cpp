#include "mock_api/request_stats.hpp"

#include "mock_api/problems.hpp"

namespace tweetkeeper::mock {

namespace {

template <typename Key>
void WriteCounts(JsonWriter& w, const char* name, const std::map<Key, uint64_t>& counts) {
  w.Key(name);
  w.StartObject();
  for (const auto& [key, count] : counts) {
    const std::string k = std::to_string(key);
    w.Key(k.c_str(), static_cast<rapidjson::SizeType>(k.size()));
    w.Uint64(count);
  }
  w.EndObject();
}

}  // namespace

void RequestStats::Record(int status, size_t n_ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_;
  ++status_counts_[status];
  if (status == 200) {
    ids_requested_ += n_ids;
    ++batch_sizes_[n_ids];
  }
}

std::string RequestStats::ToJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("requests");
  w.Uint64(requests_);
  w.Key("ids_requested");
  w.Uint64(ids_requested_);
  WriteCounts(w, "status_counts", status_counts_);
  WriteCounts(w, "batch_sizes", batch_sizes_);
  w.EndObject();
  return buf.GetString();
}

void RequestStats::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  requests_ = 0;
  ids_requested_ = 0;
  status_counts_.clear();
  batch_sizes_.clear();
}

}  // namespace tweetkeeper::mock
