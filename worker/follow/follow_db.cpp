#include "follow/follow_db.hpp"

#include <pqxx/pqxx>

#include "queue/payload.hpp"
#include "service/database_state.hpp"

namespace tweetkeeper::worker::follow {
namespace {

// timestamptz as Unix milliseconds, in the statement itself (no parsing of text timestamps).
std::string Ms(const char* column) {
  return std::string("coalesce((extract(epoch FROM ") + column + ") * 1000)::bigint, 0)";
}

std::string TimeArray(const std::vector<FoundPost>& posts) {
  std::string out = "{";
  for (std::size_t i = 0; i < posts.size(); ++i) out += (i ? "," : "") + std::to_string(posts[i].created_ms);
  return out + "}";
}

}  // namespace

FollowDb::FollowDb(std::string dsn, std::string follower, std::string network, std::string credential)
    : dsn_(std::move(dsn)),
      follower_(std::move(follower)),
      network_(std::move(network)),
      credential_(std::move(credential)) {}

FollowDb::~FollowDb() = default;

bool FollowDb::connected() const { return connection_ && connection_->is_open(); }

void FollowDb::Connect() {
  connection_.reset();
  connection_ = ConnectServing(dsn_,
                               {"tweetkeeper.claim_follows(text,text,integer,interval,boolean,text)",
                                "tweetkeeper.store_follow_posts(bigint,text[],timestamptz[],text,timestamptz,timestamptz)"},
                               "follow accounts");
}

std::vector<Followed> FollowDb::Claim(int max_accounts, int lease_seconds) {
  pqxx::work tx(*connection_);
  const pqxx::result r = tx.exec_params(
      "SELECT follow_id, coalesce(host, ''), coalesce(handle, ''), coalesce(account_id, ''), status, " + Ms("since") +
          ", " + Ms("checked_at") + ", coalesce(newest_post_id, ''), posts_found, " + Ms("poll_after") +
          " FROM tweetkeeper.claim_follows($1, $2, $3, make_interval(secs => $4), false, nullif($5, ''))",
      follower_, network_, max_accounts, lease_seconds, credential_);
  tx.commit();
  std::vector<Followed> out;
  out.reserve(r.size());
  for (const pqxx::row& row : r) {
    Followed f;
    f.follow_id = row[0].as<std::int64_t>();
    f.host = row[1].as<std::string>();
    f.handle = row[2].as<std::string>();
    f.account_id = row[3].as<std::string>();
    f.status = row[4].as<std::string>();
    f.since_ms = row[5].as<std::int64_t>();
    f.checked_ms = row[6].as<std::int64_t>();
    f.newest_post_id = row[7].as<std::string>();
    f.posts_found = row[8].as<std::int64_t>();
    f.poll_after_ms = row[9].as<std::int64_t>();
    out.push_back(std::move(f));
  }
  return out;
}

std::map<std::string, std::int64_t> FollowDb::Shares() {
  pqxx::work tx(*connection_);
  const pqxx::result r =
      tx.exec_params("SELECT host, accounts FROM tweetkeeper.follow_shares($1, nullif($2, ''))", network_, credential_);
  tx.commit();
  std::map<std::string, std::int64_t> out;
  for (const pqxx::row& row : r) out[row[0].as<std::string>()] = row[1].as<std::int64_t>();
  return out;
}

bool FollowDb::Resolve(std::int64_t follow_id, const Account& a) {
  const char* status = a.status == Account::Status::kFound     ? "following"
                       : a.status == Account::Status::kPrivate ? "private"
                                                               : "missing";
  pqxx::work tx(*connection_);
  const pqxx::row r = tx.exec_params1(
      "SELECT tweetkeeper.resolve_follow($1, nullif($2, ''), nullif($3, ''), $4, nullif($5, ''))", follow_id,
      a.account_id, a.handle, status, a.reason);
  tx.commit();
  return r[0].as<bool>();
}

std::int64_t FollowDb::Store(std::int64_t follow_id, const std::vector<FoundPost>& posts,
                             const std::string& newest_post_id, std::int64_t checked_until_ms,
                             std::int64_t poll_after_ms, const Billing* billed) {
  std::vector<std::string> urls;
  urls.reserve(posts.size());
  for (const FoundPost& p : posts) urls.push_back(p.url);
  pqxx::work tx(*connection_);
  const pqxx::row r = tx.exec_params1(
      "SELECT tweetkeeper.store_follow_posts($1, $2::text[],"
      " (SELECT coalesce(array_agg(to_timestamp(ms / 1000.0) ORDER BY i), '{}') FROM unnest($3::bigint[]) WITH ORDINALITY AS u(ms, i)),"
      " nullif($4, ''), to_timestamp($5 / 1000.0), to_timestamp($6 / 1000.0))",
      follow_id, TextArrayLiteral(urls), TimeArray(posts), newest_post_id, checked_until_ms, poll_after_ms);
  // (One call per page: the database takes at most a page's 100 posts a call (54000 beyond), and
  // counts each call a request. All pages in one call was refused, the store rolled back with it,
  // and the follower read the account again and again.)
  if (billed) {
    for (const std::vector<std::string>& page : billed->pages)
      tx.exec_params("SELECT tweetkeeper.record_follow_read($1, $2, $3::bigint[])", follow_id, billed->credential,
                     TextArrayLiteral(page));
  }
  tx.commit();
  return r[0].as<std::int64_t>();
}

void FollowDb::RecordRefusal(std::int64_t follow_id, const std::string& credential, const std::string& refusal,
                             const std::string& detail) {
  pqxx::work tx(*connection_);
  tx.exec_params("SELECT tweetkeeper.record_follow_read($1, $2, '{}', $3, $4)", follow_id, credential, refusal, detail);
  tx.commit();
}

bool FollowDb::ReadAllowed(const std::string& credential, std::int64_t* until_ms, std::string* reason) {
  pqxx::work tx(*connection_);
  const pqxx::row r = tx.exec_params1(
      "SELECT allowed, " + Ms("until") + ", coalesce(reason, '') FROM tweetkeeper.follow_read_allowed($1)", credential);
  tx.commit();
  *until_ms = r[1].as<std::int64_t>();
  *reason = r[2].as<std::string>();
  return r[0].as<bool>();
}

std::int64_t FollowDb::MarkRead(const std::vector<std::int64_t>& follow_ids, std::int64_t checked_until_ms) {
  pqxx::work tx(*connection_);
  const pqxx::row r = tx.exec_params1("SELECT tweetkeeper.mark_follows_read($1::bigint[], to_timestamp($2 / 1000.0))",
                                      ArrayLiteral(follow_ids), checked_until_ms);
  tx.commit();
  return r[0].as<std::int64_t>();
}

std::int64_t FollowDb::AccountStatus(std::int64_t follow_id, bool active, const std::string& status) {
  pqxx::work tx(*connection_);
  const pqxx::row r =
      tx.exec_params1("SELECT tweetkeeper.store_account_status($1, $2, nullif($3, ''))", follow_id, active, status);
  tx.commit();
  return r[0].as<std::int64_t>();
}

std::int64_t FollowDb::DeletePosts(std::int64_t follow_id, const std::vector<std::string>& urls) {
  pqxx::work tx(*connection_);
  const pqxx::row r =
      tx.exec_params1("SELECT tweetkeeper.delete_followed_posts($1, $2::text[])", follow_id, TextArrayLiteral(urls));
  tx.commit();
  return r[0].as<std::int64_t>();
}

void FollowDb::Release() {
  if (!connected()) return;
  pqxx::work tx(*connection_);
  tx.exec("SELECT tweetkeeper.release_follows()");
  tx.commit();
}

}  // namespace tweetkeeper::worker::follow
