#pragma once
// splitmix64: a good 64-bit mix, so neighbouring inputs (tweet ids, request numbers) get unrelated
// outputs. Neighbouring ids must get unrelated metrics, or a client mixing up ids goes unnoticed;
// neighbouring requests must get unrelated fault draws.

#include <cstdint>

namespace tweetkeeper::mock {

inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace tweetkeeper::mock
