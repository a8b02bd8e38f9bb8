// tweetkeeper-mock-api: a deterministic stand-in for X API v2 GET /2/tweets (see README.md).
// This file is only the edge: command line, sockets, signals, files. The logic is in tk_mock_core,
// where each network (X, Bluesky, Mastodon) registers its own routes (mock_api.hpp).
#include <dirent.h>
#include <httplib.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "archive/warc.hpp"  // Gzip(): the WARC writer's, one gzip member
#include "mock_api/engagement.hpp"
#include "mock_api/jetstream_server.hpp"
#include "mock_api/jetstream_zstd.hpp"
#include "mock_api/mastodon_endpoint.hpp"
#include "mock_api/mock_api.hpp"

namespace tweetkeeper::mock {
namespace {

// SHA-1 in hex.
std::string Sha1Hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha1(), nullptr) != 1)
    throw std::runtime_error("SHA-1 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) (out += kHex[md[i] >> 4]) += kHex[md[i] & 15];
  return out;
}

constexpr const char* kModelHelp = R"(
Deterministic model (same answers for the same id and time, on every run):
  created_at   from the Snowflake id: ms = (id >> 22) + 1288834974657, truncated to seconds.
  not found    id % D == 7 (D = --deleted-every), or created_at in the future.
  protected    id % P == 11 (P = --protected-every); "deleted" wins over "protected".
  edited       id % E == 5 (E = --edited-every, 0: none): edited a second after it was posted;
               its edit_history_tweet_ids is [id, id + (1000 << 22)], the newer id a tweet too.
  metrics      per-id ceiling K and time constant tau from a hash of the id;
               count = floor(K * (1 - exp(-age/tau))): grows with age, settles within days.
  order        data comes back in reverse request order; duplicate ids are answered once.
Faults (--fault-rate > 0): each /2/tweets request is drawn, from --fault-seed and its sequence
number, to get one of the --faults kinds:
  hang          never answer; let go when the client gives up, after --hang-ms, or at stop
  slow          the right answer, --slow-ms late
  drop          close the connection without an answer
  5xx           503 with an HTML or a JSON body, or 500
  truncated     a 200 whose JSON is cut in the middle
  content-type  a 200 with text/html and an HTML page
  huge          a 200 of 20 MiB: the answer behind a giant "padding" string; to a request that
                accepts gzip, the padding alone, compressed (some 90 KB) once at start
Quotas: fixed windows per token and endpoint (--rate-limit, --window-seconds): 429 Too Many
Requests; after --monthly-cap billed post reads in a UTC month (a post is billed once per UTC
day and token, as X bills), or after POST /mock/cap?token=T: 429
UsageCapExceeded (usage-capped) with the window's own x-rate-limit-remaining; after
POST /mock/revoke?token=T: 403 Forbidden. Both last until POST /mock/reset.
Endpoints: GET /2/tweets?ids=...; GET or POST (form body) /1.1/statuses/lookup.json?id=...&map=true
(v1.1 bodies: {"id":{"<id>":{tweet}|null}} or an array; errors {"errors":[{"code":..,"message":..}]}).
Test endpoints: GET /mock/stats (counts, faults, per-token statuses, 200s per window, billed reads),
POST /mock/reset, POST /mock/cap?token=T, POST /mock/revoke?token=T, GET /healthz,
GET /mock/truth (README.md, Engagement), POST /mock/jetstream/posts (text/plain, at:// URIs one a
line: the posts whose engagement the Jetstream streams), POST /mock/jetstream/drop, POST /mock/gone
(JSON: posts and accounts deleted, protected, suspended, deactivated, taken down or made private from
now on, on every network; README.md, Posts and accounts made gone).
X's batch compliance jobs: POST/GET /2/compliance/jobs, GET /2/compliance/jobs/:id; their signed
upload and download URLs on the storage host (--storage-port).)";

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// Set when the mock is stopping, so that connections held on purpose (hang, slow, latency) let go
// at once: the server's threads are joined on stop and must not sleep for minutes.
class StopFlag {
 public:
  void Set() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      set_ = true;
    }
    cv_.notify_all();
  }
  // Sleeps up to ms; true if the mock is stopping.
  bool WaitFor(int64_t ms) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(ms, 0)), [this] { return set_; });
  }
  bool IsSet() {
    std::lock_guard<std::mutex> lock(mutex_);
    return set_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool set_ = false;
};

// httplib serves one connection on one pool thread from start to end, so "this thread's previous
// request came from the same peer address and port" means "the connection is kept alive".
bool ReusedConnection(const httplib::Request& req) {
  thread_local std::string last_peer;
  std::string peer = req.remote_addr + " " + std::to_string(req.remote_port);
  const bool reused = peer == last_peer;
  last_peer = std::move(peer);
  return reused;
}

