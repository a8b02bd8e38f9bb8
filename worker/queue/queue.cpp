#include "queue/queue.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <pqxx/pqxx>

#include "service/database_state.hpp"
#include "dsn/dsn.hpp"
#include "queue/payload.hpp"

namespace tweetkeeper::worker {
namespace {

constexpr const char* kClaim = "tk_claim";
constexpr const char* kComplete = "tk_complete";
constexpr const char* kRelease = "tk_release";
constexpr const char* kCompleteHandles = "tk_complete_handles";

// Cuts at a character boundary: PostgreSQL refuses text with a torn UTF-8 sequence.
std::string Utf8Prefix(const std::string& s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut);
}

// The x-rate-limit-* headers as complete_batch/release_batch take them.
std::string RateJson(const RateLimit& rl) {
  if (!rl.limit && !rl.remaining && !rl.reset_epoch_s) return "null";
  auto field = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("null"); };
  return fmt::format(R"({{"limit":{},"remaining":{},"reset":{}}})", field(rl.limit), field(rl.remaining),
                     field(rl.reset_epoch_s));
}

// What the credential's refusal was, in release_batch's words (which are FailureKindName's for
// the three kinds that say something about the credential), or "" for any other failure.
std::string Refusal(FailureKind kind) {
  const bool refusal =
      kind == FailureKind::kRateLimited || kind == FailureKind::kUsageCapped || kind == FailureKind::kRejected;
  return refusal ? FailureKindName(kind) : "";
}

}  // namespace

QuotaReport QuotaReportOf(const BatchResult& answer) {
  return {RateJson(answer.rate_limit), Refusal(answer.failure)};
}

Queue::Queue(std::string dsn, std::string worker_name, std::string label, std::string provider,
             std::vector<std::string> credentials)
    : dsn_(std::move(dsn)),
      worker_name_(std::move(worker_name)),
      label_(std::move(label)),
      provider_(std::move(provider)),
      keyed_(provider_ == "bluesky" || provider_ == "mastodon"),
      credentials_array_(TextArrayLiteral(credentials)) {}

Queue::~Queue() = default;

// What a worker needs of the database beyond a connection: it takes writes, the extension is
// there, and this role may run the worker's functions (tweetkeeper_worker). The first can change
// by waiting; the others cannot, and get a message that says what to do.
Queue::Usable Queue::CheckUsable(pqxx::transaction_base& tx, bool keyed) {
  // claim_posts() came with 0.3.0: a Bluesky or Mastodon worker on an older extension is told so.
  const pqxx::result r = tx.exec(
      "SELECT pg_is_in_recovery(), current_user::text, current_database()::text, e.extversion,"
      "       CASE WHEN e.extversion IS NOT NULL THEN"
      "         has_schema_privilege(e.extnamespace, 'USAGE')"
      "         AND has_function_privilege('tweetkeeper.claim_batch(text,integer,text,text[])', 'EXECUTE')"
      "         AND has_function_privilege('tweetkeeper.complete_batch(bigint,jsonb,jsonb,jsonb)', 'EXECUTE')"
      "         AND has_function_privilege('tweetkeeper.release_batch(bigint,text,text,jsonb)', 'EXECUTE') END," +
      // Looked up only where the schema may be read (to_regprocedure raises otherwise).
      std::string(keyed ? "       CASE WHEN e.extversion IS NOT NULL AND has_schema_privilege(e.extnamespace, 'USAGE') THEN"
                          "         to_regprocedure('tweetkeeper.claim_posts(text,integer,text,text[])') IS NOT NULL END,"
                        : "       true,") +
      // The claim's payload_hashes came with 0.3.0 too: an X worker on an older extension claims without.
      "       CASE WHEN e.extversion IS NOT NULL AND has_schema_privilege(e.extnamespace, 'USAGE') THEN"
      // (By name in pg_proc, not with to_regprocedure(): in a subquery the planner calls that while
      // it estimates, before any CASE, and for a role without USAGE on the schema it raises.)
      "         EXISTS (SELECT FROM pg_proc p WHERE p.pronamespace = e.extnamespace AND p.proname = 'claim_batch'"
      "                                         AND 'payload_hashes' = ANY (p.proargnames))"
      "       END,"
      // claim_wait() came with 0.4.0: an older extension's empty claim says no moment.
      "       CASE WHEN e.extversion IS NOT NULL AND has_schema_privilege(e.extnamespace, 'USAGE') THEN"
      "         EXISTS (SELECT FROM pg_proc p WHERE p.pronamespace = e.extnamespace AND p.proname = 'claim_wait')"
      "       END"
      "  FROM (SELECT) AS one LEFT JOIN pg_extension e ON e.extname = 'tweetkeeper'");
  const auto row = r[0];
  if (row[0].as<bool>()) throw DatabaseInRecovery();
  const std::string role = row[1].as<std::string>(), database = row[2].as<std::string>();
  if (row[3].is_null()) {
    throw DatabaseUnusable("database \"" + database +
                           "\" does not have the tweetkeeper extension: CREATE EXTENSION tweetkeeper there, or "
                           "point --dsn at the database that has it");
  }
  if (!row[4].as<bool>()) {
    throw DatabaseUnusable("role \"" + role + "\" may not run the worker's functions in database \"" + database +
                           "\": GRANT tweetkeeper_worker TO \"" + role + "\"");
  }
  if (keyed && !row[5].as<bool>(false)) {
    throw DatabaseUnusable("the tweetkeeper extension in database \"" + database + "\" is version " +
                           row[3].as<std::string>() +
                           ", which tracks X only: ALTER EXTENSION tweetkeeper UPDATE (0.3.0 or later) for Bluesky");
  }
  return Usable{row[6].as<bool>(false), row[7].as<bool>(false)};
}

