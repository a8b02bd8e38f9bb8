// Jetstream's compression on the mock's events (issue 52): the bytes of each event as JSON, as a
// zstd frame with the mock's dictionary (as its Jetstream sends with compress=true: level 3, one
// frame per event) and, for comparison, with zstd alone; and the CPU the worker spends decoding
// one (zstd/frame_decoder.hpp, with the worker's flags). The dictionary is trained as the mock
// trains it at start-up (on the last minutes' events); the events measured are an hour older, so
// none was trained on. The mock's generated events are more alike than real ones: Jetstream's
// README says ~56% smaller for its own dictionary on the real stream.
// Usage: tweetkeeper-jetstream-zstd-bench [ACCOUNTS (200)] [EVENTS (20000)] [ROUNDS (10)]
// Prints "jetstream_zstd: N events: json J B, zstd alone Z B, with the dictionary D B (P% smaller);
// decode C µs of CPU an event (R rounds)".
#include <zstd.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "mock_api/bluesky_endpoint.hpp"
#include "mock_api/jetstream_zstd.hpp"
#include "zstd/frame_decoder.hpp"

namespace {

double CpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  namespace mock = tweetkeeper::mock;
  namespace zs = tweetkeeper::worker::zstd;
  mock::MockConfig config;
  config.follow_accounts = argc > 1 ? std::stoull(argv[1]) : 200;
  config.follow_rate = 20;
  config.follow_delete_every = 5;
  const std::size_t wanted = argc > 2 ? std::stoull(argv[2]) : 20'000;
  const int rounds = argc > 3 ? std::stoi(argv[3]) : 10;
  const std::string dictionary = mock::TrainJetstreamDictionary(config);
  mock::SetJetstreamDictionary(dictionary);
  const int64_t now_us = static_cast<int64_t>(std::time(nullptr)) * 1'000'000;
  std::vector<std::string> events;
  for (int64_t t = now_us - 3'600'000'000LL; events.size() < wanted && t < now_us - 600'000'000; t += 60'000'000)
    for (auto& [time_us, json] : mock::JetstreamEvents({}, t, t + 60'000'000, config)) events.push_back(std::move(json));
  if (events.empty()) {
    std::fprintf(stderr, "jetstream_zstd: no events (ACCOUNTS 0?)\n");
    return 1;
  }
  mock::JetstreamCompressor compressor;
  std::vector<std::string> frames;
  std::size_t json_bytes = 0, frame_bytes = 0, alone_bytes = 0;
  for (const std::string& e : events) {
    frames.push_back(compressor.Compress(e));
    json_bytes += e.size();
    frame_bytes += frames.back().size();
    std::string alone(ZSTD_compressBound(e.size()), '\0');
    alone_bytes += ZSTD_compress(alone.data(), alone.size(), e.data(), e.size(), 3);
  }
  std::string error;
  const auto loaded = zs::Dictionary::Load(dictionary, &error);
  if (!loaded) {
    std::fprintf(stderr, "jetstream_zstd: %s\n", error.c_str());
    return 1;
  }
  zs::FrameDecoder decoder(loaded, 16u << 20);
  std::string text;
  std::size_t wrong = 0;
  const double start = CpuSeconds();
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < frames.size(); ++i)
      if (!decoder.Decode(frames[i], &text, &error) || text != events[i]) ++wrong;
  const double cpu = CpuSeconds() - start;
  const double n = static_cast<double>(events.size());
  std::printf("jetstream_zstd: %zu events: json %.1f B, zstd alone %.1f B, with the dictionary %.1f B (%.1f%% smaller); "
              "decode %.2f µs of CPU an event (%d rounds)\n",
              events.size(), json_bytes / n, alone_bytes / n, frame_bytes / n, 100.0 * (1 - frame_bytes / double(json_bytes)),
              cpu / (n * rounds) * 1e6, rounds);
  if (wrong != 0) {
    std::fprintf(stderr, "jetstream_zstd: %zu decodes failed or differed\n", wrong);
    return 1;
  }
  return 0;
}
