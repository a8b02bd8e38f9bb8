#pragma once
// What the command lines of tweetkeeper-import, -export and -report share: the connection options
// and the way a command line is parsed and its connection string chosen.

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "cli/options.hpp"
#include "dsn/dsn.hpp"

namespace tweetkeeper::worker {

// --dsn (its help says which role the tool needs) and --dsn-file.
inline void AddDsnOptions(CLI::App& app, std::string& dsn, std::string& dsn_file, const std::string& dsn_help) {
  app.add_option("--dsn", dsn, dsn_help);
  app.add_option("--dsn-file", dsn_file, "Read the connection string from FILE (mode 600, yours)");
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