void Queue::Connect() {
  connection_.reset();
  auto connection = std::make_unique<pqxx::connection>(dsn_);
  Usable usable;
  {
    // Lets operators tell our sessions apart in pg_stat_activity. And pins the session's
    // search_path: the worker's own SQL (the claim's `extract(...) * 1000`, the check below)
    // must not resolve an operator or function through a schema someone else can write to, such
    // as public on a database whose owner is not the worker's (tests/integration/hostile_schema.sh).
    pqxx::nontransaction tx(*connection);
    tx.exec_params("SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false),"
                   "       pg_catalog.set_config('application_name', $1, false)",
                   Utf8Prefix("tweetkeeper-worker " + worker_name_, 63));
    usable = CheckUsable(tx, keyed_);
  }
  // Each claim also says tweetkeeper.payloads as this session sees it (ALTER DATABASE ... SET
  // reaches new sessions) and, when it is on, the content hash of each claimed post's last kept
  // payload ("id hash id hash ...", from the claim's payload_hashes, which its locking read took
  // from the posts' rows): one statement and one round trip, as with payloads off.
  const std::string settings =
      "coalesce(current_setting('tweetkeeper.payloads', true), 'none'), " +
      // (The v1.1 provider keeps no payloads: its claims need no hashes.)
      std::string(usable.claims_hashes && provider_ != "x-v1.1"
                      ? "CASE WHEN c.payload_hashes IS NOT NULL AND current_setting('tweetkeeper.payloads', true) <> 'none' "
                        "THEN (SELECT string_agg(h.id || ' ' || h.hash, ' ') "
                        "FROM unnest(c.tweet_ids, c.payload_hashes) AS h(id, hash) WHERE h.hash IS NOT NULL) END "
                      : "NULL::text ");
  // The claim: its row (a batch, or a quota wait); with claim_wait() (0.4.0), when it claimed
  // nothing, a row saying until when nothing can be claimed ("idle:"), in the same statement.
  const std::string call = keyed_ ? "tweetkeeper.claim_posts($1::text, $2::int, $3::text, $4::text[])"
                                  : "tweetkeeper.claim_batch($1::text, $2::int, $3::text, $4::text[])";
  const std::string columns =
      keyed_ ? "c.lease_id, c.tweet_ids, NULL::text, (extract(epoch FROM c.wait_until) * 1000)::bigint, "
               "c.wait_reason, array_to_json(c.post_keys)::text, c.endpoint, " + settings
             : "c.lease_id, c.tweet_ids, c.credential, (extract(epoch FROM c.wait_until) * 1000)::bigint, "
               "c.wait_reason, NULL::text, NULL::text, " + settings;
  if (usable.claim_wait) {
    connection->prepare(kClaim, "WITH c AS MATERIALIZED (SELECT * FROM " + call + ") SELECT " + columns +
                                    "FROM c UNION ALL "
                                    "SELECT NULL::bigint, NULL::bigint[], NULL::text, "
                                    "(extract(epoch FROM w.at) * 1000)::bigint, 'idle: nothing claimable before then', "
                                    "NULL::text, NULL::text, 'none', NULL::text "
                                    // (a one-time filter: claim_wait() runs only when the claim gave no row)
                                    "FROM (SELECT tweetkeeper.claim_wait($3::text) AS at WHERE NOT EXISTS (SELECT FROM c)) AS w "
                                    "WHERE w.at IS NOT NULL");
  } else {
    connection->prepare(kClaim, "SELECT " + columns + "FROM " + call + " c");
  }
  connection->prepare(kComplete, "SELECT tweetkeeper.complete_batch($1::bigint, $2::jsonb, $3::jsonb, $4::jsonb)");
  connection->prepare(kRelease, "SELECT tweetkeeper.release_batch($1::bigint, $2::text, $3::text, $4::jsonb)");
  // Prepare now, not on first use: a missing extension fails at startup, not in the loop.
  connection->prepare_now(kClaim);
  connection->prepare_now(kComplete);
  connection->prepare_now(kRelease);
  if (keyed_) {
    connection->prepare(kCompleteHandles, "SELECT tweetkeeper.complete_handles($1::bigint, $2::jsonb)");
    if (provider_ == "bluesky") connection->prepare_now(kCompleteHandles);
  }
  connection_ = std::move(connection);
}

