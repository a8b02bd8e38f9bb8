// Fuzz target: the WARC writer's pure parts (worker/archive/warc.hpp), which every API exchange
// of a worker with --warc-dir goes through. From the input: a token, an HTTP message around it
// (in its Authorization header, its URL, its body) with a body sent as is or chunked at places
// the input picks, and a tail of arbitrary bytes after gzip members. Then:
//  - Redact never leaves the token in the message, as it is or escaped (%XX, \uXXXX, each
//    character or not), and keeps its length (Content-Length holds);
//  - HttpPayload gives back the body exactly, chunked or not, and never fails on any input;
//  - a record holds exactly its block (Content-Length), and CompleteMembers keeps the complete
//    gzip members in front of any tail (what Recover keeps of a file a kill cut).
// Tokens here are 8+ letters and digits with a digit: the redaction marker has none, so a hit is
// a leak, not a coincidence.

#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "archive/warc.hpp"
#include "fuzz_check.hpp"

namespace warc = tweetkeeper::worker::warc;

namespace {

std::string Token(FuzzedDataProvider& in) {
  std::string raw = in.ConsumeRandomLengthString(40);
  std::string t;
  for (char c : raw)
    if (std::isalnum(static_cast<unsigned char>(c))) t.push_back(c);
  while (t.size() < 8) t.push_back(static_cast<char>('a' + t.size()));
  t.push_back('7');
  return t;
}

std::string Chunked(FuzzedDataProvider& in, const std::string& body) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  std::size_t at = 0;
  while (at < body.size()) {
    std::size_t n = in.ConsumeIntegralInRange<std::size_t>(1, body.size() - at);
    std::string size;
    for (std::size_t v = n; v > 0; v /= 16) size.insert(size.begin(), kHex[v % 16]);
    out += size + (in.ConsumeBool() ? ";ext=1" : "") + "\r\n" + body.substr(at, n) + "\r\n";
    at += n;
  }
  return out + "0\r\n\r\n";
}

// token as a server may echo it: each character as it is, %XX or \u00XX (either case of hex).
std::string Escaped(FuzzedDataProvider& in, const std::string& token) {
  static constexpr char kHex[] = "0123456789abcdef0123456789ABCDEF";
  std::string out;
  for (char c : token) {
    const int form = in.ConsumeIntegralInRange(0, 2);
    const char* hex = kHex + (in.ConsumeBool() ? 16 : 0);
    const std::string xx = {hex[(c >> 4) & 15], hex[c & 15]};
    out += form == 0 ? std::string(1, c) : form == 1 ? "%" + xx : "\\u00" + xx;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string token = Token(in);
  const std::string path = in.ConsumeRandomLengthString(64);
  std::string body = in.ConsumeRandomLengthString(512);
  const bool chunked = in.ConsumeBool();
  if (in.ConsumeBool()) body += token;
  const std::string escaped = in.ConsumeBool() ? Escaped(in, token) : "";
  if (!escaped.empty()) body += " " + escaped;  // (after a blank: not the end of an escape before it)
  std::string head = "GET /2/tweets?" + path + (in.ConsumeBool() ? "&token=" + token : "") + " HTTP/1.1\r\n" +
                     (in.ConsumeBool() ? "authorization" : "Authorization") + ": Bearer " + token + "\r\n" +
                     (chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: " + std::to_string(body.size()) + "\r\n") +
                     "\r\n";
  const bool clean_head = path.find("\r\n") == std::string::npos;  // else the message is not HTTP
  const std::string message = head + (chunked ? Chunked(in, body) : body);

  const std::string redacted = warc::Redact(message, {token});
  TK_FUZZ_CHECK(redacted.size() == message.size());
  TK_FUZZ_CHECK(redacted.find(token) == std::string::npos);
  TK_FUZZ_CHECK(escaped.empty() || redacted.find(escaped) == std::string::npos);

  if (clean_head) {
    auto payload = warc::HttpPayload(message);
    TK_FUZZ_CHECK(payload.has_value());
    TK_FUZZ_CHECK(*payload == body);
  }
  const std::string tail = in.ConsumeRemainingBytesAsString();
  (void)warc::HttpPayload(tail);  // anything at all: no crash, no overread

  const std::string record = warc::Record({{"WARC-Type", "response"}}, redacted);
  const std::string length_field = "Content-Length: " + std::to_string(redacted.size()) + "\r\n\r\n";
  TK_FUZZ_CHECK(record.find(length_field) != std::string::npos);
  TK_FUZZ_CHECK(record.compare(record.size() - 4 - redacted.size(), redacted.size(), redacted) == 0);

  const std::string members = warc::Gzip(record) + warc::Gzip(tail);
  auto [keep, count] = warc::CompleteMembers(members + tail);
  TK_FUZZ_CHECK(count >= 2 && keep >= members.size());
  auto [keep_cut, count_cut] = warc::CompleteMembers(std::string_view(members).substr(0, members.size() - 1));
  TK_FUZZ_CHECK(count_cut == 1 && keep_cut == members.size() - warc::Gzip(tail).size());
  return 0;
}
