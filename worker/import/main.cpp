// tweetkeeper-import: tracks the tweet ids in files (or stdin) with schedule_tweets, in chunks,
// idempotently (a re-run skips what is tracked, so an interrupted import is resumed by running
// it again). Bad lines are reported with file, line number and reason while the good ones are
// imported; a progress bar on a terminal, plain lines otherwise; a summary at the end.
// Exit: 0 all imported, 1 database error, 2 bad usage or unreadable input, 3 some lines bad.

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <sys/stat.h>
#include <thread>
#include <unordered_set>

#include "cli/progress.hpp"
#include "dsn/dsn.hpp"
#include "ids/id_reader.hpp"
#include "queue/payload.hpp"

namespace im = tweetkeeper::importer;
using tweetkeeper::worker::ArrayLiteral;
using tweetkeeper::worker::TextArrayLiteral;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kExitDatabase = 1, kExitUsage = 2, kExitBadLines = 3;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

using tweetkeeper::worker::Thousands;

im::Format FormatOf(const std::string& option, const std::string& path) {
  if (option == "lines") return im::Format::kLines;
  if (option == "csv") return im::Format::kCsv;
  if (option == "jsonl") return im::Format::kJsonl;
  auto ends = [&](const char* suffix) {
    const std::string s(suffix);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".csv")) return im::Format::kCsv;
  if (ends(".jsonl") || ends(".ndjson") || ends(".json")) return im::Format::kJsonl;
  return im::Format::kLines;
}

struct Chunk {
  std::vector<std::int64_t> ids;             // Snowflake ids: schedule_tweets derives their time
  std::vector<im::Tweet> with_created;       // older ids: schedule_tweet(id, created_at)
  std::vector<std::string> urls;             // Bluesky and Mastodon posts: schedule_posts(urls)
  std::size_t size() const { return ids.size() + with_created.size() + urls.size(); }
};


// Sends chunks on `jobs` connections, each with a thread, so that reading the next chunk
// overlaps the database's work and the database inserts on several cores. Each chunk's ids are
// sorted: two chunks that share ids then lock them in the same order and cannot deadlock.
class Writer {
 public:
  Writer(const std::string& dsn, int jobs) {
    for (int i = 0; i < jobs; ++i) conns_.push_back(std::make_unique<pqxx::connection>(dsn));
    for (auto& c : conns_) threads_.emplace_back([this, &c] { Loop(*c); });
  }
  ~Writer() { Finish(); }

  void Send(Chunk chunk) {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return queue_.size() < conns_.size() + 1 || !error_.empty(); });
    if (!error_.empty()) return;
    queue_.push_back(std::move(chunk));
    ready_.notify_one();
  }
  void Finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  std::uint64_t added() const { return added_; }
  std::uint64_t sent() const { return sent_; }
  std::string error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  void Loop(pqxx::connection& conn) {
    for (;;) {
      Chunk chunk;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        chunk = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        std::sort(chunk.ids.begin(), chunk.ids.end());
        pqxx::work tx(conn);
        std::uint64_t n = 0;
        if (!chunk.ids.empty()) {
          n += tx.exec_params1("SELECT tweetkeeper.schedule_tweets($1::bigint[])", ArrayLiteral(chunk.ids))[0]
                   .as<std::uint64_t>();
        }
        if (!chunk.urls.empty()) {
          std::sort(chunk.urls.begin(), chunk.urls.end());  // the same lock order in every chunk
          n += tx.exec_params1("SELECT tweetkeeper.schedule_posts($1::text[])", TextArrayLiteral(chunk.urls))[0]
                   .as<std::uint64_t>();
        }
        if (!chunk.with_created.empty()) {
          std::vector<std::int64_t> ids;
          std::string times = "{";
          for (const im::Tweet& t : chunk.with_created) {
            ids.push_back(t.id);
            if (times.size() > 1) times += ',';
            times += "\"" + std::to_string(*t.created_at_ms / 1000.0) + "\"";
          }
          times += '}';
          n += tx.exec_params1(
                      "SELECT count(*) FILTER (WHERE tweetkeeper.schedule_tweet(x.id, to_timestamp(x.s))) "
                      "FROM unnest($1::bigint[], $2::double precision[]) AS x(id, s)",
                      ArrayLiteral(ids), times)[0]
                   .as<std::uint64_t>();
        }
        tx.commit();
        added_ += n;
        sent_ += chunk.size();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error_.empty()) error_ = e.what();
        queue_.clear();
        room_.notify_all();
        return;
      }
      room_.notify_all();
    }
  }

  std::vector<std::unique_ptr<pqxx::connection>> conns_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<Chunk> queue_;
  bool done_ = false;
  std::string error_;
  std::atomic<std::uint64_t> added_{0}, sent_{0};
  std::vector<std::thread> threads_;
};


}  // namespace

