#include "cli/options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <sstream>

#include "cli/option_groups.hpp"
#include "dsn/dsn.hpp"
#include "text/one_line.hpp"

namespace tweetkeeper::worker {
namespace {

constexpr const char* kFooter = R"(Environment:
  TWEETKEEPER_BEARER_TOKEN  X API bearer token (required unless --credentials is given). Read only
                            from the environment so it never shows in ps or shell history; it is
                            never logged.

Credentials file (--credentials FILE): one name=token line per credential registered in
tweetkeeper.credentials; blank lines and # comments are allowed. The file must be a regular
file that only its owner can read (chmod 600 FILE); the worker refuses it otherwise.

The worker claims batches of due tweets from the tweetkeeper extension, asks the API for their
metrics (one request per batch) and stores the answers. Run as many workers as you like.

Signals: SIGTERM/SIGINT stop claiming; batches in flight finish (bounded by --http-timeout) and
are stored or handed back. A second signal cuts requests short and hands their batches back;
a third exits at once (unfinished leases then expire and come due again).

Start-up: a database that is down, starting or in recovery is waited for (retries every
0.5-30 s, one log line per change of its state; --startup-timeout bounds the wait). A refused
login, a database without the extension or a role without the tweetkeeper_worker grants is
not: the worker exits 1 at once with one line that says what to do.

Exit status: 0 stopped cleanly (signal or --exit-when-idle), 1 runtime error (login refused,
extension or grants missing, database still unavailable after --startup-timeout, ...), 2 usage
error.)";

bool HostChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'; }

// HOST:PORT for the metrics listener. The exposer's HTTP server has no IPv6 on Debian 12.
bool ValidMetricsAddress(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size() || address.size() - colon > 6) return false;
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  if (!std::all_of(host.begin(), host.end(), HostChar)) return false;
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  return std::stoi(port) <= 65535;
}

}  // namespace

namespace cli {

std::string UsageLine(const std::string& message, int argc, const char* const argv[]) {
  std::string redacted = message;
  for (int i = 1; i < argc; ++i) redacted = RedactDsnSecrets(redacted, std::string(argv[0]) + " " + argv[i]);
  return "tweetkeeper-worker: " + OneLine(redacted);
}

bool HasControlCharacter(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

void AddRecordingOptions(CLI::App& app, Options& o) {
  app.add_option("--metrics-address", o.metrics_address,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics (IPv4 or a host name; port 0 picks a free one)")
      ->type_name("HOST:PORT");
  app.add_option("--warc-dir", o.warc_dir,
                 "Record every API request and response in WARC files there (tokens replaced; see README)")
      ->type_name("DIR");
  AddBounded(app, "--warc-rollover", o.warc_rollover_s, "Start a new WARC file after this many seconds", 1,
             7 * 24 * 3600)
      ->type_name("SECONDS");
  AddBounded(app, "--warc-max-size", o.warc_max_mb, "Start a new WARC file before one passes this many MB", 1, 100000)
      ->type_name("MB");
  AddBounded(app, "--warc-purge-interval", o.warc_purge_interval_s,
             "Every this many seconds, remove the posts found gone from the closed WARC files (as tweetkeeper-warc "
             "purge; 0: never)",
             0, 7 * 24 * 3600)
      ->type_name("SECONDS");
  app.add_option("--warc-purge-dsn-file", o.warc_purge_dsn_file,
                 "That purge reads which posts are gone with the connection string in FILE (mode 600, yours; a "
                 "login with tweetkeeper_reader), not --dsn's")
      ->type_name("FILE");
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
}

std::optional<std::string> CheckWarcDir(const Parsing& p) {
  if (p.app.count("--warc-dir") > 0 && (p.o.warc_dir.empty() || HasControlCharacter(p.o.warc_dir)))
    return "tweetkeeper-worker: --warc-dir must be a directory's path, without control characters";
  return std::nullopt;
}

std::optional<std::string> CheckMetricsAddress(const Parsing& p) {
  if (p.app.count("--metrics-address") > 0 && !ValidMetricsAddress(p.o.metrics_address))
    return "tweetkeeper-worker: --metrics-address '" + p.o.metrics_address +
           "' is not HOST:PORT (an IPv4 address or host name, a port 0-65535)";
  return std::nullopt;
}

}  // namespace cli

std::optional<std::string> CleartextWarning(const ApiUrl& api) {
  std::string scheme = api.base.substr(0, 7);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "http://") return std::nullopt;
  std::string host = api.host;
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  if (host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0) return std::nullopt;
  return "--api-url is http:// to " + api.host + ": the bearer token goes over the network in clear; use https://";
}

std::optional<ApiUrl> ParseApiUrl(std::string_view url) {
  std::string lower(url.substr(0, 8));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::size_t start;
  if (lower.rfind("http://", 0) == 0) {
    start = 7;
  } else if (lower.rfind("https://", 0) == 0) {
    start = 8;
  } else {
    return std::nullopt;
  }
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '?' || c == '#' || c == '@' || c == '\\') return std::nullopt;
  }
  const std::size_t slash = url.find('/', start);
  const std::string_view authority = url.substr(start, slash == std::string_view::npos ? url.npos : slash - start);
  if (authority.empty()) return std::nullopt;
  std::string_view host, port;
  bool has_port = false;
  if (authority.front() == '[') {  // IPv6 literal
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos || close == 1) return std::nullopt;
    host = authority.substr(0, close + 1);
    if (!std::all_of(host.begin() + 1, host.end() - 1,
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; })) {
      return std::nullopt;
    }
    const std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else {
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(), HostChar)) return std::nullopt;
    has_port = colon != std::string_view::npos;
    if (has_port) port = authority.substr(colon + 1);
  }
  if (has_port) {
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    const int p = std::stoi(std::string(port));
    if (p < 1 || p > 65535) return std::nullopt;
  }
  std::string base(url);
  while (base.size() > start && base.back() == '/') base.pop_back();
  return ApiUrl{base, std::string(host)};
}

ParsedCommandLine ParseCommandLine(int argc, const char* const argv[]) {
  Options o;
  CLI::App app{"tweetkeeper-worker: keeps tweets' engagement metrics fresh (X API -> PostgreSQL).",
               "tweetkeeper-worker"};
  app.footer(kFooter);
  app.get_formatter()->column_width(34);
  // In --help's order: the database and the API, the network, following, what is recorded.
  std::vector<std::string> instances;
  cli::AddRefreshOptions(app, o, instances);
  cli::AddFollowOptions(app, o);
  cli::AddRecordingOptions(app, o);

  ParsedCommandLine parsed;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::ostringstream out, err;
    parsed.exit_code = app.exit(e, out, err);
    parsed.out = out.str();
    return parsed;
  } catch (const CLI::ParseError& e) {
    parsed.exit_code = kExitUsage;
    parsed.err = cli::UsageLine(std::string(e.what()) + " (see --help)", argc, argv);
    return parsed;
  }
  // The first rule broken is the one said.
  const cli::Parsing p{app, o, instances, argc, argv};
  for (const cli::Rule check : {cli::CheckNetwork, cli::CheckRefresh, cli::CheckWarcDir, cli::CheckFollow,
                           cli::CheckMetricsAddress}) {
    if (std::optional<std::string> error = check(p)) {
      parsed.exit_code = kExitUsage;
      parsed.err = *error;
      return parsed;
    }
  }
  parsed.options = o;
  return parsed;
}

}  // namespace tweetkeeper::worker
