#include "settings.hpp"

#include "adaptive.hpp"
#include "pg_bridge.hpp"

extern "C" {
#include "utils/guc.h"
}

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace tweetkeeper::settings {

int buffer_ttl_ms = 5000;
int lease_ttl_ms = 120000;
int tick_interval_ms = 250;
int batch_retention_s = 3600;
int max_ids_per_call = 10000000;
int unavailable_recheck_s = 7 * 86400;
int rejected_recheck_s = 3600;
bool reclaim_abandoned = true;
char* database = nullptr;
int spending = kSpendEven;
int claim_order = kOrderLateness;
int history_partition_s = 86400;
int history_retention_s = 0;
bool history_rollup = true;
bool history_keep_unchanged = false;
int housekeeping_interval_s = 600;
int missing_after = 3;
int payloads = kPayloadsNone;
int deleted_payloads = kDeletedErase;
int adaptive_networks = 0;
int adaptive_max_gap_s = 3 * 86400;
int adaptive_stop_quiet_s = 2 * 86400;
int adaptive_keep_engaged = 1;
double adaptive_share = 0.05;
int done_recheck_s = 30 * 86400;
double compliance_price = 0.0;
char* refresh_policy = nullptr;
bool bluesky_stream_counts = false;
int stream_reconcile_factor = 12;
int stream_stale_after_s = 60;

namespace {
const config_enum_entry kSpendingOptions[] = {
    {"even", kSpendEven, false}, {"burst", kSpendBurst, false}, {nullptr, 0, false}};
const config_enum_entry kClaimOrderOptions[] = {
    {"lateness", kOrderLateness, false}, {"young", kOrderYoung, false}, {"due", kOrderDue, false},
    {nullptr, 0, false}};
const config_enum_entry kPayloadsOptions[] = {{"none", kPayloadsNone, false},
                                              {"first", kPayloadsFirst, false},
                                              {"changed", kPayloadsChanged, false},
                                              {nullptr, 0, false}};
const config_enum_entry kDeletedPayloadsOptions[] = {
    {"erase", kDeletedErase, false}, {"keep", kDeletedKeep, false}, {nullptr, 0, false}};
}  // namespace

// What changes what the SECURITY DEFINER functions do (how long a lease lasts, when a partial
// batch goes, when a post is asked for again or called missing, what is kept) is PGC_SUSET: a
// superuser's to set (postgresql.conf, ALTER SYSTEM, ALTER DATABASE or ROLE ... SET), never the
// calling session's, so that a worker cannot hold leases for a day or put posts off for a year.
// Only max_ids_per_call, a limit callers set on themselves, stays PGC_USERSET.
namespace {

// The queue's: batches, leases, rechecks, how claims spend and order.
void DefineQueueSettings() {
  DefineCustomIntVariable(
      "tweetkeeper.buffer_ttl",
      "How long the oldest due tweet may wait for a batch to fill up before a partial batch is sent.",
      "Batches of fewer than 100 tweets are handed out only after their oldest tweet has been "
      "due this long.",
      &buffer_ttl_ms, 5000, 0, 3600 * 1000, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.lease_ttl",
      "How long a claimed batch belongs to its worker before it is handed out again.",
      "Must be longer than a worker's HTTP timeout.", &lease_ttl_ms, 120000, 1000,
      24 * 3600 * 1000, PGC_SUSET, GUC_UNIT_MS, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("tweetkeeper.max_ids_per_call",
                          "The most tweet ids one schedule_tweets call accepts.",
                          "Larger arrays are refused with an error; split them.", &max_ids_per_call,
                          10000000, 1, INT32_MAX, PGC_USERSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("tweetkeeper.unavailable_recheck",
                          "How long until a tweet the API would not show (protected, suspended) is asked for again.",
                          nullptr, &unavailable_recheck_s, 7 * 86400, 60, 365 * 86400, PGC_SUSET,
                          GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("tweetkeeper.rejected_recheck",
                          "How long a credential the API rejected (401/403), or a server that asked for a token, "
                          "rests before it is tried again.",
                          nullptr, &rejected_recheck_s, 3600, 60, 30 * 86400, PGC_SUSET,
                          GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("tweetkeeper.batch_retention",
                          "How long finished batches are kept in tweetkeeper.batches for the stats.",
                          nullptr, &batch_retention_s, 3600, 60, 30 * 86400, PGC_SIGHUP,
                          GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomIntVariable("tweetkeeper.tick_interval",
                          "Longest sleep of the background worker between housekeeping ticks.",
                          "It also wakes when the next tweet becomes claimable.",
                          &tick_interval_ms, 250, 10, 3600 * 1000, PGC_SIGHUP, GUC_UNIT_MS,
                          nullptr, nullptr, nullptr);
  DefineCustomBoolVariable(
      "tweetkeeper.reclaim_abandoned",
      "Hand a batch back at once when the database session that claimed it is gone.",
      "Without it, a killed worker's batch waits for tweetkeeper.lease_ttl. Turn it off behind a "
      "connection pooler in transaction mode, where the claiming session is not the worker's.",
      &reclaim_abandoned, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomEnumVariable(
      "tweetkeeper.spending",
      "How claims spend each credential's window: even (one request every window/limit) or burst.",
      "even spaces a credential's requests evenly over its window, across all workers, so a tweet "
      "due mid-window does not wait for the next window; burst spends the window as fast as "
      "tweets are due, then waits for its reset (0.1.0's behaviour).",
      &spending, kSpendEven, kSpendingOptions, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomEnumVariable(
      "tweetkeeper.claim_order",
      "Which due tweets a claim takes first: lateness (relative to each tweet's delay), young or due.",
      "lateness serves the most overdue tweets relative to their own delay, so that under a "
      "shortage every interval stretches by about the same factor; young divides that by the "
      "delay once more, so that the shortest delays (the youngest tweets) keep their schedule "
      "first; due takes the oldest due_at first (0.1.0's order). Watched tweets come first.",
      &claim_order, kOrderLateness, kClaimOrderOptions, PGC_SUSET, 0, nullptr, nullptr, nullptr);
}

// What is kept (history, payloads) and the housekeeping that keeps it; missing tweets; the
// background worker's database.
void DefineKeepingSettings(bool preloading) {
  // The history's housekeeping (tweetkeeper.housekeeping(), run by the background worker or by
  // pg_cron). SUSET rather than SIGHUP: ALTER DATABASE ... SET reaches pg_cron's job sessions.
  DefineCustomIntVariable(
      "tweetkeeper.history_partition",
      "Length of each partition of tweetkeeper.metric_history_hot.",
      "Partitions are aligned to multiples of it since 1970-01-01 UTC (1 day: UTC days). A change "
      "applies to partitions created from then on.",
      &history_partition_s, 86400, 60, 366 * 86400, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.history_retention",
      "How long observations stay in tweetkeeper.metric_history; 0 keeps everything.",
      "Whole partitions are dropped once all of their rows are older than this, never row by row.",
      &history_retention_s, 0, 0, INT32_MAX, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable(
      "tweetkeeper.history_rollup",
      "Before a partition is dropped, keep one row per tweet per UTC day in tweetkeeper.metric_daily.",
      nullptr, &history_rollup, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  // Payloads (tweetkeeper.payloads): read by complete_batch() and, through each claim, by the
  // workers, which ask the API for a payload's fields only when it is on.
  DefineCustomEnumVariable(
      "tweetkeeper.payloads",
      "What to keep of each post's API object beyond its counts: none, first, or changed.",
      "first keeps the first answer of each post; changed keeps every answer whose content "
      "(text, edits, author, entities, withheld state; not the counts) differs from the last one "
      "kept. Set it per database (ALTER DATABASE ... SET); workers follow it at their next claim.",
      &payloads, kPayloadsNone, kPayloadsOptions, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomEnumVariable(
      "tweetkeeper.deleted_payloads",
      "What happens to the payloads of a post found deleted or unavailable: erase or keep.",
      "erase (the default) follows X's terms, which require stored content to follow deletions; "
      "keep leaves the last payloads in place, outside those terms. A tombstone is kept either way.",
      &deleted_payloads, kDeletedErase, kDeletedPayloadsOptions, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  // Stream counts (sql/replaceable/38_stream.sql, docs/workers.md): PGC_SUSET as every setting of
  // what the SECURITY DEFINER functions do.
  DefineCustomBoolVariable(
      "tweetkeeper.bluesky_stream_counts",
      "Count Bluesky posts' likes, reposts, replies and quotes from Jetstream as they happen.",
      "On, a reader (tweetkeeper-worker --stream-counts) keeps the counts of tracked Bluesky posts from "
      "the network's stream, and getPosts reads only reconcile them, tweetkeeper.stream_reconcile_factor "
      "times less often. Off (the default), nothing changes.",
      &bluesky_stream_counts, false, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.stream_reconcile_factor",
      "How many times longer than its refresh policy says a post counted by the stream waits between reads.",
      "Its reads only reconcile the stream's counts (the difference is kept: tweetkeeper.stream_stats). 12: on the "
      "default age table a post's 30-day life is read 10 times instead of 111.",
      &stream_reconcile_factor, 12, 1, 1000, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.stream_stale_after",
      "How long the stream's reader may go without storing before reads store counts again.",
      "A read while the stream is stale stores its counts, and its post leaves the stream until the "
      "reader adopts it again from a later read.",
      &stream_stale_after_s, 60, 5, 86400, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomBoolVariable(
      "tweetkeeper.history_keep_unchanged",
      "Store an observation even when all of its counts equal the tweet's previous ones.",
      "Off: history holds a row only when something changed (read it as a step function); "
      "tweets.updated_at says when the tweet was last checked.",
      &history_keep_unchanged, false, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.housekeeping_interval",
      "How often the background worker runs tweetkeeper.housekeeping() (partitions ahead, retention).",
      "It skips a task that ran more recently, by pg_cron for example.",
      &housekeeping_interval_s, 600, 10, 86400, PGC_SIGHUP, GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.missing_after",
      "After how many answers in a row that leave a tweet out (neither found nor an error) it is 'missing'.",
      "Each omission puts off the tweet's next refresh by its delay, doubled at each one in a row; "
      "a missing tweet is rechecked every tweetkeeper.unavailable_recheck.",
      &missing_after, 3, 1, 100, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  // Only meaningful at server start; defined as a placeholder otherwise so SHOW works.
  DefineCustomStringVariable("tweetkeeper.database",
                             "The database in which the background worker runs.", nullptr,
                             &database, "postgres", preloading ? PGC_POSTMASTER : PGC_SUSET, 0,
                             nullptr, nullptr, nullptr);
}

// tweetkeeper.refresh_policy: parsed once, when set (a malformed value is refused there, with
// why); the networks it makes adaptive kept as a mask. (The parse's message is copied out before
// the PostgreSQL calls, so that no C++ object is alive if one of them fails.)
bool CheckRefreshPolicy(char** newval, void** extra, GucSource) {
  char detail[256];
  std::optional<int> mask;
  {
    std::string error;
    mask = ParseRefreshPolicy(*newval ? *newval : "", &error);
    snprintf(detail, sizeof detail, "%s", error.c_str());
  }
  if (!mask) {
    GUC_check_errdetail("%s", detail);
    return false;
  }
  // (GUC frees it with free(): malloc, as PostgreSQL 15 asks of a check hook's extra.)
  int* kept = static_cast<int*>(malloc(sizeof(int)));
  if (kept == nullptr) return false;
  *kept = *mask;
  *extra = kept;
  return true;
}

void AssignRefreshPolicy(const char*, void* extra) {
  if (extra != nullptr) adaptive_networks = *static_cast<int*>(extra);
}

// Which refresh policy each network (or post) follows, and the adaptive one's settings.
void DefinePolicySettings() {
  DefineCustomStringVariable(
      "tweetkeeper.refresh_policy",
      "How posts are refreshed: age (the age table), adaptive, or per network (x:adaptive,mastodon:age).",
      "adaptive reads a post whose counts stopped moving less and less often, and stops one no one "
      "engaged with, never more often than the age table; a post's own policy "
      "(tweetkeeper.set_refresh_policy) wins over this.",
      &refresh_policy, "age", PGC_SUSET, 0, CheckRefreshPolicy, AssignRefreshPolicy, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.adaptive_max_gap",
      "The longest an adaptive post waits between reads while it is tracked.",
      "A late burst of engagement is seen within it.", &adaptive_max_gap_s, 3 * 86400, 3600,
      365 * 86400, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.adaptive_stop_quiet",
      "How long an adaptive post with fewer than adaptive_keep_engaged engagements may stay quiet before it is done.",
      "0: never done before the age table says so.", &adaptive_stop_quiet_s, 2 * 86400, 0,
      365 * 86400, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.adaptive_keep_engaged",
      "Adaptive posts with at least this many likes, reposts, replies and quotes are read until the age table ends.",
      "0 reads every post until then.", &adaptive_keep_engaged, 1, 0, INT32_MAX, PGC_SUSET, 0,
      nullptr, nullptr, nullptr);
  DefineCustomRealVariable(
      "tweetkeeper.adaptive_share",
      "An adaptive post is read again when its counts have probably grown by this share.",
      nullptr, &adaptive_share, 0.05, 0.001, 1.0, PGC_SUSET, 0, nullptr, nullptr, nullptr);
  DefineCustomIntVariable(
      "tweetkeeper.done_recheck",
      "How often a post past its last refresh is checked for deletion (0: never).",
      "X's posts through batch compliance jobs (the X worker's --compliance), Bluesky's and Mastodon's "
      "by batch reads.",
      &done_recheck_s, 30 * 86400, 0, 3650 * 86400, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr, nullptr);
  DefineCustomRealVariable(
      "tweetkeeper.compliance_price",
      "What X charges per post id a compliance job checks, in dollars (X's price list names none: 0).",
      nullptr, &compliance_price, 0.0, 0.0, 1.0, PGC_SUSET, 0, nullptr, nullptr, nullptr);
}

}  // namespace

void Define(bool preloading) {
  DefineQueueSettings();
  DefineKeepingSettings(preloading);
  DefinePolicySettings();
  MarkGUCPrefixReserved("tweetkeeper");
}

}  // namespace tweetkeeper::settings
