#pragma once
// Shared by the fuzz targets: a check that stops the run (libFuzzer saves the input as a
// crash-* reproducer) and the text rules PostgreSQL applies to what the worker sends it.

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace tweetkeeper::fuzz {

[[noreturn]] inline void CheckFailed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, file, line);
  std::abort();
}

#define TK_FUZZ_CHECK(cond) \
  ((cond) ? static_cast<void>(0) : ::tweetkeeper::fuzz::CheckFailed(#cond, __FILE__, __LINE__))

// UTF-8 as PostgreSQL accepts it in a text or jsonb value (pg_utf8_islegal): no NUL, shortest
// form only, no UTF-16 surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
inline bool PgUtf8Valid(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c == 0) return false;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return false;
    }
    if (end - p < n) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i < n; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
    }
    p += n;
  }
  return true;
}

}  // namespace tweetkeeper::fuzz
