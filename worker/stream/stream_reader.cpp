#include "stream/stream_reader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <future>
#include <pqxx/except>
#include <vector>

#include "follow/jetstream_client.hpp"
#include "service/connect.hpp"
#include "stream/count_event.hpp"
#include "stream/counter.hpp"
#include "stream/stream_db.hpp"

namespace tweetkeeper::worker::stream {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How far behind live the events were as they were counted (now minus time_us): per log period
// (p50, p99, max), and since the start in buckets (the last line says the whole run's).
struct Lag {
  static constexpr std::array<std::int64_t, 12> kEdgesMs{10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000};
  std::vector<std::int64_t> us;
  std::array<std::int64_t, kEdgesMs.size() + 1> total{};
  std::int64_t events = 0, refused = 0;
  Clock::time_point since = Clock::now();
  void Add(std::int64_t lag_us) {
    us.push_back(lag_us);
    std::size_t b = 0;
    while (b < kEdgesMs.size() && lag_us >= kEdgesMs[b] * 1000) ++b;
    ++total[b];
  }
  void Log(const Counter& c) {
    const double seconds = std::chrono::duration<double>(Clock::now() - since).count();
    std::sort(us.begin(), us.end());
    const auto at = [&](double q) { return us.empty() ? 0 : us[std::min(us.size() - 1, std::size_t(q * us.size()))]; };
    std::string buckets;
    for (std::size_t b = 0; b < total.size(); ++b)
      buckets += fmt::format("{}{}:{}", b ? " " : "", b < kEdgesMs.size() ? "<" + std::to_string(kEdgesMs[b]) : std::string("more"),
                             total[b]);
    spdlog::info(
        "stream: {:.0f} events/s, behind live p50 {} ms p99 {} ms max {} ms; {} posts counted, {} records ({} "
        "deleted and subtracted), {} events in the ring{}; behind live since the start, events per ms bucket: {}",
        seconds > 0 ? events / seconds : 0, at(0.5) / 1000, at(0.99) / 1000, us.empty() ? 0 : us.back() / 1000,
        c.posts(), c.records(), c.undone(), c.ring_size(), refused ? fmt::format(", {} frames refused", refused) : "",
        buckets);
    us.clear();
    events = refused = 0;
    since = Clock::now();
  }
};

// What a flush brought back from the database: the posts no longer counted, and the reads due.
struct Stored {
  std::vector<std::int64_t> forgotten;
  std::vector<WaitingRead> reads;
};

}  // namespace

StreamReader::StreamReader(StreamOptions options, StopSignal& stop) : options_(std::move(options)), stop_(stop) {}

bool StreamReader::Connect(std::chrono::seconds startup_timeout) {
  DatabaseWait wait(options_.dsn, startup_timeout, stop_, "tweetkeeper SQL API for stream counts");
  StreamDb db(options_.dsn, options_.name);
  return wait.Connect([&] { db.Connect(); });
}

namespace {

// What a flush brought back from the database, or why it did not store: the connection lost (the
// counting goes on from memory and the flush is sent again) or the database refused or the stream
// is no longer this reader's (it starts again from the database).
struct Outcome {
  Stored stored;
  enum { kStored, kLost, kRestart } what = kStored;
  std::string why;
};

}  // namespace

