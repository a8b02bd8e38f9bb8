#pragma once
// Progress of a command-line tool (tweetkeeper-import, tweetkeeper-export) on stderr: a bar with
// rate and ETA on a terminal, a plain line every few seconds otherwise (a log keeps it whole).
#include <chrono>
#include <cstdint>
#include <string>

namespace tweetkeeper::worker {

// 1234567 -> "1,234,567"
std::string Thousands(std::uint64_t n);

class Progress {
 public:
  // `tool` starts each plain line; `unit` names what is counted on the bar ("ids") and `done`
  // what a plain line says of it ("ids read"). `total`: the amount `Update` measures the share
  // by (0: unknown: no bar, no ETA).
  Progress(std::string tool, std::string unit, std::string done, std::uint64_t total, bool tty,
           std::chrono::seconds every);
  // `amount` of `total` is done, `count` things so far; `final` prints the last bar's newline.
  void Update(std::uint64_t amount, std::uint64_t count, bool final = false);

 private:
  using Clock = std::chrono::steady_clock;
  std::string tool_, unit_, done_;
  std::uint64_t total_;
  bool tty_;
  std::chrono::seconds every_;
  Clock::time_point start_, last_;
};

}  // namespace tweetkeeper::worker
