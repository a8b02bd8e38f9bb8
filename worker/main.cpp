// tweetkeeper-worker: command line, logging, signals; the loop itself is runner/runner.cpp.

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <thread>
#include <utility>

#include "archive/warc.hpp"
#include "cli/options.hpp"
#include "compliance/compliance_runner.hpp"
#include "http/http_client.hpp"
#include "credentials/credentials.hpp"
#include "provider/factory.hpp"
#include "dsn/dsn.hpp"
#include "follow/follower.hpp"
#include "stream/stream_reader.hpp"
#include "runner/runner.hpp"
#include "warc/purge_run.hpp"
#include "zstd/frame_decoder.hpp"

namespace tk = tweetkeeper::worker;

namespace {

std::string DefaultName() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "localhost");
  return std::string(host) + ":" + std::to_string(getpid());
}

int Fail(int code, const std::string& line) {
  std::cerr << "tweetkeeper-worker: " << line << std::endl;
  return code;
}

// Signals are taken by one thread with sigwait, so that they can do more than set a flag:
// the first asks for a graceful stop, the second aborts requests, the third exits at once.
// SIGUSR2 is our own "we are done" wake-up for this thread.
class SignalThread {
 public:
  explicit SignalThread(tk::StopSignal& stop) : stop_(stop) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~SignalThread() {
    done_ = true;
    pthread_kill(thread_.native_handle(), SIGUSR2);
    thread_.join();
  }

  static sigset_t Set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR2);
    return set;
  }

 private:
  void Loop() {
    const sigset_t set = Set();
    int count = 0;
    std::optional<std::chrono::steady_clock::time_point> last;
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (done_) return;
      if (sig == SIGUSR2) continue;
      // `timeout`, and some supervisors, signal the process and its group at once: one event.
      const auto now = std::chrono::steady_clock::now();
      if (last && now - *last < std::chrono::milliseconds(300)) continue;
      last = now;
      const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
      switch (++count) {
        case 1:
          spdlog::info("{} received: claiming nothing new, finishing batches in flight (send again to abort them)",
                       name);
          stop_.RequestStop();
          break;
        case 2:
          spdlog::warn("{} received again: aborting requests in flight and handing their batches back", name);
          stop_.RequestAbort();
          break;
        default:
          spdlog::error("{} received a third time: exiting now; unfinished leases will expire", name);
          spdlog::shutdown();
          std::_Exit(1);
      }
    }
  }

  tk::StopSignal& stop_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Prometheus metrics at --metrics-address, when given; an exit code when they cannot be served.
std::optional<int> ServeMetrics(tk::Telemetry& telemetry, const std::string& address) {
  if (address.empty()) return std::nullopt;
  try {
    const int port = telemetry.Serve(address);
    spdlog::info("metrics at http://{}:{}/metrics", address.substr(0, address.rfind(':')), port);
  } catch (const std::exception& e) {
    return Fail(tk::kExitRuntime, e.what());
  }
  return std::nullopt;
}

// --warc-dir: every API exchange recorded there (first the files a killed worker of this host
// left open are finished); an exit code when the directory cannot be written into.
std::optional<int> RecordExchanges(const tk::Options& o, tk::RunnerOptions& ro) {
  struct stat st {};
  if (stat(o.warc_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || access(o.warc_dir.c_str(), W_OK | X_OK) != 0)
    return Fail(tk::kExitUsage, "--warc-dir " + o.warc_dir + " is not a directory this worker can write into");
  const int recovered = tk::warc::Writer::Recover(o.warc_dir);
  if (recovered > 0) spdlog::info("WARC: finished {} file(s) a stopped worker left open in {}", recovered, o.warc_dir);
  tk::warc::WriterOptions wo;
  wo.dir = o.warc_dir;
  wo.rollover = std::chrono::seconds(o.warc_rollover_s);
  wo.max_bytes = static_cast<std::uint64_t>(o.warc_max_mb) * 1'000'000;
  for (const auto& [name, token] : ro.tokens)
    if (!token.empty()) wo.secrets.push_back(token);
  ro.http.recorder = std::make_shared<tk::warc::Recorder>(wo);
  spdlog::info("WARC: recording every API exchange in {} (a new file every {} s or {} MB)", o.warc_dir,
               o.warc_rollover_s, o.warc_max_mb);
  return std::nullopt;
}

// --warc-purge-interval: the posts found gone removed from the closed files of --warc-dir (as
// tweetkeeper-warc purge does) at start and then every so often, in a thread of their own; the
// destructor stops it (after the purge in progress, if any).
class PurgeThread {
 public:
  // (Does nothing when `request` has no directory.)
  PurgeThread(tk::warc::PurgeRequest request, std::chrono::seconds interval)
      : request_(std::move(request)), interval_(interval) {
    if (!request_.dir.empty()) thread_ = std::thread([this] { Loop(); });
  }
  ~PurgeThread() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      lock.unlock();
      const tk::warc::PurgeOutcome outcome = tk::warc::RunPurge(request_);
      for (const std::string& line : outcome.lines)
        if (outcome.exit_code == 0) spdlog::info("WARC purge: {}", line);
        else spdlog::warn("WARC purge: {}", line);
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stop_; });
    }
  }

  tk::warc::PurgeRequest request_;
  std::chrono::seconds interval_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// What the worker's purge does (PurgeThread): no directory when there is none; an exit code when