bool SameEndpoint(const sockaddr_storage& addr, socklen_t len, const std::string& host, int port) {
  char text[NI_MAXHOST];
  char serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, text, sizeof text, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  return host == text && port == std::atoi(serv);
}

// The accepted socket that carries req, found by its two addresses (httplib 0.11 does not hand
// handlers their socket); -1 if none. Only shutdown() and poll() are used on it: httplib owns it.
int FindClientSocket(const httplib::Request& req) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || end == entry->d_name || fd == dirfd(dir)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
      continue;
    }
    if (SameEndpoint(peer, peer_len, req.remote_addr, req.remote_port) &&
        SameEndpoint(local, local_len, req.local_addr, req.local_port)) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

// A hang: keeps the request unanswered until the client closes the connection (its timeout),
// hold_ms pass, or the mock stops.
void HoldUntilClientLeaves(int fd, int64_t hold_ms, StopFlag& stop) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(hold_ms);
  while (true) {
    const int64_t left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return;
    const int step = static_cast<int>(std::min<int64_t>(left, 100));
    if (fd < 0) {
      if (stop.WaitFor(step)) return;
      continue;
    }
    if (stop.IsSet()) return;
    // POLLRDHUP only: bytes the client might still send do not end the hang, its FIN does.
    pollfd p{fd, POLLRDHUP, 0};
    if (poll(&p, 1, step) > 0 && p.revents != 0) return;
  }
}

// CLI11 would read "-1" into a uint64_t as 2^64-1.
const CLI::Validator kWholeNumber(
    [](std::string& s) {
      return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos
                 ? std::string()
                 : "must be a whole number >= 0, got " + s;
    },
    "");

// A modulus M of a fate "key % M == r": 0 (off) or more than r. (Not a number: kWholeNumber says so.)
CLI::Validator OffOrAbove(uint64_t r) {
  return CLI::Validator(
      [r](std::string& value) {
        const bool digits =
            !value.empty() && value.size() < 20 && value.find_first_not_of("0123456789") == std::string::npos;
        return !digits || value == "0" || std::stoull(value) > r ? std::string()
                                                                 : "must be 0 or more than " + std::to_string(r);
      },
      "");
}

// What the command line sets beyond the model's MockConfig: the server and its logs.
struct EdgeOptions {
  std::string host = "127.0.0.1";
  int port = 8089;
  int jetstream_port = -1;  // --jetstream-port; -1: no Jetstream
  int storage_port = 0;     // --storage-port: the compliance jobs' storage host (0: any free port)
  std::string jetstream_dictionary;  // --jetstream-dictionary FILE; empty: one trained at start-up
  std::string engagement_file;  // --engagement
  int threads = 8;
  std::vector<std::string> tokens;
  std::vector<std::string> mastodon_host_specs;               // --mastodon-host HOST=PORT, as given
  std::vector<std::pair<std::string, int>> mastodon_servers;  // the same, read
  std::string fault_kinds = "all";
  int64_t gzip_every = 0;
  bool echo_authorization = false;
  std::string request_log_path;
  std::string answer_log_path;
  std::string log_level = "info";
};

void AddServerOptions(CLI::App& app, EdgeOptions& edge) {
  app.add_option("--host", edge.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", edge.port, "Port to listen on; 0 picks a free one")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(0, 65535));
  app.add_option("--threads", edge.threads, "Worker threads")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(1, 1024));
  app.add_option("--token", edge.tokens,
                 "Accepted bearer token; repeat for more. Without it any non-empty token is accepted");
  app.add_option("--mastodon-host", edge.mastodon_host_specs,
                 "HOST=PORT: also listen on PORT (same --host; 0 picks a free one) as Mastodon server HOST at "
                 "its root (/api/v1/statuses, /api/v2/instance), as /mastodon/HOST/ is served; repeatable")
      ->type_name("HOST=PORT");
  app.add_option("--jetstream-port", edge.jetstream_port,
                 "Serve Bluesky's Jetstream (GET /subscribe, a websocket) of the posting accounts on this port (0: any "
                 "free one; its own 'jetstream listening on ws://...' line); none without it")
      ->check(CLI::Range(0, 65535));
  app.add_option("--storage-port", edge.storage_port,
                 "Port of the storage host X's compliance jobs upload to and download from (signed URLs, no "
                 "token; 0: any free one; its own 'storage listening on http://...' line)")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(0, 65535));
  app.add_option("--jetstream-dictionary", edge.jetstream_dictionary,
                 "The zstd dictionary the Jetstream compresses with (compress=true) and GET "
                 "/mock/jetstream/dictionary serves; without it, one trained at start-up on the mock's own events")
      ->check(CLI::ExistingFile)
      ->type_name("FILE");
}

