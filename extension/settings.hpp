// The extension's GUCs (tweetkeeper.*), defined once in _PG_init.
#pragma once

namespace tweetkeeper::settings {

extern int buffer_ttl_ms;
extern int lease_ttl_ms;
extern int tick_interval_ms;
extern int batch_retention_s;
extern int max_ids_per_call;
extern int unavailable_recheck_s;
extern int rejected_recheck_s;
extern bool reclaim_abandoned;
extern char* database;
enum Spending { kSpendEven, kSpendBurst };
extern int spending;  // Spending
enum ClaimOrder { kOrderLateness, kOrderDue, kOrderYoung };
extern int claim_order;  // ClaimOrder
extern int history_partition_s;
extern int history_retention_s;  // 0: keep everything
extern bool history_rollup;
extern bool history_keep_unchanged;
extern int housekeeping_interval_s;
extern int missing_after;
enum Payloads { kPayloadsNone, kPayloadsFirst, kPayloadsChanged };
extern int payloads;  // Payloads
enum DeletedPayloads { kDeletedErase, kDeletedKeep };
extern int deleted_payloads;  // DeletedPayloads  // omissions in a row before a tweet is 'missing'

// The refresh policy (adaptive.hpp): which networks are adaptive (kAdaptiveX, ...), and the
// adaptive policy's settings.
extern int adaptive_networks;
extern int adaptive_max_gap_s;
extern int adaptive_stop_quiet_s;  // 0: never stops a post early
extern int adaptive_keep_engaged;
extern double adaptive_share;
extern int done_recheck_s;
extern double compliance_price;
extern bool bluesky_stream_counts;
extern int stream_reconcile_factor;
extern int stream_stale_after_s;

void Define(bool preloading);

}  // namespace tweetkeeper::settings
