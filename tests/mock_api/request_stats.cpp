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

void RequestStats::Record(int status, size_t n_ids, FaultKind fault, bool reused_connection) {
  Record(status, n_ids, fault, reused_connection, "", "", -1);
}

void RequestStats::Record(int status, size_t n_ids, FaultKind fault, bool reused_connection,
                          const std::string& token_fp, const std::string& endpoint, int64_t window_start_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!token_fp.empty()) {
    ++token_status_counts_[token_fp][status];
    if (window_start_ms >= 0) token_windows_[token_fp][{window_start_ms, endpoint}] += status == 200 ? 1 : 0;
  }
  ++requests_;
  ++status_counts_[status];
  if (fault != FaultKind::kNone) ++faults_[fault];
  if (fault == FaultKind::kDrop && reused_connection) ++drops_on_reused_connections_;
  if (status == 200 && !CorruptsBody(fault)) {
    ids_requested_ += n_ids;
    ++batch_sizes_[n_ids];
  }
}

void RequestStats::Bill(const std::string& token_fp, int64_t posts) {
  std::lock_guard<std::mutex> lock(mutex_);
  token_billed_[token_fp] += static_cast<uint64_t>(posts);
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
  w.Key("faults");
  w.StartObject();
  for (FaultKind kind : AllFaultKinds()) {  // every kind, zeros too: the shape never changes
    w.Key(FaultKindName(kind));
    auto it = faults_.find(kind);
    w.Uint64(it == faults_.end() ? 0 : it->second);
  }
  w.EndObject();
  w.Key("drops_on_reused_connections");
  w.Uint64(drops_on_reused_connections_);
  w.Key("tokens");
  w.StartObject();
  for (const auto& [fp, counts] : token_status_counts_) WriteCounts(w, fp.c_str(), counts);
  w.EndObject();
  w.Key("windows");
  w.StartObject();
  for (const auto& [fp, windows] : token_windows_) {
    w.Key(fp.c_str(), static_cast<rapidjson::SizeType>(fp.size()));
    w.StartArray();
    for (const auto& [window, ok] : windows) w.Uint64(ok);
    w.EndArray();
  }
  w.EndObject();
  uint64_t billed_reads = 0;
  for (const auto& [fp, posts] : token_billed_) billed_reads += posts;
  w.Key("billed_reads");
  w.Uint64(billed_reads);
  w.Key("billed");
  w.StartObject();
  for (const auto& [fp, posts] : token_billed_) {
    w.Key(fp.c_str(), static_cast<rapidjson::SizeType>(fp.size()));
    w.Uint64(posts);
  }
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

void RequestStats::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  requests_ = 0;
  ids_requested_ = 0;
  status_counts_.clear();
  batch_sizes_.clear();
  faults_.clear();
  drops_on_reused_connections_ = 0;
  token_status_counts_.clear();
  token_windows_.clear();
  token_billed_.clear();
}

}  // namespace tweetkeeper::mock
