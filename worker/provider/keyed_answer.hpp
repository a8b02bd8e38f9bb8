#pragma once
// Shared by the providers whose posts are named by keys (Bluesky's at:// URIs, Mastodon's status
// ids): their answers list the posts shown, in no promised order and without errors for the
// others, so each item is matched to the claim's ids by one string member, and every id not
// matched was left out.

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "batch/batch_result.hpp"
#include "json/bounded.hpp"
#include "provider/answer_status.hpp"
#include "provider/content_hash.hpp"
#include "provider/json_fields.hpp"
#include "provider/provider.hpp"

namespace tweetkeeper::worker {

// A 200 answer's body parsed into `doc`, or the failure that says why it cannot be: the parser's
// error, and the start of the body when it does not even begin as the answer would (`opening`,
// '{' or '[': an HTML page from a proxy, say).
inline std::optional<BatchResult> ParseOkBody(rapidjson::Document& doc, std::string_view body, char opening) {
  const std::string parse_error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, body);
  if (parse_error.empty()) return std::nullopt;
  std::string reason = "unparsable 200 body (" + std::to_string(body.size()) + " bytes): " + parse_error;
  const auto first = body.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && body[first] != opening) reason += ": " + Snippet(body);
  return Failed(FailureKind::kUnparsable, std::move(reason));
}

// `items`: the answer's array; `key_member`: the member that holds an item's key; `read` fills an
// Observation's counts and time from an item. `what` names the posts in a failure's reason.
template <typename Read>
BatchResult MatchKeyedAnswer(const rapidjson::Value& items, const char* key_member, const std::vector<std::int64_t>& ids,
                             const PostKeys& keys, const char* what, Read&& read) {
  std::unordered_map<std::string_view, std::int64_t> id_of;  // the claim's key -> id
  for (std::size_t i = 0; i < ids.size() && i < keys.keys.size(); ++i) id_of.emplace(keys.keys[i], ids[i]);
  std::unordered_set<std::int64_t> seen;
  BatchResult result;
  for (const rapidjson::Value& item : items.GetArray()) {
    const auto it = item.IsObject() ? id_of.find(StringMember(item, key_member)) : id_of.end();
    if (it == id_of.end() || !seen.insert(it->second).second) {
      ++result.ignored;
      continue;
    }
    Observation obs;
    obs.id = it->second;
    read(item, obs);
    AttachPayload(obs, item, nullptr, keys);
    result.observations.push_back(std::move(obs));
  }
  if (result.observations.empty() && result.ignored > 0) {
    return Failed(FailureKind::kUnparsable,
                  "200 answer accounts for none of the " + std::to_string(ids.size()) + " requested " + what);
  }
  for (std::int64_t id : ids) {
    if (seen.insert(id).second) result.omitted.push_back(id);  // left out: deleted, hidden, not there
  }
  return result;
}

}  // namespace tweetkeeper::worker
