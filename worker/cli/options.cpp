#include "cli/options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <sstream>

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

// The one stderr line for a usage error. It quotes what the user typed, so: any password in
// an argument is redacted as in a DSN (an unquoted DSN, "--dsn host=db password=x", splits
// into stray arguments that CLI11 quotes), and control characters (a pasted newline) are
// escaped so that they neither split the line nor reach the terminal raw.
std::string UsageLine(const std::string& message, int argc, const char* const argv[]) {
  std::string redacted = message;
  for (int i = 1; i < argc; ++i) redacted = RedactDsnSecrets(redacted, std::string(argv[0]) + " " + argv[i]);
  return "tweetkeeper-worker: " + OneLine(redacted);
}

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
  app.add_option("--dsn", o.dsn,
                 "PostgreSQL connection: libpq conninfo or URI (without it and --dsn-file: libpq's PGHOST, "
                 "PGDATABASE, PGSERVICE, ... and ~/.pgpass)")
      ->type_name("DSN");
  app.add_option("--dsn-file", o.dsn_file, "Read the connection string from FILE (mode 600, yours), not the command line")
      ->type_name("FILE");
  app.add_option("--api-url", o.api_url, "API base URL, http(s)://host[:port][/path]")
      ->capture_default_str()
      ->type_name("URL");
  app.add_option("--concurrency", o.concurrency,
                 "Batches in flight in this process (one thread and one DB connection each)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "Most tweet ids per request")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--name", o.name, "Worker name for logs and leases (default: hostname:pid)");
  app.add_option("--http-timeout", o.http_timeout_s, "Total seconds per API request (connect timeout: 10 s at most)")
      ->check(CLI::Range(1, 600))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--poll-interval", o.poll_interval_ms, "Milliseconds between polls when nothing is claimable; a NOTIFY from the database wakes the worker sooner")
      ->check(CLI::Range(1, 600'000))
      ->capture_default_str()
      ->type_name("MS");
  app.add_option("--exit-when-idle", o.exit_when_idle_s,
                 "Exit 0 once nothing was claimed for this many seconds (0: never; for tests and benchmarks)")
      ->check(CLI::Range(0, 31'536'000))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--startup-timeout", o.startup_timeout_s,
                 "At start-up, exit 1 if the database is still down, starting or in recovery after this many seconds (0: wait as long as it takes)")
      ->check(CLI::Range(0, 31'536'000))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--credentials", o.credentials_file,
                 "File of name=token lines (mode 600); replaces TWEETKEEPER_BEARER_TOKEN")
      ->type_name("FILE");
  app.add_option("--provider", o.provider,
                 "API endpoint: x-v2 (GET /2/tweets), x-v1.1 (GET statuses/lookup) or bluesky (app.bsky.feed.getPosts, "
                 "no token; --api-url defaults to https://public.api.bsky.app, --batch-size to 25) or mastodon "
                 "(GET /api/v1/statuses of each post's own server; tokens per server in --credentials as host=token)")
      ->check(CLI::IsMember({"x-v2", "x-v1.1", "bluesky", "mastodon"}))
      ->capture_default_str()
      ->type_name("NAME");
  std::vector<std::string> instances;
  app.add_option("--instance", instances,
                 "mastodon: send server HOST's requests to URL instead of https://HOST (repeatable; tests, proxies)")
      ->type_name("HOST=URL");
  app.add_flag("--allow-private-hosts", o.allow_private_hosts,
               "mastodon: let a server named in a post's URL resolve to a loopback, private or link-local address "
               "(refused by default: anyone who can schedule a post picks that host)");
  app.add_flag("--follow", o.follow,
               "Follow accounts instead of refreshing posts: read the new posts of the accounts followed with "
               "tweetkeeper.follow() on --provider's network (x-v2, bluesky, mastodon) and schedule each one");
  app.add_option("--follow-max-accounts", o.follow_max_accounts, "--follow: most accounts this follower holds at once")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--follow-min-poll", o.follow_min_poll_s, "--follow: no account is read more often than this")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--follow-max-poll", o.follow_max_poll_s,
                 "--follow: no account is read less often than this, as far as the rate-limit windows allow")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--follow-lease", o.follow_lease_s,
                 "--follow: the lease on the accounts held, renewed every third of it; a killed follower's "
                 "accounts go to another follower after this long")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--jetstream-url", o.jetstream_url,
                 "--follow --provider bluesky: the Jetstream the follower subscribes to (ws:// or wss://host[:port]); "
                 "\"none\": read each account's feed (getAuthorFeed) as often as the AppView's window allows")
      ->capture_default_str()
      ->type_name("URL");
  app.add_option("--follow-share", o.follow_share,
                 "--follow: the share of each rate-limit window (a Mastodon server's, the AppView's, an X "
                 "credential's timeline window) this follower spends; the rest is the refreshing workers'")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  app.add_option("--metrics-address", o.metrics_address,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics (IPv4 or a host name; port 0 picks a free one)")
      ->type_name("HOST:PORT");
  app.add_option("--warc-dir", o.warc_dir,
                 "Record every API request and response in WARC files there (tokens replaced; see README)")
      ->type_name("DIR");
  app.add_option("--warc-rollover", o.warc_rollover_s, "Start a new WARC file after this many seconds")
      ->check(CLI::Range(1, 7 * 24 * 3600))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--warc-max-size", o.warc_max_mb, "Start a new WARC file before one passes this many MB")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str()
      ->type_name("MB");
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();

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
    parsed.err = UsageLine(std::string(e.what()) + " (see --help)", argc, argv);
    return parsed;
  }

  if (o.provider == "bluesky") {
    // Bluesky's own endpoint and limit, unless given: getPosts takes 25 URIs.
    if (app.count("--api-url") == 0) o.api_url = "https://public.api.bsky.app";
    if (app.count("--batch-size") == 0) o.batch_size = 25;
    if (o.batch_size > 25) {
      parsed.exit_code = kExitUsage;
      parsed.err = "tweetkeeper-worker: --batch-size " + std::to_string(o.batch_size) +
                   " is more than bluesky's getPosts takes (25)";
      return parsed;
    }
  }
  if (o.provider == "mastodon") {
    if (app.count("--batch-size") == 0) o.batch_size = 20;
    if (o.batch_size > 20) {
      parsed.exit_code = kExitUsage;
      parsed.err = "tweetkeeper-worker: --batch-size " + std::to_string(o.batch_size) +
                   " is more than Mastodon's GET /api/v1/statuses takes (20)";
      return parsed;
    }
  }
  for (const std::string& item : instances) {
    const std::size_t eq = item.find('=');
    const std::string host = item.substr(0, eq);
    const auto url = eq == std::string::npos ? std::nullopt : ParseApiUrl(item.substr(eq + 1));
    if (host.empty() || !url || host.find_first_of("/:@ ") != std::string::npos) {
      parsed.exit_code = kExitUsage;
      // Not echoed when it has user info (a password, perhaps); control characters escaped.
      const std::string shown = item.find('@') == std::string::npos ? " '" + item + "'" : "";
      parsed.err = UsageLine("--instance" + shown + " is not HOST=http(s)://host[:port][/path]", argc, argv);
      return parsed;
    }
    std::string lower = host;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    o.instances[lower] = url->base;
  }
  auto api = ParseApiUrl(o.api_url);
  if (!api) {
    parsed.exit_code = kExitUsage;
    // Not echoed when it has user info: that part may be a password.
    const std::string shown = o.api_url.find('@') == std::string::npos ? " '" + o.api_url + "'" : "";
    parsed.err = UsageLine("--api-url" + shown + " is not http(s)://host[:port][/path]", argc, argv);
    return parsed;
  }
  o.api = *api;
  o.dsn_given = app.count("--dsn") > 0;
  if (o.dsn_given && o.dsn.empty()) {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --dsn is empty (see --help)";
    return parsed;
  }
  if (std::any_of(o.name.begin(), o.name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --name must not contain control characters";
    return parsed;
  }
  if (o.credentials_file.empty() && app.count("--credentials") > 0) {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --credentials is empty: give the path of a name=token file";
    return parsed;
  }
  if (std::any_of(o.credentials_file.begin(), o.credentials_file.end(),
                  [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --credentials must not contain control characters";
    return parsed;
  }
  if (app.count("--warc-dir") > 0 && (o.warc_dir.empty() || std::any_of(o.warc_dir.begin(), o.warc_dir.end(), [](unsigned char c) {
                                        return c < 0x20 || c == 0x7f;
                                      }))) {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --warc-dir must be a directory's path, without control characters";
    return parsed;
  }
  if (o.follow && o.provider == "x-v1.1") {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --follow reads X's timelines through API v2: use --provider x-v2";
    return parsed;
  }
  if (o.jetstream_url != "none" && o.jetstream_url.rfind("ws://", 0) != 0 && o.jetstream_url.rfind("wss://", 0) != 0) {
    parsed.exit_code = kExitUsage;
    parsed.err = UsageLine("--jetstream-url '" + o.jetstream_url + "' is not ws:// or wss://host[:port], nor none", argc, argv);
    return parsed;
  }
  if (o.follow && o.follow_min_poll_s > o.follow_max_poll_s) {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --follow-min-poll is more than --follow-max-poll";
    return parsed;
  }
  if (app.count("--metrics-address") > 0 && !ValidMetricsAddress(o.metrics_address)) {
    parsed.exit_code = kExitUsage;
    parsed.err = "tweetkeeper-worker: --metrics-address '" + o.metrics_address +
                 "' is not HOST:PORT (an IPv4 address or host name, a port 0-65535)";
    return parsed;
  }
  parsed.options = o;
  return parsed;
}

}  // namespace tweetkeeper::worker
