// tweetkeeper-warc purge: removes from the WARC files of a directory (tweetkeeper-worker
// --warc-dir) the records of the posts the database says are gone at their source (deleted,
// private, suspended, account gone, missing: tweetkeeper.post_availability), as warc_purge.hpp
// describes; a log of what went and why in DIR/purge.log. With tweetkeeper.deleted_payloads =
// keep (an archive that must keep everything) it purges nothing and says so, unless --force.
// The worker runs the same purge over its directory every --warc-purge-interval seconds.
// Exit: 0 done (or nothing to do), 1 database error or some files left as they were, 2 bad usage.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <string>

#include "cli/tool_command_line.hpp"
#include "dsn/dsn.hpp"
#include "warc/gone_posts.hpp"
#include "warc/purge_run.hpp"

namespace tk = tweetkeeper::worker;
namespace warc = tweetkeeper::worker::warc;

int main(int argc, char** argv) {
  constexpr const char* kProgram = "tweetkeeper-warc";
  CLI::App app{"tweetkeeper-warc: maintain the WARC files tweetkeeper-worker --warc-dir wrote"};
  app.set_version_flag("--version", "tweetkeeper-warc 0.5.0");
  app.require_subcommand(1);
  std::string dsn, dsn_file, dir;
  bool dry_run = false, force = false;
  CLI::App* purge = app.add_subcommand(
      "purge", "Remove the records of posts found gone (deleted, private, suspended, account gone) from the closed files");
  tk::AddDsnOptions(*purge, dsn, dsn_file, "tweetkeeper_reader");
  purge->add_option("--warc-dir", dir, "The directory tweetkeeper-worker --warc-dir writes into")
      ->required()
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  purge->add_flag("--dry-run", dry_run, "Say what would be removed (purge.log's lines, on stdout); change nothing");
  purge->add_flag("--force", force,
                  "Purge even when tweetkeeper.deleted_payloads is 'keep' (an archive that keeps everything)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // (says what is wrong, or prints --help or --version)
    return code == 0 ? 0 : tk::kExitUsage;
  }
  if (!tk::ChooseDsnOrSay(dsn, purge->count("--dsn") > 0, dsn_file, kProgram)) return tk::kExitUsage;
  warc::PurgeRequest request;
  request.dir = dir;
  request.dsns = {dsn};
  request.dry_run = dry_run;
  request.force = force;
  if (const char* kill = std::getenv("TWEETKEEPER_WARC_PURGE_KILL_AFTER")) request.kill_after_step = std::atoi(kill);
  const warc::PurgeOutcome outcome = warc::RunPurge(request);
  if (!outcome.planned.empty()) std::cout << outcome.planned;
  for (const std::string& line : outcome.lines) std::cerr << kProgram << ": " << line << std::endl;
  return outcome.exit_code;
}