int StreamReader::Run() {
  StreamDb db(options_.dsn, options_.name);
  Counter counter(options_.ring_us);
  std::atomic<std::int64_t> cursor{0};  // where a (re)connection starts: the last event counted
  follow::JetstreamClient client(options_.jetstream_url, [&cursor] { return cursor.load(); },
                                 options_.jetstream_dictionary);
  bool started = false;
  Lag lag;
  Clock::time_point last_event = Clock::now();
  int failures = 0;
  while (!stop_.stopping()) {
    std::int64_t counted_from = 0;  // events at or before it were counted before (a warm replay)
    try {
      db = StreamDb(options_.dsn, options_.name);
      db.Connect();
      std::optional<Taken> taken = db.Take(options_.lease_seconds, options_.replay_window);
      if (!taken) {
        spdlog::info("stream: another reader holds the stream; waiting for its lease");
        stop_.SleepUnlessStopped(std::chrono::seconds(options_.lease_seconds));
        continue;
      }
      if (taken->gap)
        spdlog::warn("stream: the stored position is older than Jetstream replays ({}): every counted post is "
                     "read again now, and counting starts live", options_.replay_window);
      // The stream is read again from --stream-warm before where counting starts, into the ring
      // only: the records made then are known, so a post adopted from a read made before (or just
      // after) a restart counts their deletes. Counting starts at the stored position, or, with
      // none (the first start, or a gap: no post is counted then), at now: after a gap, the
      // records made in the warm's span before it are known too.
      const std::int64_t from = taken->position_us > 0 ? taken->position_us : options_.warm_us > 0 ? NowUs() : 0;
      const std::int64_t warm_from = from > 0 && options_.warm_us > 0 ? from - options_.warm_us : 0;
      counter.Reset(from, warm_from);
      db.Load(counter);
      counted_from = from;
      cursor = warm_from > 0 ? warm_from : from;
      spdlog::info("stream: counting {} posts ({} records) from {}{}", counter.posts(), counter.records(),
                   taken->position_us > 0 ? std::to_string(taken->position_us) + " (time_us)" : "live",
                   warm_from > 0 ? fmt::format(", the {} s before read again", options_.warm_us / 1'000'000) : "");
      if (!started) {
        client.SetNetwork({"app.bsky.feed.like", "app.bsky.feed.repost", "app.bsky.feed.post"});
        started = true;
      } else {
        client.Reconnect();  // from the stored position
      }
      failures = 0;
    } catch (const pqxx::broken_connection& e) {
      spdlog::warn("stream: no database ({}); trying again", e.what());
      stop_.SleepUnlessStopped(std::chrono::milliseconds(std::min(5000, 500 << std::min(failures++, 4))));
      continue;
    } catch (const pqxx::sql_error& e) {
      spdlog::error("stream: the database refused: {}; trying again", e.what());
      stop_.SleepUnlessStopped(std::chrono::milliseconds(std::min(5000, 500 << std::min(failures++, 4))));
      continue;
    }
    // The database's part of a flush runs beside the counting (a slow transaction, PostgreSQL
    // busy with the refreshers, must not hold the stream up): one at a time; a flush due while one
    // is under way waits, and the next holds everything since. A lost database does not stop the
    // counting: the flush it did not take goes back into the next, sent once it is back (its
    // lease taken again: the stream is still this reader's, and the database's position not ahead
    // of the counter's), so the stream never falls behind for an outage.
    std::future<Outcome> storing;
    std::shared_ptr<const Flush> in_flight;
    bool lost = false;
    int outages = 0;
    Clock::time_point next_flush = Clock::now() + options_.flush;
    bool restart = false;
    while (!stop_.stopping() && !restart) {
      const auto wait = std::max(std::chrono::milliseconds(1),
                                 std::chrono::duration_cast<std::chrono::milliseconds>(next_flush - Clock::now()));
      std::vector<std::string> frames = client.Take(std::min(wait, std::chrono::milliseconds(100)), 20000);
      const std::int64_t now_us = NowUs();
      for (const std::string& frame : frames) {
        CountEvent e;
        std::string reason;
        switch (ParseCountEvent(frame, &e, &reason)) {
          case Parsed::kEvent: counter.Apply(e); break;
          case Parsed::kNothing: counter.Pass(e.time_us); break;
          case Parsed::kAccount:
            // (Read again to fill the ring: passed on before.)
            if (e.time_us > counted_from) counter.Account(e);
            else counter.Pass(e.time_us);
            break;
          case Parsed::kRefused:
            if (lag.refused++ == 0) spdlog::warn("stream: a frame refused: {}", reason);
            continue;
        }
        if (e.time_us <= counted_from) continue;  // (read again to fill the ring: counted before)
        ++lag.events;
        lag.Add(std::max<std::int64_t>(0, now_us - e.time_us));
      }
      if (!frames.empty()) {
        last_event = Clock::now();
        cursor = counter.position_us();
      }
      if (storing.valid() && storing.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        Outcome o = storing.get();
        if (o.what == Outcome::kStored) {
          if (lost) spdlog::info("stream: the database is back; what was counted meanwhile is stored");
          lost = false;
          outages = 0;
          counter.Forget(o.stored.forgotten);
          // The reads the stream has passed: adopted or compared now, stored by the next flush.
          for (const WaitingRead& r : o.stored.reads) {
            Counts difference;
            counter.Read(r.id, r.key, r.as_of_us, r.counts, r.counted, &difference);
          }
        } else if (o.what == Outcome::kLost) {
          if (!lost) spdlog::warn("stream: lost the database ({}); counting on, storing once it is back", o.why);
          lost = true;
          counter.Restore(*in_flight);
          next_flush = Clock::now() + std::chrono::milliseconds(std::min(5000, 500 << std::min(outages++, 4)));
        } else {
          spdlog::warn("stream: {}; starting again from the database", o.why);
          restart = true;
          continue;
        }
        in_flight.reset();
      }
      if (Clock::now() < next_flush || storing.valid()) continue;
      next_flush = Clock::now() + options_.flush;
      in_flight = std::make_shared<const Flush>(counter.Take());
      spdlog::debug("stream: a flush to {}: {} posts' counts, {} records kept, {} deleted, {} reads; {} subtracted in all",
                    in_flight->position_us, in_flight->ids.size(), in_flight->keys.size(), in_flight->gone.size(),
                    in_flight->read_ids.size(), counter.undone());
      if (in_flight->position_us > 0)
        storing = std::async(std::launch::async, [this, &db, f = in_flight, reconnect = lost] {
          Outcome o;
          try {
            if (reconnect) {
              db = StreamDb(options_.dsn, options_.name);
              db.Connect();
              const std::optional<Taken> taken = db.Take(options_.lease_seconds, options_.replay_window);
              if (!taken || taken->gap || taken->position_us > f->position_us) {
                o.what = Outcome::kRestart;
                o.why = !taken ? "another reader took the stream" : "the stored position moved on meanwhile";
                return o;
              }
            }
            o.stored = Stored{db.Store(*f), db.ReadsDue(f->reads_through_us, 5000)};
          } catch (const pqxx::broken_connection& e) {
            o.what = Outcome::kLost;
            o.why = e.what();
          } catch (const pqxx::sql_error& e) {
            o.what = Outcome::kRestart;
            o.why = std::string("the database refused: ") + e.what();
          }
          return o;
        });
      if (std::chrono::duration<double>(Clock::now() - lag.since).count() >= 10) lag.Log(counter);
      if (options_.exit_when_idle.count() > 0 && Clock::now() - last_event > options_.exit_when_idle) {
        if (storing.valid()) storing.get();
        spdlog::info("stream: no event for {} s; exiting as asked", options_.exit_when_idle.count());
        return 0;
      }
    }
    if (storing.valid()) storing.get();  // (a stop: what is under way ends first)
  }
  client.Stop();
  return 0;
}

}  // namespace tweetkeeper::worker::stream
