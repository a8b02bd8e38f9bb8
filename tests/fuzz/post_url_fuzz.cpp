// Fuzz target: ParsePostUrl (extension/post_url.cpp), which reads every post URL given to
// parse_post_url() in the database and to tweetkeeper-import. The input is the URL, as is.
//  - It returns a post or throws PostUrlError, nothing else.
//  - A post has a key, and its canonical spelling is a fixed point: parsed again it is the same
//    post (network, host, key) with the same canonical spelling.
//  - A refusal's message is one line of text PostgreSQL accepts (it becomes an ERROR's message)
//    and stays short whatever the input's length.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "post_url.hpp"

namespace tk = tweetkeeper;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  try {
    const tk::PostRef ref = tk::ParsePostUrl(url);
    TK_FUZZ_CHECK(!ref.key.empty());
    TK_FUZZ_CHECK(tweetkeeper::fuzz::PgUtf8Valid(ref.canonical) && tweetkeeper::fuzz::PgUtf8Valid(ref.author));
    const tk::PostRef again = tk::ParsePostUrl(ref.canonical);
    TK_FUZZ_CHECK(again.network == ref.network && again.host == ref.host && again.key == ref.key);
    TK_FUZZ_CHECK(again.canonical == ref.canonical && again.created_ms == ref.created_ms);
  } catch (const tk::PostUrlError& e) {
    const std::string_view msg = e.what();
    TK_FUZZ_CHECK(tweetkeeper::fuzz::PgUtf8Valid(msg));
    TK_FUZZ_CHECK(msg.find('\n') == std::string_view::npos && msg.find('\r') == std::string_view::npos);
    TK_FUZZ_CHECK(msg.size() < 2000);
  }
  return 0;
}