// Which posts are edited, deleted, protected, left out or refused (the deterministic model).
void AddModelOptions(CLI::App& app, MockConfig& config, EdgeOptions& edge) {
  app.add_option("--edited-every", config.edited_every,
                 "E: ids with id % E == 5 were edited a second later (/2/tweets edit_history_tweet_ids; 0 disables)")
      ->capture_default_str()
      ->check(kWholeNumber);
  app.add_option("--deleted-every", config.deleted_every, "D: ids with id % D == 7 are not found (0 disables)")
      ->capture_default_str()
      ->check(kWholeNumber);
  app.add_option("--protected-every", config.protected_every, "P: ids with id % P == 11 are protected (0 disables)")
      ->capture_default_str()
      ->check(kWholeNumber);
  app.add_option("--omitted-every", config.omitted_every,
                 "O: ids with id % O == 13 are left out of answers, neither found nor an error (0 disables)")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(OffOrAbove(13));  // id % O == 13 needs O > 13
  app.add_option("--bluesky-refused-every", config.bluesky_refused_every,
                 "R: at:// URIs whose record key's clock id % R == 5 make getPosts refuse the whole request "
                 "(400 \"uris/<i> must be a valid at-uri\"), as for a URI the AppView calls malformed (0 disables)")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(OffOrAbove(5));
  app.add_flag("--repost-count-alias", config.repost_count_alias,
               "Send public_metrics.repost_count instead of retweet_count (spec 2.167)");
  app.add_option("--engagement", edge.engagement_file,
                 "FILE of true curves, network,key,age_seconds,reposts,replies,likes,quotes,bookmarks,views per "
                 "line: the posts it names answer them, the others the model's (README.md, Engagement)");
}

void AddQuotaOptions(CLI::App& app, MockConfig& config) {
  app.add_option("--rate-limit", config.rate_limit, "Requests per window and token")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--window-seconds", config.window_seconds,
                 "Rate-limit window length; windows start at a token's first request")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--xrpc-rate-limit", config.xrpc_rate_limit,
                 "Bluesky's AppView: requests per 5-minute window, for every caller together (benchmarks raise it)")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--jetstream-rate", config.jetstream_rate,
                 "Jetstream: events per second of the network's other traffic (likes, reposts, posts, deletes on "
                 "posts nobody tracks), evenly spread (0: none)")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}));
  app.add_option("--follow-delete-every", config.follow_delete_every,
                 "Bluesky: one post in D of the posting accounts is deleted 5 s after it was made (0: none)");
  app.add_option("--follow-accounts", config.follow_accounts,
                 "Accounts that post, per network and per Mastodon server (X: mock_100000 on, Bluesky: "
                 "user0.bsky.social on; GET /mock/follow/accounts lists them)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{2000}));
  app.add_option("--follow-rate", config.follow_rate,
                 "Posts per second those accounts make between them, per network and per Mastodon server "
                 "(account k's share proportional to 1/(k+1))")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--compliance-rate-limit", config.compliance_rate_limit,
                 "X's compliance job endpoints: requests per window (--window-seconds) per token and endpoint")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--compliance-processing-ms", config.compliance_processing_ms,
                 "How long a compliance job is in_progress after its upload before it is complete (or failed)")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{0}, int64_t{86'400'000}));
  app.add_option("--compliance-upload-seconds", config.compliance_upload_seconds,
                 "How long a compliance job's upload URL lives; a job with nothing uploaded by then is expired")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--compliance-download-seconds", config.compliance_download_seconds,
                 "How long a compliance job's download URL lives, from the job's creation")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--monthly-cap", config.monthly_cap,
                 "Billed post reads per token and calendar month (UTC; a post once per UTC day); then "
                 "every request with it gets the usage-capped 429. 0: no cap")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
}

