#include "warc/purge_run.hpp"

#include <unistd.h>

#include <chrono>
#include <pqxx/pqxx>

#include "dsn/dsn.hpp"
#include "warc/gone_posts.hpp"
#include "warc/warc_purge.hpp"

namespace tweetkeeper::worker::warc {

PurgeOutcome RunPurge(const PurgeRequest& request) {
  PurgeOutcome outcome;
  PurgeSet set;
  std::size_t posts = 0;
  for (const std::string& dsn : request.dsns) {
    try {
      pqxx::connection conn(dsn);
      const GoneLoad load = LoadGonePosts(conn, request.force, &set);
      if (load.keep && !request.force) {
        outcome.lines.push_back(
            "tweetkeeper.deleted_payloads is 'keep' (an archive that must keep everything): nothing purged from " +
            request.dir + " (--force purges anyway)");
        return outcome;
      }
      posts += load.posts;
    } catch (const pqxx::insufficient_privilege& e) {
      outcome.lines.push_back(
          "this login cannot read tweetkeeper.post_availability (it needs tweetkeeper_reader; a worker's login "
          "has only tweetkeeper_worker: give the worker --warc-purge-dsn-file with a reader's login): " +
          RedactDsnSecrets(e.what(), dsn));
      outcome.exit_code = 1;
      return outcome;
    } catch (const std::exception& e) {
      outcome.lines.push_back(RedactDsnSecrets(e.what(), dsn));
      outcome.exit_code = 1;
      return outcome;
    }
  }
  PurgeOptions options;
  options.dir = request.dir;
  options.dry_run = request.dry_run;
  options.kill_after_step = request.kill_after_step;
  options.run_id = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch()).count()) +
                   "-" + std::to_string(getpid());
  try {
    const PurgeStats stats = PurgeDirectory(options, set);
    outcome.planned = stats.planned;
    for (const std::string& e : stats.errors) outcome.lines.push_back(e);
    outcome.lines.push_back(std::string(request.dry_run ? "dry run: " : "") + std::to_string(posts) +
                            " posts gone; " + std::to_string(stats.files_seen) + " files read, " +
                            std::to_string(stats.files_rewritten) + " rewritten, " +
                            std::to_string(stats.files_failed) + " left as they were; " +
                            std::to_string(stats.posts_removed) + " posts removed (" +
                            std::to_string(stats.records_dropped) + " records dropped, " +
                            std::to_string(stats.responses_rewritten) + " responses rewritten); " +
                            std::to_string(stats.responses_unread) + " responses not JSON (kept)");
    if (stats.files_failed > 0) outcome.exit_code = 1;
  } catch (const std::exception& e) {
    outcome.lines.push_back(e.what());
    outcome.exit_code = 1;
  }
  return outcome;
}

}  // namespace tweetkeeper::worker::warc
