#pragma once
// JSON from outside (an API's answer, a line of a file, a stored payload) is parsed only when it
// nests at most kMaxDepth arrays and objects. RapidJSON's iterative parser reads any depth, but
// a Document's destructor, Accept() and our own walks recurse: `{"favourites_count": [[[[...`
// a million deep overflowed the worker's stack (SIGSEGV, and again at the batch's next claim).
// Real answers nest 10 levels or fewer (an X tweet with includes: 6). Header-only: the worker,
// the importer and the exporter each link a different set of libraries.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

namespace tweetkeeper::json {

inline constexpr std::size_t kMaxDepth = 64;

// The offset of the first '[' or '{' that opens level max_depth + 1 (strings skipped), or nullopt
// when text nests no deeper. One pass, no allocation; malformed text is the parser's to refuse.
inline std::optional<std::size_t> TooDeepAt(std::string_view text, std::size_t max_depth = kMaxDepth) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// Parses text into doc (iteratively, with the extra Flags) when it nests at most kMaxDepth
// levels. Returns "" when doc holds it, otherwise what is wrong and where, for a log line or a
// batch's reason; doc is then not to be read.
template <unsigned Flags = 0>
std::string Parse(rapidjson::Document& doc, std::string_view text) {
  if (const auto at = TooDeepAt(text)) {
    return "nested deeper than " + std::to_string(kMaxDepth) + " levels at offset " + std::to_string(*at);
  }
  doc.Parse<Flags | rapidjson::kParseIterativeFlag>(text.data(), text.size());
  if (!doc.HasParseError()) return {};
  return std::string(rapidjson::GetParseError_En(doc.GetParseError())) + " at offset " +
         std::to_string(doc.GetErrorOffset());
}

}  // namespace tweetkeeper::json
