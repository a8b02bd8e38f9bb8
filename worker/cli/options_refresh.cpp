// The refresher's options (the database, the API, the network) and their rules: ParseCommandLine's
// part for tweetkeeper-worker without --follow, whose connection and network options --follow
// shares.
#include <algorithm>
#include <cctype>

#include "cli/option_groups.hpp"

namespace tweetkeeper::worker::cli {

void AddRefreshOptions(CLI::App& app, Options& o, std::vector<std::string>& instances) {
  app.add_option("--dsn", o.dsns,
                 "PostgreSQL connection: libpq conninfo or URI (without it and --dsn-file: libpq's PGHOST, "
                 "PGDATABASE, PGSERVICE, ... and ~/.pgpass). Given more than once (partitions, docs/partitions.md): "
                 "--concurrency slots on each")
      ->type_name("DSN")
      ->allow_extra_args(false);
  app.add_option("--dsn-file", o.dsn_file, "Read the connection string from FILE (mode 600, yours), not the command line")
      ->type_name("FILE");
  app.add_option("--api-url", o.api_url, "API base URL, http(s)://host[:port][/path]")
      ->capture_default_str()
      ->type_name("URL");
  AddBounded(app, "--concurrency", o.concurrency,
             "Batches in flight in this process (one thread and one DB connection each)", 1, 64);
  AddBounded(app, "--batch-size", o.batch_size, "Most tweet ids per request", 1, 100);
  app.add_option("--name", o.name, "Worker name for logs and leases (default: hostname:pid)");
  AddBounded(app, "--http-timeout", o.http_timeout_s, "Total seconds per API request (connect timeout: 10 s at most)",
             1, 600)
      ->type_name("SECONDS");
  AddBounded(app, "--poll-interval", o.poll_interval_ms,
             "Milliseconds between polls when nothing is claimable; a NOTIFY from the database wakes the worker sooner",
             1, 600'000)
      ->type_name("MS");
  AddBounded(app, "--exit-when-idle", o.exit_when_idle_s,
             "Exit 0 once nothing was claimed for this many seconds (0: never; for tests and benchmarks)", 0,
             31'536'000)
      ->type_name("SECONDS");
  AddBounded(app, "--startup-timeout", o.startup_timeout_s,
             "At start-up, exit 1 if the database is still down, starting or in recovery after this many seconds (0: "
             "wait as long as it takes)",
             0, 31'536'000)
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
  app.add_option("--instance", instances,
                 "mastodon: send server HOST's requests to URL instead of https://HOST (repeatable; tests, proxies)")
      ->type_name("HOST=URL");
  app.add_flag("--compliance,!--no-compliance", o.compliance,
               "x-v2: check the X posts past their last refresh for deletion every tweetkeeper.done_recheck with "
               "X's batch compliance jobs, beside refreshing (on by default; --no-compliance: not this worker)");
  app.add_option("--compliance-poll", o.compliance_poll_s,
                 "x-v2: seconds between questions about a compliance job (X allows 150 per 15 minutes)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str()
      ->type_name("SECONDS");
  app.add_option("--compliance-max-ids", o.compliance_max_ids, "x-v2: post ids per compliance job")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str()
      ->type_name("N");
  app.add_flag("--allow-private-hosts", o.allow_private_hosts,
               "mastodon: let a server named in a post's URL resolve to a loopback, private or link-local address "
               "(refused by default: anyone who can schedule a post picks that host)");
}

namespace {

// A network's own batch limit and defaults, unless given.
std::optional<std::string> CheckBatchSize(const Parsing& p) {
  Options& o = p.o;
  if (o.provider == "bluesky") {
    // Bluesky's own endpoint and limit, unless given: getPosts takes 25 URIs.
    if (p.app.count("--api-url") == 0) o.api_url = "https://public.api.bsky.app";
    if (p.app.count("--batch-size") == 0) o.batch_size = 25;
    if (o.batch_size > 25)
      return "tweetkeeper-worker: --batch-size " + std::to_string(o.batch_size) +
             " is more than bluesky's getPosts takes (25)";
  }
  if (o.provider == "mastodon") {
    if (p.app.count("--batch-size") == 0) o.batch_size = 20;
    if (o.batch_size > 20)
      return "tweetkeeper-worker: --batch-size " + std::to_string(o.batch_size) +
             " is more than Mastodon's GET /api/v1/statuses takes (20)";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> CheckNetwork(const Parsing& p) {
  if (std::optional<std::string> error = CheckBatchSize(p)) return error;
  Options& o = p.o;
  for (const std::string& item : p.instances) {
    const std::size_t eq = item.find('=');
    const std::string host = item.substr(0, eq);
    const auto url = eq == std::string::npos ? std::nullopt : ParseApiUrl(item.substr(eq + 1));
    if (host.empty() || !url || host.find_first_of("/:@ ") != std::string::npos) {
      // Not echoed when it has user info (a password, perhaps); control characters escaped.
      const std::string shown = item.find('@') == std::string::npos ? " '" + item + "'" : "";
      return UsageLine("--instance" + shown + " is not HOST=http(s)://host[:port][/path]", p.argc, p.argv);
    }
    std::string lower = host;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    o.instances[lower] = url->base;
  }
  auto api = ParseApiUrl(o.api_url);
  if (!api) {
    // Not echoed when it has user info: that part may be a password.
    const std::string shown = o.api_url.find('@') == std::string::npos ? " '" + o.api_url + "'" : "";
    return UsageLine("--api-url" + shown + " is not http(s)://host[:port][/path]", p.argc, p.argv);
  }
  o.api = *api;
  return std::nullopt;
}

std::optional<std::string> CheckRefresh(const Parsing& p) {
  Options& o = p.o;
  o.dsn_given = p.app.count("--dsn") > 0;
  if (o.dsn_given) o.dsn = o.dsns.front();
  for (const std::string& dsn : o.dsns)
    if (dsn.empty()) return "tweetkeeper-worker: --dsn is empty (see --help)";
  if (o.dsns.size() > 1 && o.follow)
    return "tweetkeeper-worker: --follow reads one database: the partition of slot 0, which keeps the follows "
           "(docs/partitions.md); give --dsn once";
  if (o.dsns.size() > 1 && !o.dsn_file.empty())
    return "tweetkeeper-worker: --dsn given more than once and --dsn-file: give the partitions all with --dsn";
  if (HasControlCharacter(o.name)) return "tweetkeeper-worker: --name must not contain control characters";
  if (o.credentials_file.empty() && p.app.count("--credentials") > 0)
    return "tweetkeeper-worker: --credentials is empty: give the path of a name=token file";
  if (HasControlCharacter(o.credentials_file))
    return "tweetkeeper-worker: --credentials must not contain control characters";
  return std::nullopt;
}

}  // namespace tweetkeeper::worker::cli
