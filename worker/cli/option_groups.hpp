#pragma once
// ParseCommandLine's parts (options.cpp), one per mode of the worker: the options of each and the
// rules they must meet after parsing. Refreshing posts (options_refresh.cpp: the database, the
// API, the network), following accounts (options_follow.cpp: --follow and its options), and what
// either records (options.cpp: metrics, WARC files, the log). Internal to cli/.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/bounded_option.hpp"
#include "cli/options.hpp"

namespace tweetkeeper::worker::cli {

// What a rule looks at once the command line is parsed.
struct Parsing {
  CLI::App& app;
  Options& o;  // a rule may fill in what follows from the others (bluesky's --api-url, ...)
  const std::vector<std::string>& instances;  // --instance, as given
  int argc;
  const char* const* argv;
};

// A rule: nullopt when the command line meets it, else the one stderr line that says why not.
using Rule = std::optional<std::string> (*)(const Parsing&);

// The one stderr line for a usage error. It quotes what the user typed, so: any password in
// an argument is redacted as in a DSN (an unquoted DSN, "--dsn host=db password=x", splits
// into stray arguments that CLI11 quotes), and control characters (a pasted newline) are
// escaped so that they neither split the line nor reach the terminal raw.
std::string UsageLine(const std::string& message, int argc, const char* const argv[]);
bool HasControlCharacter(const std::string& text);

void AddRefreshOptions(CLI::App& app, Options& o, std::vector<std::string>& instances);
// --provider's defaults and limits, --instance, --api-url.
std::optional<std::string> CheckNetwork(const Parsing& p);
// --dsn, --name, --credentials.
std::optional<std::string> CheckRefresh(const Parsing& p);

void AddFollowOptions(CLI::App& app, Options& o);
std::optional<std::string> CheckFollow(const Parsing& p);

void AddRecordingOptions(CLI::App& app, Options& o);
std::optional<std::string> CheckWarcDir(const Parsing& p);
std::optional<std::string> CheckMetricsAddress(const Parsing& p);

}  // namespace tweetkeeper::worker::cli
