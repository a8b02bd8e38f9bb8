#pragma once
// One purge of a WARC directory, from the database's gone posts (gone_posts.hpp) to the files
// (warc_purge.hpp): what tweetkeeper-warc purge runs, and the worker every --warc-purge-interval.

#include <string>
#include <vector>

namespace tweetkeeper::worker::warc {

struct PurgeRequest {
  std::string dir;
  std::vector<std::string> dsns;  // every node's (a worker of several partitions): their gone posts together
  bool dry_run = false;
  bool force = false;             // even when tweetkeeper.deleted_payloads = keep
  int kill_after_step = 0;        // tests only (PurgeOptions)
};

struct PurgeOutcome {
  int exit_code = 0;               // 0 done or nothing to do, 1 a database error or files left as they were
  std::vector<std::string> lines;  // what to say (one line each; never a password)
  std::string planned;             // dry_run: the purge.log lines a run would write
};

PurgeOutcome RunPurge(const PurgeRequest& request);

}  // namespace tweetkeeper::worker::warc
