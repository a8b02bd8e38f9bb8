// Shared by the provider fuzz targets: a provider's ParseAnswer, the worker's parser for API answers (untrusted:
// whatever the API, a proxy or a man in the middle sends), and the JSON the worker then hands
// to complete_batch().
//
// Input format (readable, so the corpus is made of real-shaped answers):
//   STATUS [ID,ID,...]\n        the HTTP status (0 = transport failure, the rest is the error);
//                               the requested ids (default: every number in the body); for a
//                               keyed provider (Bluesky) the claim's keys instead, separated by
//                               blanks or commas (default: every "at://..." string in the body),
//                               their ids -1, -2, ...
//   name: value\n ...           response headers (x-rate-limit-*), then an empty line
//   body
//
// Besides "no crash, no leak, no UB", it checks what the rest of the worker relies on: a
// success accounts for at least one requested id and only those, each once; counts are
// non-negative; problem types and details are bounded and valid UTF-8 for PostgreSQL; the
// payloads for complete_batch() are valid JSON that jsonb accepts.
#pragma once

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fuzz_check.hpp"
#include "provider/json_fields.hpp"
#include "provider/provider.hpp"
#include "queue/payload.hpp"

namespace tk = tweetkeeper::worker;
using tweetkeeper::fuzz::PgUtf8Valid;

namespace {

std::string_view NextLine(std::string_view& rest) {
  const std::size_t nl = rest.find('\n');
  std::string_view line = rest.substr(0, nl);
  rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Ids the way the worker has them: from claim_batch, at most 100, distinct, positive.
void AddIds(std::string_view text, std::vector<std::int64_t>& ids) {
  std::set<std::int64_t> seen(ids.begin(), ids.end());
  std::size_t i = 0;
  while (i < text.size() && ids.size() < 100) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (auto id = tk::ParseTweetId(text.substr(i, j - i)); id && seen.insert(*id).second) ids.push_back(*id);
    i = j;
  }
}

// What jsonb needs: valid UTF-8, and no \u0000 (a string escape that decodes to NUL).
void CheckJsonStrings(const rapidjson::Value& v) {
  if (v.IsString()) {
    TK_FUZZ_CHECK(PgUtf8Valid({v.GetString(), v.GetStringLength()}));
  } else if (v.IsArray()) {
    for (const auto& item : v.GetArray()) CheckJsonStrings(item);
  } else if (v.IsObject()) {
    for (const auto& member : v.GetObject()) CheckJsonStrings(member.value);
  }
}

void CheckPayloadJson(const std::string& json, std::size_t expected_items) {
  TK_FUZZ_CHECK(PgUtf8Valid(json));
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(json.data(), json.size());
  TK_FUZZ_CHECK(!doc.HasParseError());
  TK_FUZZ_CHECK(doc.IsArray() && doc.Size() == expected_items);
  CheckJsonStrings(doc);
}

}  // namespace

// The claim's keys (at most 25, distinct) from a list separated by blanks or commas, or from the
// "at://..." strings of a body.
void AddKeys(std::string_view text, bool quoted, std::vector<std::string>& keys) {
  std::set<std::string> seen(keys.begin(), keys.end());
  std::size_t i = 0;
  while (i < text.size() && keys.size() < 25) {
    std::size_t start = quoted ? text.find("\"at://", i) : text.find_first_not_of(" \t,", i);
    if (start == std::string_view::npos) break;
    if (quoted) ++start;
    std::size_t end = text.find_first_of(quoted ? "\"" : " \t,", start);
    if (end == std::string_view::npos) end = text.size();
    std::string key(text.substr(start, end - start));
    if (!key.empty() && seen.insert(key).second) keys.push_back(key);
    i = end + 1;
  }
}

