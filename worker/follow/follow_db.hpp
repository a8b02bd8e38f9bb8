#pragma once
// The follower's side of the database: claim_follows(), resolve_follow(), store_follow_posts(),
// release_follows() over one libpqxx connection, each call its own transaction. The leases live in
// the database, tied to this connection's session: a lost connection loses them (the caller claims
// again), and a killed follower's accounts are free once their leases run out.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/connection>
#include <string>
#include <vector>

#include "follow/timeline.hpp"

namespace tweetkeeper::worker::follow {

// A followed account as claim_follows() gives it.
struct Followed {
  std::int64_t follow_id = 0;
  std::string host;  // Mastodon's server; empty elsewhere
  std::string handle;
  std::string account_id;
  std::string status;  // resolving, following, missing, private
  std::int64_t since_ms = 0;
  std::int64_t checked_ms = 0;  // 0: never read
  std::string newest_post_id;
  std::int64_t posts_found = 0;
  std::int64_t poll_after_ms = 0;
};

class FollowDb {
 public:
  // credential: X's, the one whose token the follower reads with (its leases name it, and
  // record_follow_read() takes no other); "" elsewhere.
  FollowDb(std::string dsn, std::string follower, std::string network, std::string credential = "");
  ~FollowDb();
  FollowDb(const FollowDb&) = delete;
  FollowDb& operator=(const FollowDb&) = delete;

  // Connects and checks that this role may follow (the extension has claim_follows() and the
  // grants); throws pqxx::broken_connection when unreachable or in recovery (DatabaseInRecovery),
  // DatabaseUnusable when waiting cannot help (service/database_state.hpp).
  void Connect();
  bool connected() const;

  // Up to max_accounts accounts of the network, this session's own renewed, free ones added.
  std::vector<Followed> Claim(int max_accounts, int lease_seconds);
  // How many accounts all followers of the network hold now (read with this credential), per
  // Mastodon server ("" elsewhere): follow_shares().
  std::map<std::string, std::int64_t> Shares();
  // Returns false when the account was merged into another row of the same account.
  bool Resolve(std::int64_t follow_id, const Account& account);
  // What was found of one account; returns how many posts were new. checked_until_ms: every post
  // made before it was seen; poll_after_ms: when to read it next.
  // X: billed names the credential whose token read the timeline and the ids each of its pages
  // returned (record_follow_read() once per page, each a request, in the same transaction).
  struct Billing {
    std::string credential;
    std::vector<std::vector<std::string>> pages;
  };
  std::int64_t Store(std::int64_t follow_id, const std::vector<FoundPost>& posts, const std::string& newest_post_id,
                     std::int64_t checked_until_ms, std::int64_t poll_after_ms, const Billing* billed = nullptr);
  // X: a refusal that concerns the credential (usage-capped, rejected) recorded as a refresh's is.
  void RecordRefusal(std::int64_t follow_id, const std::string& credential, const std::string& refusal,
                     const std::string& detail);
  // X: whether the credential may read a page now (follow_read_allowed()); when not, until when
  // (Unix ms, 0 unknown) and why.
  bool ReadAllowed(const std::string& credential, std::int64_t* until_ms, std::string* reason);
  // A stream's follower: every event up to checked_until_ms handled for these accounts
  // (mark_follows_read()); returns how many moved.
  std::int64_t MarkRead(const std::vector<std::int64_t>& follow_ids, std::int64_t checked_until_ms);
  // Posts of the account its stream says were deleted (delete_followed_posts()); how many marked.
  std::int64_t DeletePosts(std::int64_t follow_id, const std::vector<std::string>& urls);
  // The stream's account event for a followed Bluesky account: not active (status: deleted,
  // takendown, suspended, deactivated) marks its tracked posts gone, active brings them back
  // (store_account_status()). Returns how many posts changed.
  std::int64_t AccountStatus(std::int64_t follow_id, bool active, const std::string& status);
  // This session's leases end now (a stop).
  void Release();

 private:
  std::string dsn_, follower_, network_, credential_;
  std::unique_ptr<pqxx::connection> connection_;
};

}  // namespace tweetkeeper::worker::follow
