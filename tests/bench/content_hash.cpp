// make bench-hostile, the worker's side (issue 49): the CPU seconds of the worker's content hash
// of a hostile answer, an object of --keys keys (1,000,000: 13.9 MB as compact JSON, within the
// 16 MiB a worker accepts; the last key a duplicate of the first). Counted: what the worker does
// with such an answer, from its text to the hash: the parse, the canonical text (count keys left
// out, the last of each duplicate kept, keys in jsonb's order) and its md5; the parse is also
// printed on its own. Built with the worker's flags and linked with nothing else: the unit tests,
// compiled -O0, lend their unoptimised copies of the header code (RapidJSON's parser,
// json::Parse) to the library they link, so a time taken there is not the worker's.
// Prints "content_hash: K keys in S s of CPU (median of R rounds; fastest F s; parse P s)".
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "json/bounded.hpp"
#include "provider/content_hash.hpp"

namespace {

double CpuSince(std::clock_t start) { return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC; }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  long keys = 1'000'000, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--keys") keys = std::atol(argv[i + 1]);
    else if (arg == "--rounds") rounds = std::atol(argv[i + 1]);
  }
  if (keys < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: %s [--keys N] [--rounds R]\n", argv[0]);
    return 2;
  }
  std::string text = "{";
  for (long k = 0; k < keys; ++k) text += "\"k" + std::to_string(k) + "\":" + std::to_string(k % 10) + ",";
  text += "\"k0\":\"last\"}";
  std::vector<double> total, parse;
  for (long r = 0; r < rounds; ++r) {
    std::clock_t start = std::clock();
    const std::optional<std::string> hash = tweetkeeper::worker::ContentHash(text, "");
    total.push_back(CpuSince(start));
    if (!hash) {
      std::fprintf(stderr, "content_hash: no hash of the object of %ld keys\n", keys);
      return 1;
    }
    rapidjson::Document doc;
    start = std::clock();
    const bool parsed = tweetkeeper::json::Parse(doc, text).empty();
    parse.push_back(CpuSince(start));
    if (!parsed) return 1;
  }
  std::printf("content_hash: %ld keys in %.3f s of CPU (median of %ld rounds; fastest %.3f s; parse %.3f s)\n", keys,
              Median(total), rounds, *std::min_element(total.begin(), total.end()), Median(parse));
  return 0;
}
