#pragma once
// What the follower's parsers (timeline.*, bluesky_follow.*) first do with any answer: say why it
// is of no use, or parse the JSON body of a 200. Pure, header-only.

#include <rapidjson/document.h>

#include <string>
#include <string_view>

#include "http/http_response.hpp"
#include "json/bounded.hpp"
#include "provider/json_fields.hpp"  // CleanText, Snippet

namespace tweetkeeper::worker::follow {

// "HTTP <status>" and what the body says, or "no answer: <why>" when none came: a reason.
inline std::string AnswerReason(const HttpResponse& r) {
  if (r.status == 0) return "no answer: " + CleanText(r.error, 200);
  std::string out = "HTTP " + std::to_string(r.status);
  if (!r.body.empty()) out += ": " + Snippet(r.body);
  return out;
}

// A 200 whose body is JSON (valid UTF-8) parsed into doc: true. Else false, and *reason says why
// not: the answer's AnswerReason, or "unparsable 200 body: <the parser's error>".
inline bool ParseOkBody(rapidjson::Document& doc, const HttpResponse& r, std::string* reason) {
  if (r.status != 200) {
    *reason = AnswerReason(r);
    return false;
  }
  const std::string error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, r.body);
  if (!error.empty()) *reason = "unparsable 200 body: " + error;
  return error.empty();
}

// The same, and the body must be a JSON value of `type`; when it is not, *reason is
// "unparsable 200 body: <not_type>" ("not an object", ...).
inline bool ParseOkBody(rapidjson::Document& doc, const HttpResponse& r, rapidjson::Type type,
                        std::string_view not_type, std::string* reason) {
  if (!ParseOkBody(doc, r, reason)) return false;
  if (doc.GetType() == type) return true;
  *reason = "unparsable 200 body: " + std::string(not_type);
  return false;
}

}  // namespace tweetkeeper::worker::follow
