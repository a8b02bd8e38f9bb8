#include "stream/stream_reader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
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

// How far behind live the events were as they were counted (now minus time_us), per log period.
struct Lag {
  std::vector<std::int64_t> us;
  std::int64_t events = 0, refused = 0;
  Clock::time_point since = Clock::now();
  void Log(const Counter& c) {
    const double seconds = std::chrono::duration<double>(Clock::now() - since).count();
    std::sort(us.begin(), us.end());
    const auto at = [&](double q) { return us.empty() ? 0 : us[std::min(us.size() - 1, std::size_t(q * us.size()))]; };
    spdlog::info(
        "stream: {:.0f} events/s, behind live p50 {} ms p99 {} ms max {} ms; {} posts counted, {} records, "
        "{} events in the ring{}",
        seconds > 0 ? events / seconds : 0, at(0.5) / 1000, at(0.99) / 1000, us.empty() ? 0 : us.back() / 1000,
        c.posts(), c.records(), c.ring_size(), refused ? fmt::format(", {} frames refused", refused) : "");
    us.clear();
    events = refused = 0;
    since = Clock::now();
  }
};

}  // namespace

StreamReader::StreamReader(StreamOptions options, StopSignal& stop) : options_(std::move(options)), stop_(stop) {}

bool StreamReader::Connect(std::chrono::seconds startup_timeout) {
  DatabaseWait wait(options_.dsn, startup_timeout, stop_, "tweetkeeper SQL API for stream counts");
  StreamDb db(options_.dsn, options_.name);
  return wait.Connect([&] { db.Connect(); });
}

int StreamReader::Run() {
  StreamDb db(options_.dsn, options_.name);
  Counter counter(options_.ring_us);
  std::atomic<std::int64_t> cursor{0};  // where a (re)connection starts: the last event counted
  follow::JetstreamClient client(options_.jetstream_url, [&cursor] { return cursor.load(); });
  bool started = false;
  Lag lag;
  Clock::time_point last_event = Clock::now();
  int failures = 0;
  while (!stop_.stopping()) {
    try {
      if (!db.connected()) {
        db.Connect();
        std::optional<Taken> taken = db.Take(options_.lease_seconds, options_.replay_window);
        if (!taken) {
          spdlog::info("stream: another reader holds the stream; waiting for its lease");
          stop_.SleepUnlessStopped(std::chrono::seconds(options_.lease_seconds));
          db = StreamDb(options_.dsn, options_.name);
          continue;
        }
        if (taken->gap)
          spdlog::warn("stream: the stored position is older than Jetstream replays ({}): every counted post is "
                       "read again now, and counting starts live", options_.replay_window);
        counter.Reset(taken->position_us);
        db.Load(counter);
        cursor = taken->position_us;
        spdlog::info("stream: counting {} posts ({} records) from {}", counter.posts(), counter.records(),
                     taken->position_us > 0 ? std::to_string(taken->position_us) + " (time_us)" : "live");
        if (!started) {
          client.SetNetwork({"app.bsky.feed.like", "app.bsky.feed.repost", "app.bsky.feed.post"});
          started = true;
        } else {
          client.Reconnect();  // from the stored position
        }
        failures = 0;
      }
      Clock::time_point next_flush = Clock::now() + options_.flush;
      while (!stop_.stopping()) {
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
            case Parsed::kRefused:
              if (lag.refused++ == 0) spdlog::warn("stream: a frame refused: {}", reason);
              continue;
          }
          ++lag.events;
          lag.us.push_back(std::max<std::int64_t>(0, now_us - e.time_us));
        }
        if (!frames.empty()) {
          last_event = Clock::now();
          cursor = counter.position_us();
        }
        if (Clock::now() < next_flush) continue;
        // The reads the stream has passed, then everything since the last flush, in one transaction.
        const std::int64_t position = counter.position_us();
        if (position > 0)
          for (const WaitingRead& r : db.ReadsDue(position, 5000)) {
            Counts difference;
            counter.Read(r.id, r.key, r.as_of_us, r.counts, r.counted, &difference);
          }
        const Flush flush = counter.Take();
        if (flush.position_us > 0) counter.Forget(db.Store(flush));
        next_flush = Clock::now() + options_.flush;
        if (std::chrono::duration<double>(Clock::now() - lag.since).count() >= 10) lag.Log(counter);
        if (options_.exit_when_idle.count() > 0 && Clock::now() - last_event > options_.exit_when_idle) {
          spdlog::info("stream: no event for {} s; exiting as asked", options_.exit_when_idle.count());
          return 0;
        }
      }
    } catch (const pqxx::broken_connection& e) {
      spdlog::warn("stream: lost the database ({}); starting again from the stored position", e.what());
    } catch (const pqxx::sql_error& e) {
      spdlog::error("stream: the database refused: {}; starting again from the stored position", e.what());
    }
    db = StreamDb(options_.dsn, options_.name);
    const auto delay = std::chrono::milliseconds(std::min(30000, 500 << std::min(failures++, 6)));
    stop_.SleepUnlessStopped(delay);
  }
  client.Stop();
  return 0;
}

}  // namespace tweetkeeper::worker::stream