// Parses one fuzz input as an HTTP answer with `provider` and checks the invariants above.
inline int FuzzProviderAnswer(const tk::Provider& provider, const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);

  tk::HttpResponse response;
  std::vector<std::int64_t> ids;
  tk::PostKeys keys;
  const std::string_view first = NextLine(rest);
  std::size_t digits = 0;
  while (digits < first.size() && digits < 4 && std::isdigit(static_cast<unsigned char>(first[digits]))) ++digits;
  response.status = digits ? std::stol(std::string(first.substr(0, digits))) : 200;
  if (provider.Keyed()) {
    AddKeys(first.substr(digits), false, keys.keys);
  } else {
    AddIds(first.substr(digits), ids);
  }

  for (std::string_view line = NextLine(rest); !line.empty(); line = NextLine(rest)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(Trim(line.substr(0, colon)));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    response.headers[name] = std::string(line.substr(colon + 1));
  }
  if (response.status == 0) {
    response.error = std::string(rest);
  } else {
    response.body = std::string(rest);
  }
  if (provider.Keyed()) {
    if (keys.keys.empty()) AddKeys(rest, true, keys.keys);
    if (keys.keys.empty()) keys.keys.push_back("at://did:plc:none/app.bsky.feed.post/3l6oveex3ii2l");
    for (std::size_t i = 0; i < keys.keys.size(); ++i) ids.push_back(-static_cast<std::int64_t>(i) - 1);
  } else {
    if (ids.empty()) AddIds(rest, ids);
    if (ids.empty()) ids.push_back(1);
  }

  // Payloads on for odd-sized inputs, with the first id's payload "kept" (a hash no answer
  // has): the provider hashes what it parsed and hands on only new payloads.
  std::unordered_map<std::int64_t, std::string> kept;
  keys.payloads = size % 2 == 1;
  kept.emplace(ids.front(), std::string(32, '0'));
  keys.kept = &kept;
  const tk::BatchResult r = provider.ParseAnswer(response, ids, keys);

  TK_FUZZ_CHECK(tk::FailureKindName(r.failure)[0] != '?');
  // The refused key's position, when an answer names one, is only ever that of a 400 (and at most
  // 4 digits: the batch splitter ignores a position outside the request).
  if (const std::optional<std::size_t> at = provider.RefusedKey(response)) {
    TK_FUZZ_CHECK(response.status == 400 && r.failure == tk::FailureKind::kOurRequestInvalid && *at < 10000);
  }
  if (r.ok()) {
    // A 200; or Mastodon's single-status route saying a status is not there (left out).
    TK_FUZZ_CHECK(response.status == 200 || (provider.Name() == "mastodon" && ids.size() == 1 && response.status == 404));
    TK_FUZZ_CHECK(r.reason.empty());
    // An answer about none of our ids is usable only when it left every one of them out.
    TK_FUZZ_CHECK(!r.observations.empty() || !r.problems.empty() || !r.omitted.empty());
  } else {
    TK_FUZZ_CHECK(!r.reason.empty());
    TK_FUZZ_CHECK(r.observations.empty() && r.problems.empty());
    if (response.status == 0) TK_FUZZ_CHECK(r.failure == tk::FailureKind::kTransport);
    if (response.status == 429) {
      TK_FUZZ_CHECK(r.failure == tk::FailureKind::kRateLimited || r.failure == tk::FailureKind::kUsageCapped);
    }
  }
  // The reason is logged and passed to release_batch() as text (cut to 500 bytes at a
  // character boundary there): PostgreSQL refuses NUL and invalid UTF-8 in it, and then the
  // batch is not handed back. A transport error is curl's own text.
  if (response.status != 0) TK_FUZZ_CHECK(PgUtf8Valid(r.reason));

  const std::unordered_set<std::int64_t> requested(ids.begin(), ids.end());
  std::unordered_set<std::int64_t> answered;
  for (const tk::Observation& o : r.observations) {
    TK_FUZZ_CHECK(requested.count(o.id) == 1);
    TK_FUZZ_CHECK(answered.insert(o.id).second);
    for (const auto& count : {o.metrics.retweet_count, o.metrics.reply_count, o.metrics.like_count,
                              o.metrics.quote_count, o.metrics.bookmark_count, o.metrics.impression_count}) {
      TK_FUZZ_CHECK(!count || (*count >= 0 && *count <= tk::kMaxCount));
    }
    TK_FUZZ_CHECK(PgUtf8Valid(o.invalid));  // stored in problem_detail through a jsonb parameter
    // A payload only when asked for, an object, with its hex md5; an author only beside one.
    TK_FUZZ_CHECK(o.payload.empty() || keys.payloads);
    TK_FUZZ_CHECK(o.author.empty() || !o.payload.empty());
    if (!o.payload.empty()) {
      TK_FUZZ_CHECK(o.payload.front() == '{' && o.content_hash.size() == 32);
      TK_FUZZ_CHECK(std::all_of(o.content_hash.begin(), o.content_hash.end(),
                                [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }));
    }
  }
  for (const tk::Problem& p : r.problems) {
    TK_FUZZ_CHECK(requested.count(p.id) == 1);
    TK_FUZZ_CHECK(answered.insert(p.id).second);
    TK_FUZZ_CHECK(!p.type.empty() && p.type.size() <= 100);
    TK_FUZZ_CHECK(p.detail.size() <= 500);
    // Stored in tweets.problem_type / problem_detail through a jsonb parameter.
    TK_FUZZ_CHECK(PgUtf8Valid(p.type));
    TK_FUZZ_CHECK(PgUtf8Valid(p.detail));
  }
  for (const auto& v : {r.rate_limit.limit, r.rate_limit.remaining, r.rate_limit.reset_epoch_s}) {
    TK_FUZZ_CHECK(!v || *v >= 0);
  }

  if (r.ok()) {
    // Every requested id is accounted for exactly once: found, an error, or left out.
    for (std::int64_t id : r.omitted) {
      TK_FUZZ_CHECK(requested.count(id) == 1);
      TK_FUZZ_CHECK(answered.insert(id).second);
    }
    TK_FUZZ_CHECK(answered.size() == requested.size());
    CheckPayloadJson(tk::ObservationsJson(r.observations), r.observations.size());
    CheckPayloadJson(tk::ProblemsJson(r.problems), r.problems.size());
  }
  return 0;
}