// How answers go out: compressed, late, or not at all (faults).
void AddDeliveryOptions(CLI::App& app, MockConfig& config, EdgeOptions& edge) {
  app.add_option("--gzip-every", edge.gzip_every,
                 "G: 1 in G answers of 200 to a request that accepts gzip goes gzip-compressed and chunked, "
                 "as real APIs' front ends send them (0: none; the WARC tests need both kinds)")
      ->capture_default_str()
      ->check(kWholeNumber);
  app.add_flag("--echo-authorization", edge.echo_authorization,
               "Answer every request 502 with an HTML page that echoes its Authorization header, as a "
               "misbehaving gateway might: every other one gzip-compressed and chunked, the others chunked "
               "with the token cut across two chunks (the WARC tests: no token may reach a file)");
  app.add_option("--latency-ms", config.faults.latency_ms, "Delay added to every /2/tweets request")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{0}, int64_t{3600000}));
  app.add_option("--fault-rate", config.faults.rate,
                 "Fraction (0 to 1) of /2/tweets requests that get a fault from --faults")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& s) {
            char* end = nullptr;
            const double v = std::strtod(s.c_str(), &end);
            return !s.empty() && *end == '\0' && std::isfinite(v) && v >= 0 && v <= 1
                       ? std::string()
                       : "must be a number from 0 to 1, got " + s;
          },
          "0..1"));
  app.add_option("--faults", edge.fault_kinds,
                 "Fault kinds to draw from, comma-separated: hang,slow,drop,5xx,truncated,content-type,huge or all")
      ->capture_default_str();
  app.add_option("--fault-seed", config.faults.seed,
                 "Seed of the fault draw: same seed, same faults per request number")
      ->capture_default_str()
      ->check(kWholeNumber);
  app.add_option("--hang-ms", config.faults.hang_ms,
                 "A hang lets go after this long even if the client does not give up first")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  app.add_option("--slow-ms", config.faults.slow_ms, "How late a slow fault answers")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}));
}

void AddLogOptions(CLI::App& app, EdgeOptions& edge) {
  app.add_option("--request-log", edge.request_log_path,
                 "Append '<epoch_ms> <status> <n_ids> <sha256(token)[:12] or -> [fault]' per /2/tweets request "
                 "(status 0: no answer)");
  app.add_option("--answer-log", edge.answer_log_path,
                 "Append '<hex SHA-1 of the body as sent> <status> <request target>' per answer of every route "
                 "(what a WARC's recorded bodies must match)");
  app.add_option("--log-level", edge.log_level, "debug logs one stderr line per request")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
}

// Reads the command line into `config` and `edge`. An exit code when the mock should not start
// (--help: 0; a usage error: 2, said on stderr).
std::optional<int> ParseCommandLine(int argc, char** argv, MockConfig& config, EdgeOptions& edge) {
  CLI::App app{"Deterministic mock of X API v2 GET /2/tweets for tweetkeeper's tests.", "tweetkeeper-mock-api"};
  AddServerOptions(app, edge);
  AddModelOptions(app, config, edge);
  AddQuotaOptions(app, config);
  AddDeliveryOptions(app, config, edge);
  AddLogOptions(app, edge);
  app.footer(kModelHelp);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "tweetkeeper-mock-api: " << e.what() << " (see --help)" << std::endl;
    return 2;
  }
  std::string fault_error;
  if (auto kinds = ParseFaultKinds(edge.fault_kinds, &fault_error)) {
    config.faults.kinds = *kinds;
  } else {
    std::cerr << "tweetkeeper-mock-api: " << fault_error << std::endl;
    return 2;
  }
  // Hangs hold server threads: half of them at most, so the rest keep answering (and /mock/stats).
  config.faults.max_hangs = std::max(1, edge.threads / 2);
  for (const std::string& spec : edge.mastodon_host_specs) {
    std::string error;
    const auto server = ParseMastodonHost(spec, &error);
    if (!server) {
      std::cerr << "tweetkeeper-mock-api: " << error << std::endl;
      return 2;
    }
    for (const auto& [host, port] : edge.mastodon_servers) {
      if (host == server->first) {
        std::cerr << "tweetkeeper-mock-api: --mastodon-host " << host << " is given twice" << std::endl;
        return 2;
      }
    }
    edge.mastodon_servers.push_back(*server);
  }
  if (!edge.engagement_file.empty()) {
    try {
      config.engagement = EngagementFile::Load(edge.engagement_file);
    } catch (const std::exception& e) {
      std::cerr << "tweetkeeper-mock-api: " << e.what() << std::endl;
      return 2;
    }
  }
  config.tokens.insert(edge.tokens.begin(), edge.tokens.end());
  if (config.tokens.count("") != 0) {
    std::cerr << "tweetkeeper-mock-api: --token must not be empty" << std::endl;
    return 2;
  }
  return std::nullopt;
}

