// Handle resolution: a batch of posts known by handle (Bluesky's endpoint bluesky-handle) names
// no post the API can read yet. Each handle is resolved to its DID, one request each (the
// provider builds and reads them), and complete_handles() stores the keys, or a problem for a
// handle that resolves to nothing; one failed request hands the whole batch back.
#include <spdlog/spdlog.h>

#include "queue/payload.hpp"
#include "runner/runner.hpp"
#include "runner/slot.hpp"

namespace tweetkeeper::worker {

Millis Runner::ResolveNames(Slot& slot, const Lease& lease) {
  const std::vector<std::string> handles = provider_->NamesToResolve(PostKeys{lease.post_keys, lease.endpoint});
  std::vector<HandleResolution> resolved;
  for (const std::string& handle : handles) {
    if (stop_.stopping()) {
      Release(slot, lease.id, "worker shutting down");
      return Millis{0};
    }
    HttpResponse response = slot.http.Get(provider_->ResolveUrl(handle), "", stop_.abort_flag());
    ++counters_.batches;
    const Resolution r = provider_->ParseResolution(response);
    telemetry_.Request("default", RequestOutcome(response, r.failure.failure), response.elapsed_ms / 1000.0);
    if (!r.failure.ok()) {
      // Nothing learnt of this handle: the whole batch goes back (what was resolved is asked
      // again; the AppView's window is the endpoint's, as for getPosts).
      Release(slot, lease.id, "resolving " + handle + ": " + r.failure.reason, QuotaReportOf(r.failure));
      ++counters_.errors;
      spdlog::warn("{}: lease {}: resolving the handle {} failed ({}): {}; batch released", slot.label, lease.id,
                   handle, FailureKindName(r.failure.failure), r.failure.reason);
      return slot.Failed();
    }
    resolved.push_back({handle, r.key, r.problem});
  }
  int settled = 0;
  const DbOutcome done = GuardDb(slot.label, "complete_handles", lease.id, slot.dsn, [&] {
    settled = slot.queue.CompleteHandles(lease.id, HandlesJson(resolved), slot.finish_retry);
  });
  if (done == DbOutcome::kSqlError || done == DbOutcome::kOther) Release(slot, lease.id, "complete_handles failed");
  if (done != DbOutcome::kOk) {
    ++counters_.errors;
    return slot.Failed();
  }
  telemetry_.Batch("completed");
  spdlog::debug("{}: lease {}: {} handles resolved, {} posts settled", slot.label, lease.id, handles.size(), settled);
  slot.failures = 0;
  return Millis{0};
}

}  // namespace tweetkeeper::worker