// --warc-purge-dsn-file cannot be used.
std::optional<int> PurgeRequestOf(const tk::Options& o, tk::warc::PurgeRequest* request) {
  if (o.warc_dir.empty() || o.warc_purge_interval_s <= 0) return std::nullopt;
  request->dsns = o.dsns.size() > 1 ? o.dsns : std::vector<std::string>{o.dsn};
  if (!o.warc_purge_dsn_file.empty()) {
    std::string error;
    const std::optional<std::string> dsn = tk::ChosenDsn("", false, o.warc_purge_dsn_file, &error);
    if (!dsn) return Fail(tk::kExitUsage, "--warc-purge-dsn-file: " + error);
    request->dsns = {*dsn};
  }
  request->dir = o.warc_dir;
  return std::nullopt;
}

// --jetstream-dictionary, read once (false: refused, said on stderr): the follower's and the
// stream reader's.
bool JetstreamDictionary(const tk::Options& o, std::shared_ptr<const tk::zstd::Dictionary>* dictionary) {
  if (o.jetstream_dictionary.empty()) return true;
  std::string why;
  *dictionary = tk::zstd::Dictionary::LoadFile(o.jetstream_dictionary, &why);
  if (!*dictionary) {
    Fail(tk::kExitUsage, "--jetstream-dictionary " + why);
    return false;
  }
  spdlog::info("Jetstream: compressed, with zstd dictionary {} from {}", (*dictionary)->id(), o.jetstream_dictionary);
  return true;
}

// --follow: a follower of accounts instead of the refreshing slots (follow/follower.hpp). It shares
// the worker's connection string, credentials, HTTP client, WARC recording, metrics and signals.
int Follow(const tk::Options& o, tk::RunnerOptions ro) {
  tk::Telemetry telemetry(o.name, o.provider);
  tk::StopSignal stop;
  tk::follow::FollowerOptions fo;
  fo.name = o.name;
  fo.dsn = o.dsn;
  fo.provider = o.provider;
  fo.api_url = o.api.base;
  fo.instances = o.instances;
  fo.allow_private_hosts = o.allow_private_hosts;
  fo.tokens = std::move(ro.tokens);
  fo.http = ro.http;
  fo.max_accounts = o.follow_max_accounts;
  fo.min_poll = tk::follow::Millis(static_cast<std::int64_t>(o.follow_min_poll_s * 1000));
  fo.max_poll = tk::follow::Millis(static_cast<std::int64_t>(o.follow_max_poll_s * 1000));
  fo.share = o.follow_share;
  fo.lease_seconds = o.follow_lease_s;
  // (A network with a stream subscribes to it: follow/reader.hpp Streams.)
  if (o.jetstream_url != "none") fo.jetstream_url = o.jetstream_url;
  if (!JetstreamDictionary(o, &fo.jetstream_dictionary)) return tk::kExitUsage;
  fo.exit_when_idle = std::chrono::seconds(o.exit_when_idle_s);
  tk::follow::Follower follower(std::move(fo), telemetry, stop);
  if (const std::optional<int> failed = ServeMetrics(telemetry, o.metrics_address)) return *failed;
  SignalThread signals(stop);
  try {
    if (!follower.Connect(std::chrono::seconds(o.startup_timeout_s))) return 0;
  } catch (const std::exception& e) {
    return Fail(tk::kExitRuntime, e.what());
  }
  return follower.Run();
}

