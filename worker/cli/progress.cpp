#include "cli/progress.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <utility>

namespace tweetkeeper::worker {

std::string Thousands(std::uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

Progress::Progress(std::string tool, std::string unit, std::string done, std::uint64_t total, bool tty,
                   std::chrono::seconds every)
    : tool_(std::move(tool)),
      unit_(std::move(unit)),
      done_(std::move(done)),
      total_(total),
      tty_(tty),
      every_(every),
      start_(Clock::now()),
      last_(start_) {}

void Progress::Update(std::uint64_t amount, std::uint64_t count, bool final) {
  const auto now = Clock::now();
  if (!final && now - last_ < (tty_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(every_))) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? static_cast<double>(count) / secs : 0;
  std::string eta;
  if (total_ > 0 && amount > 0 && amount < total_) {
    const double left = secs * static_cast<double>(total_ - amount) / static_cast<double>(amount);
    eta = fmt::format(", ETA {}:{:02}", static_cast<int>(left) / 60, static_cast<int>(left) % 60);
  }
  const std::string share =
      total_ > 0 ? fmt::format("{:3.0f}% ", 100.0 * static_cast<double>(amount) / static_cast<double>(total_)) : "";
  if (tty_) {
    std::string bar;
    if (total_ > 0) {
      const int filled = static_cast<int>(30.0 * static_cast<double>(std::min(amount, total_)) / static_cast<double>(total_));
      bar = "[" + std::string(static_cast<std::size_t>(filled), '#') +
            std::string(static_cast<std::size_t>(30 - filled), '.') + "] ";
    }
    std::fprintf(stderr, "\r%s%s%s %s, %s/s%s   ", bar.c_str(), share.c_str(), Thousands(count).c_str(), unit_.c_str(),
                 Thousands(static_cast<std::uint64_t>(rate)).c_str(), eta.c_str());
    if (final) std::fputc('\n', stderr);
  } else if (!final) {
    std::fprintf(stderr, "%s: %s%s %s, %s/s%s\n", tool_.c_str(), share.c_str(), Thousands(count).c_str(), done_.c_str(),
                 Thousands(static_cast<std::uint64_t>(rate)).c_str(), eta.c_str());
  }
  std::fflush(stderr);
}

}  // namespace tweetkeeper::worker
