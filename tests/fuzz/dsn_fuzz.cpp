// Fuzz target: password redaction (queue/dsn): DsnError and RedactDsnSecrets, which stand
// between the --dsn value (and libpq's messages about it) and every line the worker prints.
//
// The input builds a DSN whose password is known: key=value (`password=PW` or quoted), a URI
// with `user:PW@`, or a URI with `?password=PW`, the password written as is or partly
// percent-encoded, among arbitrary text before and after it. Then:
//  - DsnError (libpq's own parse error, redacted) never contains the password;
//  - a connection error that quotes the DSN, the password or its decoded form, redacted,
//    never contains it either;
//  - both are exactly one line.
// Passwords here are 6+ letters and digits, so that a hit is a leak, not a coincidence.

#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.hpp"
#include "dsn/dsn.hpp"

namespace tk = tweetkeeper::worker;

namespace {

std::string Password(FuzzedDataProvider& in) {
  std::string raw = in.ConsumeRandomLengthString(24);
  std::string pw;
  for (char c : raw) {
    if (std::isalnum(static_cast<unsigned char>(c))) pw.push_back(c);
  }
  while (pw.size() < 6) pw.push_back(static_cast<char>('a' + pw.size()));
  return pw;
}

// Some characters as %XX (libpq decodes URI parts).
std::string MaybeEncoded(FuzzedDataProvider& in, const std::string& pw) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const std::uint32_t mask = in.ConsumeIntegral<std::uint32_t>();
  std::string out;
  for (std::size_t i = 0; i < pw.size(); ++i) {
    const auto c = static_cast<unsigned char>(pw[i]);
    if (i < 32 && (mask >> i) & 1U) {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    } else {
      out.push_back(pw[i]);
    }
  }
  return out;
}

bool OneLine(const std::string& s) { return s.find_first_of("\r\n") == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const int form = in.ConsumeIntegralInRange(0, 3);
  const std::string pw = Password(in);
  const std::string before = in.ConsumeRandomLengthString(64);
  const std::string after = in.ConsumeRandomLengthString(64);

  std::string written = pw;  // the password as it appears in the DSN
  std::string dsn;
  switch (form) {
    case 0:  // key=value
      dsn = before + " password=" + pw + " " + after;
      break;
    case 1:  // key=value, quoted
      dsn = before + " password = '" + pw + "' " + after;
      break;
    case 2:  // URI user info
      written = MaybeEncoded(in, pw);
      dsn = "postgresql://" + before + ":" + written + "@" + after;
      // A '/' or '@' before ours ends the user info elsewhere, a ':' makes the password longer:
      // then the password is not the one we know.
      if (before.find_first_of("/@:") != std::string::npos) return 0;
      break;
    default:  // URI query parameter
      written = MaybeEncoded(in, pw);
      dsn = "postgresql://" + before + "?password=" + written + "&" + after;
      break;
  }
  if (dsn.find('\0') != std::string::npos) return 0;  // a C string for libpq

  if (auto error = tk::DsnError(dsn)) {
    TK_FUZZ_CHECK(OneLine(*error));
    TK_FUZZ_CHECK(error->find(pw) == std::string::npos);
    TK_FUZZ_CHECK(error->find(written) == std::string::npos);
  }

  // What libpq says when a connection fails, in the shapes it quotes things.
  const std::string message = "connection to server failed: \"" + dsn + "\"\n  password \"" + written + "\" (" + pw +
                              ") for \"" + before + "\"\n";
  const std::string redacted = tk::RedactDsnSecrets(message, dsn);
  TK_FUZZ_CHECK(OneLine(redacted));
  TK_FUZZ_CHECK(redacted.find(pw) == std::string::npos);
  TK_FUZZ_CHECK(redacted.find(written) == std::string::npos);
  return 0;
}