// One call of the SQL API, as a statement of its own (autocommit): one round trip, and the row
// locks it takes (the window of a credential or an endpoint, which every claim of it counts)
// are released by the server as the statement ends, not a COMMIT round trip later: with BEGIN
// and COMMIT around it, a busy endpoint's claims queued on that row while each worker got
// its turn on the CPU (Bluesky end to end went from 0.45 to 0.8 of the SQL floor).
// A connection broken during the call leaves its outcome unknown, and the call is repeated
// after reconnecting. Every call is safe to repeat: a claim whose answer was lost leaves a lease
// that expires, and its posts come due again; a completion or release of a batch already
// settled stores and counts nothing more.
template <typename Body>
auto Queue::Call(const RetryPolicy& retry, Body&& body) {
  for (int attempt = 0;;) {
    try {
      if (!connection_) Connect();
      pqxx::nontransaction tx(*connection_);
      auto value = body(tx);
      if (attempt > 0) spdlog::info("{}: database connection restored", label_);
      return value;
    } catch (const pqxx::broken_connection& e) {
      connection_.reset();
      ++attempt;
      if (!retry(attempt, RedactDsnSecrets(e.what(), dsn_))) throw;
    }
  }
}

std::optional<Lease> Queue::Claim(int max_ids, const RetryPolicy& retry) {
  return Call(retry, [&](pqxx::nontransaction& tx) -> std::optional<Lease> {
    pqxx::result r = tx.exec_prepared(kClaim, worker_name_, max_ids, provider_, credentials_array_);
    if (r.empty()) return std::nullopt;
    Lease lease;
    if (r[0][0].is_null()) {
      lease.wait = QuotaWait{r[0][3].as<std::int64_t>(0), r[0][4].as<std::string>("")};
      return lease;
    }
    lease.id = r[0][0].as<std::int64_t>();
    lease.credential = r[0][2].as<std::string>("");
    lease.payloads = r[0][7].as<std::string>("none");
    if (!r[0][8].is_null()) lease.kept_hashes = ParseKeptHashes(r[0][8].c_str());
    auto ids = r[0][1].is_null() ? std::nullopt : ParseBigintArray(r[0][1].c_str());
    std::optional<std::vector<std::string>> keys;
    if (keyed_) {
      keys = ParseStringArrayJson(r[0][5].c_str());
      lease.endpoint = r[0][6].as<std::string>("");
    }
    if (ids && keyed_ && (!keys || keys->size() != ids->size())) {
      spdlog::error("{}: lease {}: claim_posts returned unreadable post_keys '{:.80}'", label_, lease.id,
                    r[0][5].c_str());
    } else if (ids) {
      lease.tweet_ids = std::move(*ids);
      if (keys) lease.post_keys = std::move(*keys);
    } else {
      spdlog::error("{}: lease {}: claim_batch returned unreadable tweet_ids '{:.80}'", label_, lease.id,
                    r[0][1].c_str());
    }
    return lease;
  });
}

int Queue::Complete(std::int64_t lease_id, const std::string& observations_json, const std::string& problems_json,
                    const QuotaReport& quota, const RetryPolicy& retry) {
  return Call(retry, [&](pqxx::nontransaction& tx) {
    pqxx::result r = tx.exec_prepared(kComplete, lease_id, observations_json, problems_json, quota.rate_json);
    return r.empty() ? 0 : r[0][0].as<int>(0);
  });
}

int Queue::CompleteHandles(std::int64_t lease_id, const std::string& resolutions_json, const RetryPolicy& retry) {
  return Call(retry, [&](pqxx::nontransaction& tx) {
    pqxx::result r = tx.exec_prepared(kCompleteHandles, lease_id, resolutions_json);
    return r.empty() ? 0 : r[0][0].as<int>(0);
  });
}

void Queue::Release(std::int64_t lease_id, const std::string& reason, const QuotaReport& quota,
                    const RetryPolicy& retry) {
  Call(retry, [&](pqxx::nontransaction& tx) {
    const char* refusal = quota.refusal.empty() ? nullptr : quota.refusal.c_str();  // nullptr: SQL NULL
    tx.exec_prepared(kRelease, lease_id, Utf8Prefix(reason, 500), refusal, quota.rate_json);
    return 0;
  });
}

}  // namespace tweetkeeper::worker
