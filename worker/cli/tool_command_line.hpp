#pragma once
// What the command lines of tweetkeeper-import, -export and -report share: the connection options
// and the way a command line is parsed and its connection string chosen.

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "cli/bounded_option.hpp"
#include "cli/options.hpp"
#include "dsn/dsn.hpp"

namespace tweetkeeper::worker {

// --dsn (its help says where the connection comes from without it, and which role the tool
// needs: `role`) and --dsn-file.
inline void AddDsnOptions(CLI::App& app, std::string& dsn, std::string& dsn_file, const std::string& role) {
  app.add_option("--dsn", dsn,
                 "PostgreSQL connection (libpq conninfo or URI; without it and --dsn-file: libpq's PGHOST, "
                 "PGDATABASE, PGSERVICE, ... and ~/.pgpass); the role needs " +
                     role);
  app.add_option("--dsn-file", dsn_file, "Read the connection string from FILE (mode 600, yours)");
}

// --progress-interval, for the tools that print progress (progress.hpp) when not on a terminal.
inline void AddProgressIntervalOption(CLI::App& app, int& seconds) {
  AddBounded(app, "--progress-interval", seconds, "Seconds between progress lines when not on a terminal", 1, 3600);
}

// How a tool says that its command line is wrong: as CLI11 words it, or on one line of its own,
// "<program>: <what> (see --help)".
enum class UsageErrors { kCli11, kOneLine };

// Parses the command line and chooses the connection string (ChooseDsnOrSay): nullopt to go on,
// else the exit code, --help's or kExitUsage after saying what is wrong on stderr.
inline std::optional<int> ParseToolCommandLine(CLI::App& app, int argc, char** argv, std::string& dsn,
                                               const std::string& dsn_file, const char* program, UsageErrors errors) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (errors == UsageErrors::kOneLine) std::cerr << program << ": " << e.what() << " (see --help)" << std::endl;
    else app.exit(e);
    return kExitUsage;
  }
  if (!ChooseDsnOrSay(dsn, app.count("--dsn") > 0, dsn_file, program)) return kExitUsage;
  return std::nullopt;
}

}  // namespace tweetkeeper::worker
