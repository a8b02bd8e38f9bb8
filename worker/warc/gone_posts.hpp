#pragma once
// The posts tweetkeeper.post_availability says are gone (deleted, private, suspended, account
// gone, missing), by the names their networks give them, for a WARC purge (warc_purge.hpp). A
// reader's role is enough.

#include <cstddef>
#include <string>

#include <pqxx/pqxx>

#include "warc/warc_purge.hpp"

namespace tweetkeeper::worker::warc {

struct GoneLoad {
  bool keep = false;       // tweetkeeper.deleted_payloads is 'keep': nothing loaded (unless forced)
  std::size_t posts = 0;   // gone posts added to the set
};

// Adds the gone posts to *set; with deleted_payloads = 'keep' (an archive that must keep
// everything) adds none unless `force`. Throws pqxx's errors.
GoneLoad LoadGonePosts(pqxx::connection& conn, bool force, PurgeSet* set);

}  // namespace tweetkeeper::worker::warc
