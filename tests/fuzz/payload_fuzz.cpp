// Fuzz target: the values exchanged with the SQL API (queue/payload): ParseBigintArray reads
// the bigint[] text claim_batch() returns ("{1,2,3}"), ObservationsJson writes what
// complete_batch() takes.
//
// Input: the array text as PostgreSQL would send it (anything, really).
// Checks: an accepted text is "{...}" and its values survive writing and re-reading; the JSON
// written from them is valid and carries exactly those numbers (a missing metric is null).

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "queue/payload.hpp"

namespace tk = tweetkeeper::worker;

namespace {

std::string ArrayText(const std::vector<std::int64_t>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(values[i]);
  }
  return out + "}";
}

void CheckCount(const rapidjson::Value& object, const char* name, const std::optional<std::int64_t>& expected) {
  auto it = object.FindMember(name);
  TK_FUZZ_CHECK(it != object.MemberEnd());
  if (expected) {
    TK_FUZZ_CHECK(it->value.IsInt64() && it->value.GetInt64() == *expected);
  } else {
    TK_FUZZ_CHECK(it->value.IsNull());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = tk::ParseBigintArray(text);
  if (!parsed) return 0;

  TK_FUZZ_CHECK(text.size() >= 2 && text.front() == '{' && text.back() == '}');
  TK_FUZZ_CHECK(parsed->size() <= text.size() / 2);  // every value takes a digit and a separator
  const auto again = tk::ParseBigintArray(ArrayText(*parsed));
  TK_FUZZ_CHECK(again && *again == *parsed);

  // The numbers as tweet ids and metrics; every third metric "not sent".
  std::vector<tk::Observation> observations;
  for (std::size_t i = 0; i < parsed->size(); ++i) {
    tk::Observation o;
    o.id = (*parsed)[i];
    const std::int64_t v = (*parsed)[(i + 1) % parsed->size()];
    if (i % 3 != 0) o.metrics.retweet_count = v;
    if (i % 3 != 1) o.metrics.like_count = v;
    o.metrics.impression_count = o.id;
    observations.push_back(o);
  }
  const std::string json = tk::ObservationsJson(observations);
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseValidateEncodingFlag>(json.data(), json.size());
  TK_FUZZ_CHECK(!doc.HasParseError() && doc.IsArray() && doc.Size() == observations.size());
  for (rapidjson::SizeType i = 0; i < doc.Size(); ++i) {
    const rapidjson::Value& item = doc[i];
    TK_FUZZ_CHECK(item.IsObject() && item.MemberCount() == 1 + tk::kCountFields.size());
    const tk::Observation& o = observations[i];
    CheckCount(item, "id", o.id);
    for (const tk::CountField& field : tk::kCountFields) CheckCount(item, field.name, o.metrics.*field.member);
  }
  return 0;
}
