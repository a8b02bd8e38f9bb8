// tweetkeeper-import: tracks the tweet ids in files (or stdin) with schedule_tweets, in chunks,
// idempotently (a re-run skips what is tracked, so an interrupted import is resumed by running
// it again). Bad lines are reported with file, line number and reason while the good ones are
// imported; a progress bar on a terminal, plain lines otherwise; a summary at the end.
// Exit: 0 all imported, 1 database error, 2 bad usage or unreadable input, 3 some lines bad.

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
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
#include <thread>
#include <unordered_set>

#include "cli/progress.hpp"
#include "cli/tool_command_line.hpp"
#include "dsn/dsn.hpp"
#include "ids/id_reader.hpp"
#include "import/dataset_import.hpp"
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
  std::vector<std::int64_t> ids;        // Snowflake ids: schedule_tweets derives their time
  std::vector<im::Tweet> with_created;  // older ids: schedule_tweet(id, created_at)
  std::vector<std::string> urls;        // Bluesky and Mastodon posts: schedule_posts(urls)
  std::size_t size() const { return ids.size() + with_created.size() + urls.size(); }
};

// Sends chunks on `jobs` connections, each with a thread, so that reading the next chunk
// overlaps the database's work and the database inserts on several cores. Each chunk's ids are
// sorted: two chunks that share ids then lock them in the same order and cannot deadlock.
class Writer {
 public:
  // collection: when not empty, every post read joins it (tweetkeeper.collect), in the chunk's
  // transaction.
  Writer(const std::string& dsn, int jobs, std::string collection) : collection_(std::move(collection)) {
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
        if (!collection_.empty()) {
          std::vector<std::int64_t> ids = chunk.ids;
          for (const im::Tweet& t : chunk.with_created) ids.push_back(t.id);
          if (!ids.empty())
            tx.exec_params("SELECT tweetkeeper.collect($1, $2::bigint[])", collection_, ArrayLiteral(ids));
          if (!chunk.urls.empty())
            tx.exec_params("SELECT tweetkeeper.collect_posts($1, $2::text[])", collection_, TextArrayLiteral(chunk.urls));
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

  const std::string collection_;
  std::vector<std::unique_ptr<pqxx::connection>> conns_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<Chunk> queue_;
  bool done_ = false;
  std::string error_;
  std::atomic<std::uint64_t> added_{0}, sent_{0};
  std::vector<std::thread> threads_;
};

struct Options {
  std::string dsn, dsn_file, format = "auto", column = "id", collection, dataset;
  int wait_read = 0;
  std::vector<std::string> files;
  std::size_t chunk_size = 50'000;
  std::uint64_t max_errors = 0;
  int progress_every = 5;
  int jobs = 2;
};

// The command line, checked (no file: stdin). An exit code when the import should not run.
std::optional<int> ParseOptions(int argc, char** argv, Options& o) {
  CLI::App app{"tweetkeeper-import: tracks the tweet ids in files (or stdin) with tweetkeeper.schedule_tweets.",
               "tweetkeeper-import"};
  app.footer(
      "Formats: lines (one id per line), csv (a header with the --column of ids; a created_at column is used for "
      "ids from before Snowflake), jsonl (tweets as the X API and twarc2 write them: one per line, or a response "
      "page {\"data\": [...]} per line; \"id\" and \"created_at\"). An X post's URL may stand for its id "
      "(https://x.com/<user>/status/<id>; in JSON as \"url\" or \"uri\"). auto picks by extension: .csv, "
      ".jsonl/.ndjson/"
      ".json, else lines. A re-run skips what is tracked. --dataset DIR: a dataset of tweetkeeper-export --format "
      "dataset, checked against its SHA256SUMS and read whole first (a mismatch, a missing file or a bad line: "
      "exit 2, nothing imported), then in one transaction every post it names scheduled and put into a collection "
      "(the datasheet's name unless --collection) and its history.csv stored as their history "
      "(tweetkeeper.import_history); --wait-read then says how many were read again. Exit: 0 all imported, 1 "
      "database error, 2 bad usage or unreadable input, 3 some lines were bad (the others imported).");
  tweetkeeper::worker::AddDsnOptions(app, o.dsn, o.dsn_file, "tweetkeeper_admin");
  app.add_option("--format", o.format, "lines, csv, jsonl or auto")
      ->check(CLI::IsMember({"auto", "lines", "csv", "jsonl"}))
      ->capture_default_str();
  app.add_option("--column", o.column, "The CSV column with the ids")->capture_default_str();
  app.add_option("--collection", o.collection,
                 "Put every post read (new or tracked before) into this collection (made as kind import if new), for "
                 "mortality and datasets")
      ->type_name("NAME");
  app.add_option("--dataset", o.dataset, "Rehydrate this dataset (tweetkeeper-export --format dataset)")
      ->type_name("DIR");
  tweetkeeper::worker::AddBounded(app, "--wait-read", o.wait_read,
                                  "--dataset: then wait up to this many seconds until every post was read again here "
                                  "or found gone, and say how many (0: do not wait)",
                                  0, 7 * 86400);
  tweetkeeper::worker::AddBounded(app, "--chunk-size", o.chunk_size, "Ids per transaction", 1, 1'000'000);
  tweetkeeper::worker::AddBounded(app, "--jobs", o.jobs, "Database connections inserting at once", 1, 16);
  app.add_option("--max-errors", o.max_errors, "Stop after this many bad lines (0: never)")->capture_default_str();
  tweetkeeper::worker::AddProgressIntervalOption(app, o.progress_every);
  app.add_option("files", o.files, "Files to read; none or - reads stdin");
  if (const std::optional<int> exit_code = tweetkeeper::worker::ParseToolCommandLine(
          app, argc, argv, o.dsn, o.dsn_file, "tweetkeeper-import", tweetkeeper::worker::UsageErrors::kOneLine))
    return exit_code;
  if (!o.dataset.empty() && !o.files.empty()) {
    std::cerr << "tweetkeeper-import: --dataset reads its directory, not files" << std::endl;
    return kExitUsage;
  }
  if (o.dataset.empty() && o.wait_read) {
    std::cerr << "tweetkeeper-import: --wait-read is for --dataset" << std::endl;
    return kExitUsage;
  }
  if (o.files.empty()) o.files.push_back("-");
  return std::nullopt;
}

// The files' total size for the progress line (0: unknown, stdin is read), or nullopt (said on
// stderr) when one is not a readable file.
std::optional<std::uint64_t> TotalBytes(const std::vector<std::string>& files) {
  std::uint64_t total_bytes = 0;
  for (const std::string& f : files) {
    if (f == "-") return 0;  // unknown
    struct stat st {};
    if (stat(f.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      std::cerr << "tweetkeeper-import: cannot read " << f << ": not a readable file" << std::endl;
      return std::nullopt;
    }
    total_bytes += static_cast<std::uint64_t>(st.st_size);
  }
  return total_bytes;
}

// The files read line by line into chunks that the Writer sends, each id once per chunk; what was
// read, bad and repeated, counted for the summary.
class Import {
 public:
  Import(const Options& o, Writer& writer, tweetkeeper::worker::Progress& progress)
      : o_(o), writer_(writer), progress_(progress) {}

  // Reads one file ("-": stdin). An exit code when the import must end at once (usage).
  std::optional<int> Read(const std::string& f) {
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
    im::IdReader reader(FormatOf(o_.format, f), o_.column);
    std::string_view line;
    std::uint64_t number = 0;
    const std::int64_t now_ms = NowMs();
    for (im::LineRead got; !stopped_ && (got = im::ReadLine(in, buffer_, &line)) != im::LineRead::kEnd;) {
      ++number;
      if (got == im::LineRead::kTooLong) {
        bytes_ += buffer_.size();
        Bad(name, number, "the line is longer than " + std::to_string(buffer_.size() - 1) + " bytes: skipped");
        continue;
      }
      bytes_ += line.size() + 1;
      const im::LineResult r = reader.Parse(line, now_ms);
      if (!reader.usable()) {
        std::cerr << "tweetkeeper-import: " << name << ":" << number << ": " << r.error << std::endl;
        Flush();
        writer_.Finish();
        return kExitUsage;
      }
      if (!r.error.empty()) {
        Bad(name, number, r.error);
        continue;
      }
      for (const im::Tweet& t : r.tweets) Add(t);
      progress_.Update(bytes_, read_ids_);
      if (!writer_.error().empty()) break;
    }
    if (in.bad()) {
      std::cerr << "tweetkeeper-import: error reading " << name << std::endl;
      stopped_ = true;
    }
    return std::nullopt;
  }

  // Whether to read no further: too many bad lines, a read error, or a database error.
  bool Over() { return !writer_.error().empty() || stopped_; }

  // The last chunk sent, everything written; the summary and the exit code.
  int Finish(Clock::time_point started) {
    Flush();
    writer_.Finish();
    progress_.Update(bytes_, read_ids_, true);
    const std::string db_error = writer_.error();
    if (!db_error.empty()) {
      std::cerr << "tweetkeeper-import: database error (the chunks before were imported; run again to resume): "
                << tweetkeeper::worker::RedactDsnSecrets(db_error, o_.dsn) << std::endl;
    }
    const double secs = std::chrono::duration<double>(Clock::now() - started).count();
    const std::uint64_t added = writer_.added();
    const std::uint64_t already = writer_.sent() - added + repeated_;
    std::cerr << fmt::format(
                     "tweetkeeper-import: {} ids read: {} new, {} already tracked, {} bad lines; {:.1f} s, {} ids/s",
                     Thousands(read_ids_), Thousands(added), Thousands(already), Thousands(bad_), secs,
                     Thousands(static_cast<std::uint64_t>(secs > 0 ? static_cast<double>(read_ids_) / secs : 0)))
              << std::endl;
    if (!db_error.empty()) return kExitDatabase;
    return bad_ > 0 ? kExitBadLines : 0;
  }

 private:
  std::vector<char> buffer_ = std::vector<char>(im::kMaxLineBytes + 1);  // a line and its '\0'

  void Bad(const std::string& name, std::uint64_t number, const std::string& error) {
    ++bad_;
    std::cerr << "tweetkeeper-import: " << name << ":" << number << ": " << error << std::endl;
    if (o_.max_errors && bad_ >= o_.max_errors) {
      std::cerr << "tweetkeeper-import: stopping after " << bad_ << " bad lines (--max-errors)" << std::endl;
      stopped_ = true;
    }
  }

  void Add(const im::Tweet& t) {
    ++read_ids_;
    if (!t.url.empty()) {
      if (!in_chunk_urls_.insert(t.url).second) {
        ++repeated_;
        return;
      }
      chunk_.urls.push_back(t.url);
    } else {
      if (!in_chunk_.insert(t.id).second) {
        ++repeated_;
        return;
      }
      if (im::SnowflakeMs(t.id))
        chunk_.ids.push_back(t.id);
      else
        chunk_.with_created.push_back(t);
    }
    if (chunk_.size() >= o_.chunk_size) Flush();
  }

  void Flush() {
    if (chunk_.size() == 0) return;
    writer_.Send(std::move(chunk_));
    chunk_ = Chunk{};
    in_chunk_.clear();
    in_chunk_urls_.clear();
  }

  const Options& o_;
  Writer& writer_;
  tweetkeeper::worker::Progress& progress_;
  std::uint64_t bytes_ = 0, read_ids_ = 0, bad_ = 0, repeated_ = 0;
  bool stopped_ = false;
  Chunk chunk_;
  std::unordered_set<std::int64_t> in_chunk_;
  std::unordered_set<std::string> in_chunk_urls_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const std::optional<int> exit_code = ParseOptions(argc, argv, o)) return *exit_code;
  if (!o.dataset.empty()) return im::ImportDataset({o.dsn, o.dataset, o.collection, o.wait_read, o.progress_every});
  const std::optional<std::uint64_t> total_bytes = TotalBytes(o.files);
  if (!total_bytes) return kExitUsage;
  std::unique_ptr<Writer> writer;
  try {
    writer = std::make_unique<Writer>(o.dsn, o.jobs, o.collection);
  } catch (const std::exception& e) {
    std::cerr << "tweetkeeper-import: cannot connect to the database: "
              << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
    return kExitDatabase;
  }
  if (!o.collection.empty()) {
    try {  // (its name checked before anything is read: a bad one is bad usage)
      pqxx::connection conn(o.dsn);
      pqxx::work tx(conn);
      tx.exec_params("SELECT tweetkeeper.create_collection($1, 'import')", o.collection);
      tx.commit();
    } catch (const pqxx::sql_error& e) {
      std::cerr << "tweetkeeper-import: --collection: " << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn);
      return e.sqlstate() == "22023" ? kExitUsage : kExitDatabase;
    } catch (const std::exception& e) {
      std::cerr << "tweetkeeper-import: cannot connect to the database: "
                << tweetkeeper::worker::RedactDsnSecrets(e.what(), o.dsn) << std::endl;
      return kExitDatabase;
    }
  }
  tweetkeeper::worker::Progress progress("tweetkeeper-import", "ids", "ids read", *total_bytes,
                                         isatty(STDERR_FILENO) != 0, std::chrono::seconds(o.progress_every));
  const auto started = Clock::now();
  Import import(o, *writer, progress);
  for (const std::string& f : o.files) {
    if (const std::optional<int> exit_code = import.Read(f)) return *exit_code;
    if (import.Over()) break;
  }
  return import.Finish(started);
}
