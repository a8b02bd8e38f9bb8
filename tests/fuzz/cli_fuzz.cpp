// Fuzz target: the worker's command line (cli/options): ParseCommandLine and ParseApiUrl.
//
// Input: one argument per line (argv[1], argv[2], ...); the two characters `\n` inside a line
// stand for a newline in that argument.
//
// Checks: parsing never throws; a refusal is exit 2 with exactly one line for stderr (or exit 0
// with the help text) that never shows a password typed in an argument (`password=SECRET` or
// `scheme://user:SECRET@`, as in an unquoted DSN split over several arguments); an accepted command line has values in
// their documented ranges and an API URL that ParseApiUrl accepts again unchanged. Every argument is also tried as an
// API URL: an accepted one is a prefix of the input, http(s), with a host and no space, control character, query,
// fragment or user info.

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/options.hpp"
#include "credentials/credentials.hpp"
#include "fuzz_check.hpp"
#include "provider/x_v2.hpp"

namespace tk = tweetkeeper::worker;

namespace {

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

void CheckApiUrl(const std::string& arg) {
  const auto api = tk::ParseApiUrl(arg);
  if (!api) return;
  const std::string& base = api->base;
  TK_FUZZ_CHECK(arg.compare(0, base.size(), base) == 0);
  const std::size_t start = StartsWithNoCase(base, "https://") ? 8 : 7;
  TK_FUZZ_CHECK(StartsWithNoCase(base, "http://") || StartsWithNoCase(base, "https://"));
  TK_FUZZ_CHECK(!api->host.empty() && base.compare(start, api->host.size(), api->host) == 0);
  TK_FUZZ_CHECK(base.size() > start && base.back() != '/');
  for (char c : base) {
    const auto u = static_cast<unsigned char>(c);
    TK_FUZZ_CHECK(u > 0x20 && u < 0x7f && c != '?' && c != '#' && c != '@' && c != '\\');
  }
  const auto again = tk::ParseApiUrl(base);
  TK_FUZZ_CHECK(again && again->base == base && again->host == api->host);
  const tk::XV2Provider provider(base);
  TK_FUZZ_CHECK(provider.RequestUrl({20, 21}).rfind(base + "/2/tweets?ids=20,21&", 0) == 0);
}

// Passwords written in an argument, the way they would be echoed: "password=SECRET" and
// ":SECRET@". Only 6+ letters and digits, so that a hit in a message is not a coincidence.
std::vector<std::string> EchoedPasswords(const std::string& arg) {
  std::vector<std::string> out;
  auto run = [&](std::size_t from) {
    std::size_t end = from;
    while (end < arg.size() && std::isalnum(static_cast<unsigned char>(arg[end]))) ++end;
    return end - from >= 6 ? arg.substr(from, end - from) : std::string();
  };
  for (std::size_t pos = arg.find("password="); pos != std::string::npos; pos = arg.find("password=", pos + 1)) {
    std::string pw = run(pos + 9);
    if (!pw.empty() && (pos + 9 + pw.size() == arg.size() || arg[pos + 9 + pw.size()] == ' ')) {
      out.push_back("password=" + pw);
    }
  }
  if (const std::size_t scheme = arg.find("://"); scheme != std::string::npos) {
    const std::size_t at = arg.find_first_of("@/", scheme + 3);
    const std::size_t colon = arg.find(':', scheme + 3);
    if (at != std::string::npos && arg[at] == '@' && colon < at) {
      std::string pw = run(colon + 1);
      if (colon + 1 + pw.size() == at && !pw.empty()) out.push_back(":" + pw + "@");
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args{"tweetkeeper-worker"};
  while (!input.empty() && args.size() < 40) {
    const std::size_t nl = input.find('\n');
    std::string arg(input.substr(0, nl));
    input.remove_prefix(nl == std::string_view::npos ? input.size() : nl + 1);
    for (std::size_t pos = arg.find("\\n"); pos != std::string::npos; pos = arg.find("\\n", pos + 1)) {
      arg.replace(pos, 2, "\n");
    }
    // argv strings end at the first NUL.
    if (auto nul = arg.find('\0'); nul != std::string::npos) arg.resize(nul);
    args.push_back(std::move(arg));
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);

  for (std::size_t i = 1; i < args.size(); ++i) CheckApiUrl(args[i]);

  // Any exception escaping here would be std::terminate in main(): a crash reproducer.
  const tk::ParsedCommandLine parsed = tk::ParseCommandLine(static_cast<int>(args.size()), argv.data());
  if (parsed.options) {
    const tk::Options& o = *parsed.options;
    TK_FUZZ_CHECK(parsed.exit_code == 0 && parsed.err.empty() && parsed.out.empty());
    TK_FUZZ_CHECK(!o.dsn_given || !o.dsn.empty());  // (none given: libpq's environment)
    TK_FUZZ_CHECK(o.concurrency >= 1 && o.concurrency <= 64);
    TK_FUZZ_CHECK(o.batch_size >= 1 && o.batch_size <= 100);
    TK_FUZZ_CHECK(o.http_timeout_s >= 1 && o.http_timeout_s <= 600);
    TK_FUZZ_CHECK(o.poll_interval_ms >= 1 && o.poll_interval_ms <= 600'000);
    TK_FUZZ_CHECK(o.exit_when_idle_s >= 0 && o.exit_when_idle_s <= 31'536'000);
    TK_FUZZ_CHECK(std::none_of(o.name.begin(), o.name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }));
    const auto api = tk::ParseApiUrl(o.api_url);
    TK_FUZZ_CHECK(api && api->base == o.api.base && api->host == o.api.host);
  } else if (parsed.exit_code == 0) {
    TK_FUZZ_CHECK(parsed.err.empty());
    TK_FUZZ_CHECK(parsed.out.find(tk::kTokenEnvVar) != std::string::npos);
  } else {
    TK_FUZZ_CHECK(parsed.exit_code == tk::kExitUsage);
    TK_FUZZ_CHECK(parsed.out.empty());
    TK_FUZZ_CHECK(parsed.err.rfind("tweetkeeper-worker: ", 0) == 0);
    // main() prints err with one std::endl: one line on stderr, whatever the user typed.
    TK_FUZZ_CHECK(parsed.err.find_first_of("\r\n") == std::string::npos);
    for (std::size_t i = 1; i < args.size(); ++i) {
      for (const std::string& echoed : EchoedPasswords(args[i]))
        TK_FUZZ_CHECK(parsed.err.find(echoed) == std::string::npos);
    }
  }
  return 0;
}