int main(int argc, char** argv) {
  std::string dsn, format = "auto", column = "id";
  std::vector<std::string> files;
  std::size_t chunk_size = 50'000;
  std::uint64_t max_errors = 0;
  int progress_every = 5;
  int jobs = 2;
  CLI::App app{"tweetkeeper-import: tracks the tweet ids in files (or stdin) with tweetkeeper.schedule_tweets.",
               "tweetkeeper-import"};
  app.footer(
      "Formats: lines (one id per line), csv (a header with the --column of ids; a created_at column is used for "
      "ids from before Snowflake), jsonl (tweets as the X API and twarc2 write them: one per line, or a response "
      "page {\"data\": [...]} per line; \"id\" and \"created_at\"). An X post's URL may stand for its id "
      "(https://x.com/<user>/status/<id>; in JSON as \"url\" or \"uri\"). auto picks by extension: .csv, .jsonl/.ndjson/"
      ".json, else lines. A re-run skips what is tracked. Exit: 0 all imported, 1 database error, 2 bad usage or "
      "unreadable input, 3 some lines were bad (the others imported).");
  app.add_option("--dsn", dsn, "PostgreSQL connection (libpq conninfo or URI); the role needs tweetkeeper_admin")
      ->required();
  app.add_option("--format", format, "lines, csv, jsonl or auto")->check(CLI::IsMember({"auto", "lines", "csv", "jsonl"}))
      ->capture_default_str();
  app.add_option("--column", column, "The CSV column with the ids")->capture_default_str();
  app.add_option("--chunk-size", chunk_size, "Ids per transaction")->check(CLI::Range(1, 1'000'000))->capture_default_str();
  app.add_option("--jobs", jobs, "Database connections inserting at once")->check(CLI::Range(1, 16))->capture_default_str();
  app.add_option("--max-errors", max_errors, "Stop after this many bad lines (0: never)")->capture_default_str();
  app.add_option("--progress-interval", progress_every, "Seconds between progress lines when not on a terminal")
      ->check(CLI::Range(1, 3600))->capture_default_str();
  app.add_option("files", files, "Files to read; none or - reads stdin");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tweetkeeper-import: " << e.what() << " (see --help)" << std::endl;
    return kExitUsage;
  }
  if (auto error = tweetkeeper::worker::DsnError(dsn)) {
    std::cerr << "tweetkeeper-import: --dsn is not a valid libpq connection string or URI: " << *error << std::endl;
    return kExitUsage;
  }
  if (files.empty()) files.push_back("-");
  std::uint64_t total_bytes = 0;
  for (const std::string& f : files) {
    if (f == "-") {
      total_bytes = 0;  // unknown
      break;
    }
    struct stat st {};
    if (stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      std::cerr << "tweetkeeper-import: cannot read " << f << ": not a readable file" << std::endl;
      return kExitUsage;
    }
    total_bytes += static_cast<std::uint64_t>(st.st_size);
  }

  std::unique_ptr<Writer> writer;
  try {
    writer = std::make_unique<Writer>(dsn, jobs);
  } catch (const std::exception& e) {
    std::cerr << "tweetkeeper-import: cannot connect to the database: "
              << tweetkeeper::worker::RedactDsnSecrets(e.what(), dsn) << std::endl;
    return kExitDatabase;
  }

  tweetkeeper::worker::Progress progress("tweetkeeper-import", "ids", "ids read", total_bytes,
                                        isatty(STDERR_FILENO) != 0, std::chrono::seconds(progress_every));
  const auto started = Clock::now();
  std::uint64_t bytes = 0, read_ids = 0, bad = 0, repeated = 0;
  bool stopped = false;
  Chunk chunk;
  std::unordered_set<std::int64_t> in_chunk;
  std::unordered_set<std::string> in_chunk_urls;
  auto flush = [&] {
    if (chunk.size() == 0) return;
    writer->Send(std::move(chunk));
    chunk = Chunk{};
    in_chunk.clear();
    in_chunk_urls.clear();
  };
  for (const std::string& f : files) {
    std::ifstream file;
    if (f != "-") {
      file.open(f);
      if (!file) {
        std::cerr << "tweetkeeper-import: cannot open " << f << std::endl;
        return kExitUsage;
      }
    }
    std::istream& in = f == "-" ? std::cin : file;
    const std::string name = f == "-" ? "stdin" : f;
    im::IdReader reader(FormatOf(format, f), column);
    std::string line;
    std::uint64_t number = 0;
    const std::int64_t now_ms = NowMs();
    while (!stopped && std::getline(in, line)) {
      ++number;
      bytes += line.size() + 1;
      const im::LineResult r = reader.Parse(line, now_ms);
      if (!reader.usable()) {
        std::cerr << "tweetkeeper-import: " << name << ":" << number << ": " << r.error << std::endl;
        flush();
        writer->Finish();
        return kExitUsage;
      }
      if (!r.error.empty()) {
        ++bad;
        std::cerr << "tweetkeeper-import: " << name << ":" << number << ": " << r.error << std::endl;
        if (max_errors && bad >= max_errors) {
          std::cerr << "tweetkeeper-import: stopping after " << bad << " bad lines (--max-errors)" << std::endl;
          stopped = true;
        }
        continue;
      }
      for (const im::Tweet& t : r.tweets) {
        ++read_ids;
        if (!t.url.empty()) {
          if (!in_chunk_urls.insert(t.url).second) {
            ++repeated;
            continue;
          }
          chunk.urls.push_back(t.url);
          if (chunk.size() >= chunk_size) flush();
          continue;
        }
        if (!in_chunk.insert(t.id).second) {
          ++repeated;
          continue;
        }
        if (im::SnowflakeMs(t.id)) chunk.ids.push_back(t.id);
        else chunk.with_created.push_back(t);
        if (chunk.size() >= chunk_size) flush();
      }
      progress.Update(bytes, read_ids);
      if (!writer->error().empty()) break;
    }
    if (in.bad()) {
      std::cerr << "tweetkeeper-import: error reading " << name << std::endl;
      stopped = true;
    }
    if (!writer->error().empty() || stopped) break;
  }
  flush();
  writer->Finish();
  progress.Update(bytes, read_ids, true);
  const std::string db_error = writer->error();
  if (!db_error.empty()) {
    std::cerr << "tweetkeeper-import: database error (the chunks before were imported; run again to resume): "
              << tweetkeeper::worker::RedactDsnSecrets(db_error, dsn) << std::endl;
  }
  const double secs = std::chrono::duration<double>(Clock::now() - started).count();
  const std::uint64_t added = writer->added();
  const std::uint64_t already = writer->sent() - added + repeated;
  std::cerr << fmt::format("tweetkeeper-import: {} ids read: {} new, {} already tracked, {} bad lines; {:.1f} s, {} ids/s",
                           Thousands(read_ids), Thousands(added), Thousands(already), Thousands(bad), secs,
                           Thousands(static_cast<std::uint64_t>(secs > 0 ? static_cast<double>(read_ids) / secs : 0)))
            << std::endl;
  if (!db_error.empty()) return kExitDatabase;
  return bad > 0 ? kExitBadLines : 0;
}