// --stream-counts: the stream's reader instead of the refreshing slots (stream/stream_reader.hpp).
int StreamCounts(const tk::Options& o) {
  tk::StopSignal stop;
  tk::stream::StreamOptions so;
  so.name = o.name;
  so.dsn = o.dsn;
  so.jetstream_url = o.jetstream_url;
  so.flush = std::chrono::milliseconds(static_cast<std::int64_t>(o.stream_flush_s * 1000));
  so.ring_us = static_cast<std::int64_t>(o.stream_ring_s) * 1'000'000;
  so.warm_us = static_cast<std::int64_t>(o.stream_warm_s) * 1'000'000;
  so.exit_when_idle = std::chrono::seconds(o.exit_when_idle_s);
  if (!JetstreamDictionary(o, &so.jetstream_dictionary)) return tk::kExitUsage;
  tk::stream::StreamReader reader(std::move(so), stop);
  SignalThread signals(stop);
  try {
    if (!reader.Connect(std::chrono::seconds(o.startup_timeout_s))) return 0;
    return reader.Run();
  } catch (const std::exception& e) {
    return Fail(tk::kExitRuntime, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The token out of the environment before anything else runs (its bytes too: unsetenv leaves
  // them in /proc/PID/environ), whichever provider this worker is for: a Bluesky or Mastodon
  // worker, or one given --credentials, does not read it, and must not keep it either.
  tk::CredentialsOrError env_credentials = tk::CredentialsFromEnv();
  // Every batch allocates and frees answers of tens of kilobytes (hundreds with payloads on, more
  // with WARC records) in each slot's thread; glibc gives a thread arena's free top back to the
  // kernel (madvise) at nearly every such free: 1.2 s of system time per 1,000 recorded batches,
  // measured with strace -c. Keep up to 64 MiB free per arena instead.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 16 << 20);
  tk::ParsedCommandLine parsed = tk::ParseCommandLine(argc, argv);
  if (!parsed.options) {
    std::cout << parsed.out;
    if (!parsed.err.empty()) std::cerr << parsed.err << std::endl;
    return parsed.exit_code;
  }
  tk::Options& o = *parsed.options;

  // Bluesky's public AppView takes no token: none is asked for. Mastodon servers mostly take
  // none either: the credentials file, if given, holds tokens per server (host=token).
  tk::CredentialsOrError creds = o.provider == "bluesky" ? tk::CredentialsOrError{tk::Credentials{{"", ""}}, ""}
                                 : !o.credentials_file.empty() ? tk::LoadCredentials(o.credentials_file)
                                 : o.provider == "mastodon"    ? tk::CredentialsOrError{tk::Credentials{}, ""}
                                                               : std::move(env_credentials);
  if (!creds.ok()) return Fail(tk::kExitUsage, creds.error);  // one line, never a token
  std::string dsn_error;
  if (auto dsn = tk::ChosenDsn(o.dsn, o.dsn_given, o.dsn_file, &dsn_error))
    o.dsn = *dsn;
  else
    return Fail(tk::kExitUsage, dsn_error);
  if (o.name.empty()) o.name = DefaultName();

  auto logger = spdlog::stderr_color_mt("tweetkeeper-worker");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
  logger->set_level(spdlog::level::from_str(o.log_level));
  spdlog::set_default_logger(logger);

  // Before any thread exists (libpq, curl resolver, slots), so they all inherit the mask and
  // the signals reach only the SignalThread.
  sigset_t set = SignalThread::Set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a peer closing a socket must not kill the worker

  // X's workers send a bearer token with every request (Bluesky's and Mastodon's send none or
  // their servers' own, to https:// hosts of post URLs).
  if (o.provider.rfind("x-", 0) == 0)
    if (auto warning = tk::CleartextWarning(o.api)) spdlog::warn("{}", *warning);

  try {
    tk::CurlGlobal curl;
    tk::RunnerOptions ro;
    ro.name = o.name;
    ro.dsn = o.dsn;
    if (o.dsns.size() > 1) ro.partitions = o.dsns;
    ro.tokens = std::move(*creds.credentials);
    ro.provider = o.provider;
    ro.api_url = o.api.base;
    ro.concurrency = o.concurrency;
    ro.batch_size = o.batch_size;
    ro.poll_interval = tk::Millis(o.poll_interval_ms);
    ro.exit_when_idle = std::chrono::seconds(o.exit_when_idle_s);
    ro.http.total_timeout = std::chrono::seconds(o.http_timeout_s);
    ro.http.connect_timeout = std::chrono::seconds(std::min(10, o.http_timeout_s));
    ro.startup_timeout = std::chrono::seconds(o.startup_timeout_s);
    if (!o.warc_dir.empty())
      if (const std::optional<int> failed = RecordExchanges(o, ro)) return *failed;
    tk::warc::PurgeRequest purge_request;
    if (const std::optional<int> failed = PurgeRequestOf(o, &purge_request)) return *failed;
    PurgeThread purge(std::move(purge_request), std::chrono::seconds(o.warc_purge_interval_s));
    if (o.follow) return Follow(o, std::move(ro));
    if (o.stream_counts) return StreamCounts(o);
    tk::compliance::ComplianceOptions co;
    if (o.provider == "x-v2" && o.compliance) {
      co.name = o.name;
      co.dsns = o.dsns.size() > 1 ? o.dsns : std::vector<std::string>{o.dsn};
      co.api_url = o.api.base;
      co.tokens = ro.tokens;
      co.http = ro.http;
      co.poll = std::chrono::seconds(o.compliance_poll_s);
      co.max_ids = o.compliance_max_ids;
      co.allow_private_hosts = o.allow_private_hosts;
    }
    tk::Runner runner(ro, tk::MakeProvider(o.provider, o.api.base, o.instances, o.allow_private_hosts));
    if (const std::optional<int> failed = ServeMetrics(runner.telemetry(), o.metrics_address)) return *failed;
    SignalThread signals(runner.stop_signal());  // a signal also ends the wait for the database
    try {
      if (!runner.Connect()) return 0;
    } catch (const std::exception& e) {
      return Fail(tk::kExitRuntime, e.what());
    }
    // X's compliance jobs beside the slots, until they stop.
    std::thread compliance;
    if (!co.tokens.empty())
      compliance = std::thread([&co, &runner] { tk::compliance::ComplianceRunner(co, runner.stop_signal()).Run(); });
    const int rc = runner.Run();
    runner.stop_signal().RequestStop();
    if (compliance.joinable()) compliance.join();
    return rc;
  } catch (const std::exception& e) {
    return Fail(tk::kExitRuntime, e.what());
  }
}