// A file that lines are appended to from every server thread, flushed so tests can read it while
// the mock runs. Off (Write does nothing) without a path.
class LineLog {
 public:
  // False (said on stderr) when the file cannot be opened for appending.
  bool Open(const std::string& path, const char* option) {
    if (path.empty()) return true;
    out_.open(path, std::ios::app);
    if (!out_) {
      std::cerr << "tweetkeeper-mock-api: cannot open " << option << " " << path << " for appending" << std::endl;
      return false;
    }
    on_ = true;
    return true;
  }
  bool on() const { return on_; }
  void Write(const std::string& line) {
    if (!on_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    out_ << line << '\n' << std::flush;
  }

 private:
  std::ofstream out_;
  std::mutex mutex_;
  bool on_ = false;
};

// The edge between httplib and MockApi: each request becomes an HttpCall, and its HttpReply is
// sent as it says (late, compressed, or not at all).
class Edge {
 public:
  // `mastodon_host`: this edge's port is that Mastodon server's root ("": the mock's own port).
  // `huge_gzip`: the huge fault's answer as sent to a client that accepts gzip (null: none).
  // `storage`: this edge's port is the compliance jobs' storage host.
  Edge(MockApi& api, StopFlag& stop, int64_t gzip_every, bool echo_authorization, LineLog& answer_log,
       std::shared_ptr<const std::string> huge_gzip, std::string mastodon_host = "", bool storage = false)
      : api_(api), stop_(stop), gzip_every_(gzip_every), echo_authorization_(echo_authorization),
        answer_log_(answer_log), huge_gzip_(std::move(huge_gzip)), mastodon_host_(std::move(mastodon_host)),
        storage_(storage) {}

  httplib::Server::HandlerResponse Answer(const httplib::Request& req, httplib::Response& res) {
    const int64_t start_ms = NowMs();
    const HttpCall call{req.method, req.path, req.params, req.get_header_value("Authorization"), ReusedConnection(req),
                        req.body, req.get_header_value("Content-Type")};
    const HttpReply reply = storage_                 ? api_.HandleStorage(call, start_ms)
                            : mastodon_host_.empty() ? api_.Handle(call, start_ms)
                                                     : api_.HandleMastodonServer(mastodon_host_, call, start_ms);
    const FaultKind fault = reply.faults.kind;
    if (reply.faults.delay_ms > 0) stop_.WaitFor(reply.faults.delay_ms);
    if (reply.status == 0) {
      HangUp(req, res, reply);
      spdlog::debug("{} {}?{} -> {} (no answer) after {} ms", req.method, req.path,
                    httplib::detail::params_to_query_str(req.params), FaultKindName(fault), NowMs() - start_ms);
      return httplib::Server::HandlerResponse::Handled;
    }
    Send(req, res, reply);
    spdlog::debug("{} {}?{} -> {}{}{} in {} ms", req.method, req.path, httplib::detail::params_to_query_str(req.params),
                  reply.status, fault == FaultKind::kNone ? "" : " fault ",
                  fault == FaultKind::kNone ? "" : FaultKindName(fault), NowMs() - start_ms);
    return httplib::Server::HandlerResponse::Handled;
  }

 private:
  // A hang or a drop: close the connection without a byte of answer.
  void HangUp(const httplib::Request& req, httplib::Response& res, const HttpReply& reply) {
    const FaultKind fault = reply.faults.kind;
    const int fd = FindClientSocket(req);
    if (fault == FaultKind::kHang) {
      HoldUntilClientLeaves(fd, reply.faults.hold_ms, stop_);
      api_.HangEnded();
    }
    if (fd >= 0) {
      shutdown(fd, SHUT_RDWR);  // httplib's write of a response then fails and it closes the socket
    } else {
      // Not found (should not happen): headers, then a body that never comes.
      spdlog::warn("{}: cannot find the connection's socket; closing it after the headers", FaultKindName(fault));
      res.set_content_provider(1, "application/json", [](size_t, size_t, httplib::DataSink&) { return false; });
    }
  }

  // --echo-authorization: a gateway's error page that quotes the request's Authorization header,
  // gzip-compressed and chunked, or chunked with the header's value cut across the two chunks.
  void SendEcho(const httplib::Request& req, httplib::Response& res) {
    const std::string authorization = req.get_header_value("Authorization");
    const std::string page = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>"
                             "<p>The upstream refused the request with Authorization: " + authorization +
                             "</p></body></html>";
    const bool gzip = req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos &&
                      echoes_.fetch_add(1) % 2 == 0;
    auto body = std::make_shared<const std::string>(gzip ? worker::warc::Gzip(page) : page);
    const size_t cut = gzip ? body->size() / 2 : page.find(authorization) + authorization.size() / 2;
    res.status = 502;
    if (gzip) res.set_header("Content-Encoding", "gzip");
    res.set_chunked_content_provider("text/html", [body, cut](size_t offset, httplib::DataSink& sink) {
      if (offset == 0 && cut > 0) return sink.write(body->data(), cut);
      if (offset < body->size()) return sink.write(body->data() + offset, body->size() - offset);
      sink.done();
      return true;
    });
  }

