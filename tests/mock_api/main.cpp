// tweetkeeper-mock-api: a deterministic stand-in for X API v2 GET /2/tweets (see README.md).
// This file is only the edge: command line, sockets, signals, files. The logic is in tk_mock_core.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>
#include <vector>

#include "mock_api/mock_api.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr const char* kModelHelp = R"(
Deterministic model (same answers for the same id and time, on every run):
  created_at   from the Snowflake id: ms = (id >> 22) + 1288834974657, truncated to seconds.
  not found    id % D == 7 (D = --deleted-every), or created_at in the future.
  protected    id % P == 11 (P = --protected-every); "deleted" wins over "protected".
  metrics      per-id ceiling K and time constant tau from a hash of the id;
               count = floor(K * (1 - exp(-age/tau))): grows with age, settles within days.
  order        data comes back in reverse request order; duplicate ids are answered once.
Test endpoints: GET /mock/stats, POST /mock/reset, GET /healthz.)";

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// CLI11 would read "-1" into a uint64_t as 2^64-1.
const CLI::Validator kWholeNumber(
    [](std::string& s) {
      return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos
                 ? std::string()
                 : "must be a whole number >= 0, got " + s;
    },
    "");

int Run(int argc, char** argv) {
  CLI::App app{"Deterministic mock of X API v2 GET /2/tweets for tweetkeeper's tests.", "tweetkeeper-mock-api"};
  MockConfig config;
  std::string host = "127.0.0.1";
  int port = 8089;
  int threads = 8;
  std::string request_log_path;
  std::string log_level = "info";
  std::vector<std::string> tokens;
  app.add_option("--host", host, "Address to listen on")->capture_default_str();
  app.add_option("--port", port, "Port to listen on; 0 picks a free one")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(0, 65535));
  app.add_option("--threads", threads, "Worker threads")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(1, 1024));
  app.add_option("--token", tokens,
                 "Accepted bearer token; repeat for more. Without it any non-empty token is accepted");
  app.add_option("--deleted-every", config.deleted_every, "D: ids with id % D == 7 are not found (0 disables)")
      ->capture_default_str()
      ->check(kWholeNumber);
  app.add_option("--protected-every", config.protected_every, "P: ids with id % P == 11 are protected (0 disables)")
      ->capture_default_str()
      ->check(kWholeNumber);
  app.add_flag("--repost-count-alias", config.repost_count_alias,
               "Send public_metrics.repost_count instead of retweet_count (spec 2.167)");
  app.add_option("--rate-limit", config.rate_limit, "Requests per window and token")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--window-seconds", config.window_seconds,
                 "Rate-limit window length; windows start at a token's first request")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--latency-ms", config.faults.latency_ms, "Delay added to every /2/tweets request")
      ->capture_default_str()
      ->check(kWholeNumber)
      ->check(CLI::Range(int64_t{0}, int64_t{3600000}));
  app.add_option("--request-log", request_log_path,
                 "Append '<epoch_ms> <status> <n_ids> <sha256(token)[:12] or ->' per /2/tweets request");
  app.add_option("--log-level", log_level, "debug logs one stderr line per request")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.footer(kModelHelp);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "tweetkeeper-mock-api: " << e.what() << " (see --help)" << std::endl;
    return 2;
  }
  config.tokens.insert(tokens.begin(), tokens.end());
  if (config.tokens.count("") != 0) {
    std::cerr << "tweetkeeper-mock-api: --token must not be empty" << std::endl;
    return 2;
  }

  spdlog::set_default_logger(spdlog::stderr_logger_mt("mock-api"));
  spdlog::set_level(spdlog::level::from_str(log_level));

  std::ofstream request_log;
  std::mutex request_log_mutex;
  LogSink sink;
  if (!request_log_path.empty()) {
    request_log.open(request_log_path, std::ios::app);
    if (!request_log) {
      std::cerr << "tweetkeeper-mock-api: cannot open --request-log " << request_log_path << " for appending"
                << std::endl;
      return 2;
    }
    sink = [&](const std::string& line) {
      std::lock_guard<std::mutex> lock(request_log_mutex);
      request_log << line << '\n' << std::flush;  // flushed so tests can read it while we run
    };
  }
  MockApi api(config, sink);

  // Blocked before any thread starts, so only the waiter below ever receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  httplib::Server server;
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
  // Pre-routing sees requests before httplib reads a body, so a bare "curl -X POST" (no
  // Content-Length) reaches /mock/reset instead of being refused with 400.
  server.set_pre_routing_handler([&api](const httplib::Request& req, httplib::Response& res) {
    const int64_t start_ms = NowMs();
    const HttpReply reply =
        api.Handle({req.method, req.path, req.params, req.get_header_value("Authorization")}, start_ms);
    if (reply.faults.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(reply.faults.delay_ms));
    res.status = reply.status;
    for (const auto& [name, value] : reply.headers) res.set_header(name, value);
    res.set_content(reply.body, reply.content_type.c_str());
    spdlog::debug("{} {}?{} -> {} in {} ms", req.method, req.path, httplib::detail::params_to_query_str(req.params),
                  reply.status, NowMs() - start_ms);
    return httplib::Server::HandlerResponse::Handled;
  });

  const int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    std::cerr << "tweetkeeper-mock-api: cannot listen on " << host << ":" << port << std::endl;
    return 1;
  }
  std::cout << "tweetkeeper-mock-api listening on http://" << host << ":" << bound << std::endl;

  std::atomic<bool> done{false};
  std::thread waiter([&] {
    // Polls instead of blocking in sigwait so it can also end when listening fails; stop() does
    // nothing until listen has started, so it is repeated until the loop is gone.
    const timespec tick{0, 50 * 1000 * 1000};
    bool stopping = false;
    while (!done) {
      stopping = stopping || sigtimedwait(&stop_signals, nullptr, &tick) > 0;
      if (stopping) server.stop();
    }
  });
  const bool clean = server.listen_after_bind();
  done = true;
  waiter.join();
  spdlog::debug("stopped");
  return clean ? 0 : 1;
}

}  // namespace
}  // namespace tweetkeeper::mock

int main(int argc, char** argv) { return tweetkeeper::mock::Run(argc, argv); }
