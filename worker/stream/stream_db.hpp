#pragma once
// Stream counts' side of the database (sql/replaceable/38_stream.sql): the stream's lease, the
// posts and records it counts, the reads waiting, and the flush, over one libpqxx connection,
// each call its own transaction. The lease is this connection's session's: a lost connection
// loses it (the reader takes the stream again and starts from the stored position).

#include <cstdint>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <string>
#include <vector>

#include "stream/counter.hpp"

namespace tweetkeeper::worker::stream {

struct Taken {
  std::int64_t position_us = 0;  // 0: live
  bool gap = false;
};

struct WaitingRead {
  std::int64_t id = 0;
  PostKey key;
  std::int64_t as_of_us = 0;
  Counts counts{};
  bool counted = false;
};

class StreamDb {
 public:
  StreamDb(std::string dsn, std::string reader);
  // Connects and checks the role may read the stream (throws as FollowDb::Connect does).
  void Connect();
  bool connected() const;
  // stream_take(): nothing while another reader holds the stream.
  std::optional<Taken> Take(int lease_seconds, const std::string& replay_window);
  // The counted posts and their records, into the counter.
  void Load(Counter& counter);
  std::vector<WaitingRead> ReadsDue(std::int64_t upto_us, int max_reads);
  // store_stream_counts(): the ids of posts no longer counted.
  std::vector<std::int64_t> Store(const Flush& flush);

 private:
  std::string dsn_, reader_;
  std::unique_ptr<pqxx::connection> connection_;
};

}  // namespace tweetkeeper::worker::stream