  void Send(const httplib::Request& req, httplib::Response& res, const HttpReply& reply) {
    if (echo_authorization_ && req.path.rfind("/mock/", 0) != 0) return SendEcho(req, res);  // (its own routes answer)
    res.status = reply.status;
    for (const auto& [name, value] : reply.headers) res.set_header(name, value);
    const bool accepts_gzip = req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos;
    if (huge_gzip_ && accepts_gzip && reply.faults.kind == FaultKind::kHuge && reply.status == 200) {
      // A huge answer to a client that accepts gzip: the padding compressed once at start (some
      // 90 KB on the wire for 20 MiB decoded). A client's body limit, on the decoded bytes, is
      // then met at the speed of inflating, on any machine, never after its timeout on a slow or
      // busy one; and no answer waits for 20 MiB to be compressed.
      LogAnswer(reply.body, reply.status, req.target);
      res.set_header("Content-Encoding", "gzip");
      res.set_content(*huge_gzip_, reply.content_type.c_str());
      return;
    }
    if (gzip_every_ > 0 && reply.status == 200 && accepts_gzip && answers_to_gzip_.fetch_add(1) % gzip_every_ == 0) {
      // Compressed, in two chunks (Transfer-Encoding: chunked): a WARC keeps these bytes as they came.
      auto body = std::make_shared<const std::string>(worker::warc::Gzip(reply.body));
      LogAnswer(*body, reply.status, req.target);
      res.set_header("Content-Encoding", "gzip");
      res.set_chunked_content_provider(reply.content_type, [body](size_t offset, httplib::DataSink& sink) {
        const size_t half = body->size() / 2;
        if (offset == 0 && half > 0) return sink.write(body->data(), half);
        if (offset < body->size()) return sink.write(body->data() + offset, body->size() - offset);
        sink.done();
        return true;
      });
    } else {
      LogAnswer(reply.body, reply.status, req.target);
      res.set_content(reply.body, reply.content_type.c_str());
    }
  }

  void LogAnswer(const std::string& body, int status, const std::string& target) {
    if (answer_log_.on()) answer_log_.Write(Sha1Hex(body) + " " + std::to_string(status) + " " + target);
  }

