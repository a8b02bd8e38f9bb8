#pragma once
// The command line of tweetkeeper-worker, parsed and validated without side effects so the
// rules can be unit-tested. main.cpp turns the outcome into output and an exit code.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tweetkeeper::worker {

constexpr int kExitUsage = 2;    // bad command line or environment
constexpr int kExitRuntime = 1;  // e.g. database unreachable at startup

struct ApiUrl {
  std::string base;  // scheme://host[:port][/path] without a trailing '/'
  std::string host;
};

// A warning when an API URL would carry a bearer token in clear: http:// to a host that is not
// this machine's loopback (localhost, 127.0.0.0/8, ::1). nullopt for https:// or loopback.
std::optional<std::string> CleartextWarning(const ApiUrl& api);

struct Options {
  std::string dsn;       // --dsn (the first); main reads --dsn-file's (dsn/ChosenDsn); neither: libpq's environment
  std::vector<std::string> dsns;  // every --dsn, in order: the partitions a refresher reads (docs/partitions.md)
  bool dsn_given = false;
  std::string dsn_file;
  std::string api_url = "https://api.x.com";
  int concurrency = 2;
  int batch_size = 100;
  std::string name;  // empty: hostname:pid, filled in by main
  int http_timeout_s = 30;
  int poll_interval_ms = 5000;  // a safety net: the database NOTIFYs when work is due
  int exit_when_idle_s = 0;
  int startup_timeout_s = 0;  // 0: wait for the database as long as it takes
  std::string log_level = "info";
  std::string credentials_file;  // --credentials; empty: the token comes from the environment
  std::string provider = "x-v2";  // --provider: x-v2 (GET /2/tweets) or x-v1.1 (statuses/lookup)
  std::string metrics_address;  // --metrics-address HOST:PORT; empty: no /metrics
  std::string warc_dir;          // --warc-dir: record every API exchange there; empty: none
  int warc_rollover_s = 1800;    // --warc-rollover: a new WARC file after this many seconds
  int warc_max_mb = 1000;        // --warc-max-size: or once a file would pass this many MB
  int warc_purge_interval_s = 3600;  // --warc-purge-interval: gone posts out of the closed files; 0 never
  std::string warc_purge_dsn_file;   // --warc-purge-dsn-file: a reader's login for that purge; "": --dsn's
  ApiUrl api;  // api_url, validated
  // --instance HOST=URL (mastodon): where a server's requests go instead of https://HOST.
  std::map<std::string, std::string> instances;
  // --allow-private-hosts (mastodon): a host taken from a post's URL may resolve to a loopback or
  // private address too (by default such a connection is refused).
  bool allow_private_hosts = false;
  // --follow: read the new posts of followed accounts (tweetkeeper.follow()) instead of refreshing.
  bool follow = false;
  int follow_max_accounts = 1000;   // --follow-max-accounts: accounts held at once
  double follow_min_poll_s = 2;     // --follow-min-poll: no account read more often
  double follow_max_poll_s = 900;   // --follow-max-poll: none read less often (the budget permitting)
  double follow_share = 0.5;        // --follow-share: of each rate-limit window, for following
  int follow_lease_s = 15;
  // --stream-counts (bluesky): count likes, reposts, replies and quotes of tracked posts from
  // Jetstream (stream/stream_reader.hpp) instead of refreshing.
  bool stream_counts = false;
  // --compliance (x-v2, on by default): check X posts past their last refresh with batch
  // compliance jobs (compliance/compliance_runner.hpp) beside the refreshing slots.
  bool compliance = true;
  int compliance_poll_s = 60;        // --compliance-poll
  int compliance_max_ids = 100000;   // --compliance-max-ids
  double stream_flush_s = 2;        // --stream-flush: how often counts, history and position are stored
  int stream_ring_s = 120;          // --stream-ring: events kept to place reads in time
  int stream_warm_s = 30;           // --stream-warm: read again before counting starts, into the ring
  // --jetstream-url (bluesky): the stream a follower reads; "none": each account's feed instead.
  std::string jetstream_url = "wss://jetstream1.us-east.bsky.network";          // --follow-lease: a killed follower's accounts move on after this
  // --jetstream-dictionary FILE (bluesky): Jetstream's zstd dictionary, to read its stream
  // compressed (main.cpp reads and checks it); empty: uncompressed.
  std::string jetstream_dictionary;
};

struct ParsedCommandLine {
  std::optional<Options> options;  // set when the worker should run
  int exit_code = 0;               // otherwise: exit with this code...
  std::string out;                 // ...after printing this to stdout (--help)
  std::string err;                 // ...or this one line to stderr
};

ParsedCommandLine ParseCommandLine(int argc, const char* const argv[]);

// http(s)://host[:port][/path]; no user info, query or fragment. nullopt if invalid.
std::optional<ApiUrl> ParseApiUrl(std::string_view url);

}  // namespace tweetkeeper::worker
