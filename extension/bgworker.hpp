// The background worker: housekeeping for the queue on a clock.
#pragma once

namespace tweetkeeper::bgworker {

void Register();
bool Registered();

}  // namespace tweetkeeper::bgworker