  MockApi& api_;
  StopFlag& stop_;
  const int64_t gzip_every_;
  const bool echo_authorization_;
  LineLog& answer_log_;
  const std::shared_ptr<const std::string> huge_gzip_;
  const std::string mastodon_host_;
  const bool storage_;
  std::atomic<int64_t> answers_to_gzip_{0};
  std::atomic<int64_t> echoes_{0};
};

void ConfigureServer(httplib::Server& server, int threads) {
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server.set_keep_alive_max_count(1000);  // the real API keeps connections open; so should we
  // Without TCP_NODELAY, Nagle's algorithm and the client's delayed ACK hold each response on a
  // kept-alive connection for ~40 ms: the mock, not the worker, would set the benchmark's pace.
  server.set_tcp_nodelay(true);
  // httplib's default adds SO_REUSEPORT, which lets a second mock share a busy port silently.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

// Pre-routing sees requests before httplib reads a body, so a bare "curl -X POST" (no
// Content-Length) reaches /mock/reset instead of being refused with 400. The requests that have
// a body, POST /1.1/statuses/lookup.json (form: id=...&map=true) and POST /mock/jetstream/posts
// (at:// URIs, one a line), go to their routes below, which httplib calls with the body read (and
// a form's fields added to params). MockApi routes them all, per network.
bool FormOver8KiB(const httplib::Request& req) {
  const std::string length = req.get_header_value("Content-Length");
  return req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0 &&
         (length.size() > 4 || (!length.empty() && std::atol(length.c_str()) > 8192));
}

void RouteToEdge(httplib::Server& server, Edge& edge) {
  constexpr const char* kLookupPath = "/1.1/statuses/lookup.json";
  constexpr const char* kStreamedPath = "/mock/jetstream/posts";  // its body: at:// URIs, one a line
  constexpr const char* kJobsPath = "/2/compliance/jobs";          // its body: a JSON object
  constexpr const char* kGonePath = "/mock/gone";                  // its body: a JSON object
  server.set_pre_routing_handler([&edge, kLookupPath, kStreamedPath, kJobsPath, kGonePath](const httplib::Request& req,
                                                                                          httplib::Response& res) {
    if (req.method == "POST" && req.path == kJobsPath) return httplib::Server::HandlerResponse::Unhandled;
    if (req.method == "POST" && req.path == kGonePath) return httplib::Server::HandlerResponse::Unhandled;
    if (req.method == "POST" && req.path == kStreamedPath && FormOver8KiB(req)) {
      // httplib (a library built with its defaults) refuses a form-encoded body past 8 KiB with a
      // bare 413: say why. (curl --data-binary sends form-encoded unless told otherwise.)
      res.status = 413;
      res.set_content(R"j({"error":"send the URIs as Content-Type: text/plain (a form-encoded body is limited to 8 KiB)"})j",
                      "application/json");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "POST" && (req.path == kLookupPath || req.path == kStreamedPath))
      return httplib::Server::HandlerResponse::Unhandled;
    return edge.Answer(req, res);
  });
  server.Post(kLookupPath, [&edge](const httplib::Request& req, httplib::Response& res) { edge.Answer(req, res); });
  server.Post(kStreamedPath, [&edge](const httplib::Request& req, httplib::Response& res) { edge.Answer(req, res); });
  server.Post(kJobsPath, [&edge](const httplib::Request& req, httplib::Response& res) { edge.Answer(req, res); });
  server.Post(kGonePath, [&edge](const httplib::Request& req, httplib::Response& res) { edge.Answer(req, res); });
}

// The compliance jobs' storage host: every request is a signed URL's (compliance.hpp); an upload's
// body is read before it is answered.
void RouteStorage(httplib::Server& server, Edge& edge) {
  server.set_pre_routing_handler([&edge](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "PUT") return httplib::Server::HandlerResponse::Unhandled;
    return edge.Answer(req, res);
  });
  server.Put(R"(/.*)", [&edge](const httplib::Request& req, httplib::Response& res) { edge.Answer(req, res); });
}

// A port the mock listens on: its own, or a Mastodon server's root (--mastodon-host).
struct Listener {
  std::unique_ptr<httplib::Server> server;
  std::unique_ptr<Edge> edge;
  int port = 0;               // asked for; 0: any free one
  std::string mastodon_host;  // "": the mock's own port
  std::function<void(const std::string& url)> on_bound;  // the storage host: tells the API its URL
  std::string what;           // its "listening on" line's name, after tweetkeeper-mock-api ("": the mock's)
};

// Binds every listener (exit 1, said on stderr, if one cannot be), prints one "listening on"
// line each, the mock's own first, and serves until SIGTERM or SIGINT (blocked in every thread:
// `stop_signals`) or until one of them stops listening; the exit code.
int Listen(std::vector<Listener>& listeners, const std::string& address, StopFlag& stop,
           const sigset_t& stop_signals, JetstreamServer* jetstream) {
  std::string lines;
  for (Listener& l : listeners) {
    const int bound = l.port == 0 ? l.server->bind_to_any_port(address)
                                  : (l.server->bind_to_port(address, l.port) ? l.port : -1);
    const std::string what = l.what.empty() ? "" : " " + l.what;
    if (bound < 0) {
      std::cerr << "tweetkeeper-mock-api: cannot listen on " << address << ":" << l.port
                << (l.mastodon_host.empty() ? (l.on_bound ? " (--storage-port)" : "")
                                            : " (--mastodon-host " + l.mastodon_host + ")")
                << std::endl;
      return 1;
    }
    const std::string url = "http://" + address + ":" + std::to_string(bound);
    if (l.on_bound) l.on_bound(url);
    lines += "tweetkeeper-mock-api" + what + " listening on " + url + "\n";
  }
  if (jetstream) {
    lines += "tweetkeeper-mock-api jetstream listening on ws://" + address + ":" + std::to_string(jetstream->port()) + "\n";
  }
  // One write: whoever has read the first line can read them all.
  std::cout << lines << std::flush;
  std::thread jetstream_loop;
  if (jetstream) jetstream_loop = std::thread([jetstream] { jetstream->Run(); });

  std::atomic<size_t> listening{listeners.size()};
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    // Polls instead of blocking in sigwait so it can also end when a listener fails; stop() does
    // nothing until listen has started, so it is repeated until every loop is gone.
    const timespec tick{0, 50 * 1000 * 1000};
    bool stopping = false;
    while (!done) {
      stopping = sigtimedwait(&stop_signals, nullptr, &tick) > 0 || stopping || listening < listeners.size();
      if (stopping) {
        stop.Set();  // held connections let go, so stop() can join the servers' threads
        for (Listener& l : listeners) l.server->stop();
      }
    }
  });
  std::vector<char> clean(listeners.size(), 0);
  std::vector<std::thread> loops;
  for (size_t i = 0; i < listeners.size(); ++i) {
    loops.emplace_back([&, i] {
      clean[i] = listeners[i].server->listen_after_bind();
      --listening;
    });
  }
  for (std::thread& t : loops) t.join();
  done = true;
  waiter.join();
  if (jetstream) {
    jetstream->Stop();
    jetstream_loop.join();
  }
  spdlog::debug("stopped");
  return std::all_of(clean.begin(), clean.end(), [](char c) { return c != 0; }) ? 0 : 1;
}

