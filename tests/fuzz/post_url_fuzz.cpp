// Fuzz target: ParsePostUrl and ParseProfileUrl (extension/post_url.cpp), which read every post
// URL given to parse_post_url() in the database and to tweetkeeper-import, and every profile URL
// given to follow(). The input is the URL, as is, read as both.
//  - It returns a post or throws PostUrlError, nothing else.
//  - A post has a key, and its canonical spelling is a fixed point: parsed again it is the same
//    post (network, host, key) with the same canonical spelling.
//  - A profile has a handle or an id, and its canonical spelling is a fixed point likewise.
//  - A refusal's message is one line of text PostgreSQL accepts (it becomes an ERROR's message)
//    and stays short whatever the input's length.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "post_url.hpp"

namespace tk = tweetkeeper;

namespace {
void CheckRefusal(const tk::PostUrlError& e) {
  const std::string_view msg = e.what();
  TK_FUZZ_CHECK(tweetkeeper::fuzz::PgUtf8Valid(msg));
  TK_FUZZ_CHECK(msg.find('\n') == std::string_view::npos && msg.find('\r') == std::string_view::npos);
  TK_FUZZ_CHECK(msg.size() < 2000);
}

// What `parse` reads `text` as; nothing when it refuses it (the refusal checked).
template <typename Parse>
auto Parsed(Parse parse, std::string_view text) -> std::optional<decltype(parse(text))> {
  try {
    return parse(text);
  } catch (const tk::PostUrlError& e) {
    CheckRefusal(e);
    return std::nullopt;
  }
}

// What `parse` reads a canonical spelling it gave as: refusing it is a failure, not a refusal of
// the input.
template <typename Parse>
auto Reparsed(Parse parse, const std::string& canonical) -> decltype(parse(canonical)) {
  decltype(parse(canonical)) again;
  try {
    again = parse(canonical);
  } catch (const tk::PostUrlError&) {
    TK_FUZZ_CHECK(!"the canonical URL is refused");
  }
  return again;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  if (const std::optional<tk::ProfileRef> profile = Parsed(tk::ParseProfileUrl, url)) {
    const tk::ProfileRef& ref = *profile;
    TK_FUZZ_CHECK(!ref.handle.empty() || !ref.account_id.empty());
    TK_FUZZ_CHECK(tweetkeeper::fuzz::PgUtf8Valid(ref.canonical) && tweetkeeper::fuzz::PgUtf8Valid(ref.handle));
    const tk::ProfileRef again = Reparsed(tk::ParseProfileUrl, ref.canonical);
    TK_FUZZ_CHECK(again.network == ref.network && again.host == ref.host && again.handle == ref.handle);
    TK_FUZZ_CHECK(again.canonical == ref.canonical && again.account_id == ref.account_id);
  }
  if (const std::optional<tk::PostRef> post = Parsed(tk::ParsePostUrl, url)) {
    const tk::PostRef& ref = *post;
    TK_FUZZ_CHECK(!ref.key.empty());
    TK_FUZZ_CHECK(tweetkeeper::fuzz::PgUtf8Valid(ref.canonical) && tweetkeeper::fuzz::PgUtf8Valid(ref.author));
    const tk::PostRef again = Reparsed(tk::ParsePostUrl, ref.canonical);
    TK_FUZZ_CHECK(again.network == ref.network && again.host == ref.host && again.key == ref.key);
    TK_FUZZ_CHECK(again.canonical == ref.canonical && again.created_ms == ref.created_ms);
  }
  return 0;
}