void LogFaults(const FaultConfig& faults) {
  if (faults.rate <= 0) return;
  std::string names;
  for (FaultKind kind : faults.kinds) names += (names.empty() ? "" : ",") + std::string(FaultKindName(kind));
  spdlog::info(
      "faults: {} of /2/tweets requests, kinds {}, seed {}, hang up to {} ms, slow {} ms, at most {} hangs held",
      faults.rate, names, faults.seed, faults.hang_ms, faults.slow_ms, faults.max_hangs);
}

int Run(int argc, char** argv) {
  MockConfig config;
  EdgeOptions edge;
  if (const std::optional<int> exit_code = ParseCommandLine(argc, argv, config, edge)) return *exit_code;
  spdlog::set_default_logger(spdlog::stderr_logger_mt("mock-api"));
  spdlog::set_level(spdlog::level::from_str(edge.log_level));
  LogFaults(config.faults);

  LineLog request_log, answer_log;
  if (!request_log.Open(edge.request_log_path, "--request-log")) return 2;
  LogSink sink;
  if (request_log.on()) sink = [&request_log](const std::string& line) { request_log.Write(line); };
  MockApi api(config, sink);
  if (!answer_log.Open(edge.answer_log_path, "--answer-log")) return 2;

  // Blocked before any thread starts, so only the waiter in Listen ever receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // clients hang up mid-answer on purpose (huge, drop): not a reason to die
  StopFlag stop;

  // The huge fault's answer for clients that accept gzip, compressed before anything listens.
  std::shared_ptr<const std::string> huge_gzip;
  const auto& kinds = config.faults.kinds;
  if (config.faults.rate > 0 && std::find(kinds.begin(), kinds.end(), FaultKind::kHuge) != kinds.end()) {
    huge_gzip = std::make_shared<const std::string>(worker::warc::Gzip(HugeBody("{}", config.faults.huge_bytes)));
  }
  std::vector<Listener> listeners;
  auto add = [&](const std::string& mastodon_host, int port, bool storage) {
    Listener l;
    l.server = std::make_unique<httplib::Server>();
    ConfigureServer(*l.server, edge.threads);
    // (The storage host sends its objects as they are: no gzip, no gateway of --echo-authorization.)
    l.edge = std::make_unique<Edge>(api, stop, storage ? 0 : edge.gzip_every, !storage && edge.echo_authorization,
                                    answer_log, huge_gzip, mastodon_host, storage);
    if (storage) {
      RouteStorage(*l.server, *l.edge);
      l.on_bound = [&api](const std::string& url) { api.SetStorageUrl(url); };
      l.what = "storage";
    } else if (mastodon_host.empty()) {
      RouteToEdge(*l.server, *l.edge);
    } else {
      // Every request is the server's, whatever its method: no route of the mock's own here.
      Edge* answers = l.edge.get();
      l.server->set_pre_routing_handler(
          [answers](const httplib::Request& req, httplib::Response& res) { return answers->Answer(req, res); });
    }
    l.port = port;
    l.mastodon_host = mastodon_host;
    if (!mastodon_host.empty()) l.what = "mastodon " + mastodon_host;
    listeners.push_back(std::move(l));
  };
  add("", edge.port, false);
  for (const auto& [host, port] : edge.mastodon_servers) add(host, port, false);
  add("", edge.storage_port, true);
  std::unique_ptr<JetstreamServer> jetstream;
  if (edge.jetstream_port >= 0) {
    try {
      if (edge.jetstream_dictionary.empty()) {
        SetJetstreamDictionary(TrainJetstreamDictionary(config));
      } else {
        std::ifstream in(edge.jetstream_dictionary, std::ios::binary);
        try {
          SetJetstreamDictionary(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
        } catch (const std::exception& e) {
          throw std::runtime_error("--jetstream-dictionary " + edge.jetstream_dictionary + ": " + e.what());
        }
      }
      jetstream = std::make_unique<JetstreamServer>(config, edge.host, edge.jetstream_port);
    } catch (const std::exception& e) {
      std::cerr << "tweetkeeper-mock-api: " << e.what() << std::endl;
      return 1;
    }
  }
  return Listen(listeners, edge.host, stop, stop_signals, jetstream.get());
}

}  // namespace
}  // namespace tweetkeeper::mock

int main(int argc, char** argv) { return tweetkeeper::mock::Run(argc, argv); }
