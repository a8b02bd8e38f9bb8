#include "mock_api/compliance.hpp"

#include <openssl/hmac.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <set>

#include "mock_api/gone.hpp"
#include "mock_api/mock_api.hpp"  // TokenFingerprint
#include "mock_api/problems.hpp"
#include "mock_api/tweet_model.hpp"

namespace tweetkeeper::mock {
namespace {

// compliance_job.fields' enum (openapi.json 2.159): accepted; every answer has every field, as
// X's own examples show them (quickstart: resumable too).
constexpr const char* kJobFields =
    "created_at,download_expires_at,download_url,id,name,resumable,status,type,upload_expires_at,upload_url";
constexpr const char* kListStatuses = "created,in_progress,failed,complete";  // the GET filter's enum (no expired)
// Not a secret: it only makes the URLs' signatures checkable (a URL changed by hand is refused).
constexpr const char* kSigningKey = "tweetkeeper-mock-storage";

std::string Hex(const unsigned char* bytes, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) (out += kHex[bytes[i] >> 4]) += kHex[bytes[i] & 15];
  return out;
}

std::string Signature(const std::string& method, const std::string& path, const std::string& date,
                      const std::string& expires, const std::string& content_type) {
  const std::string text = method + "\n" + path + "\n" + date + "\n" + expires + "\n" + content_type;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), kSigningKey, static_cast<int>(std::char_traits<char>::length(kSigningKey)),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), md, &len);
  return Hex(md, len);
}

// X-Goog-Date's basic ISO 8601: 20210811T194255Z.
std::string GoogDate(int64_t ms) {
  std::string iso = FormatCreatedAt(ms);  // 2021-08-11T19:42:55.000Z
  iso.erase(std::remove_if(iso.begin(), iso.end(), [](char c) { return c == '-' || c == ':'; }), iso.end());
  return iso.substr(0, 15) + "Z";
}

// Cloud Storage's XML error body (its XML API answers signed URLs so).
EndpointReply StorageError(int status, const std::string& code, const std::string& message,
                           const std::string& details = "") {
  EndpointReply r;
  r.status = status;
  r.content_type = "application/xml; charset=UTF-8";
  r.body = "<?xml version='1.0' encoding='UTF-8'?><Error><Code>" + code + "</Code><Message>" + message + "</Message>" +
           (details.empty() ? "" : "<Details>" + details + "</Details>") + "</Error>";
  return r;
}

EndpointReply Problem(int status, const std::string& body) {
  EndpointReply r;
  r.status = status;
  r.content_type = kProblemJson;
  r.body = body;
  return r;
}

EndpointReply Invalid(const std::string& parameter, const std::string& value, const std::string& message) {
  return Problem(400, InvalidRequestProblem({{parameter, {value}, message}}));
}

// The query parameters an operation has (besides path ones, which start with ':'), each value
// within its enum; an invalid-request problem for the first that is not.
std::optional<EndpointReply> CheckQuery(const QueryParams& params, const std::map<std::string, std::string>& known) {
  for (const auto& [key, value] : params) {
    if (!key.empty() && key[0] == ':') continue;
    const auto it = known.find(key);
    if (it == known.end()) {
      std::string names;
      for (const auto& [name, _] : known) names += (names.empty() ? "" : ",") + name;
      return Invalid(key, value, "The query parameter [" + key + "] is not one of [" + names + "]");
    }
    const std::vector<std::string> allowed = SplitCommas(it->second);
    for (const std::string& v : SplitCommas(value)) {
      if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
        return Invalid(key, v, "The `" + key + "` query parameter value [" + v + "] is not one of [" + it->second + "]");
    }
  }
  return std::nullopt;
}

void Str(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

}  // namespace

void ComplianceJobs::SetStorageUrl(const std::string& storage_url) {
  std::lock_guard<std::mutex> lock(mutex_);
  storage_url_ = storage_url;
}

void ComplianceJobs::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.clear();
}

std::string ComplianceJobs::Status(const ComplianceJob& job, const MockConfig& config, int64_t now_ms) {
  if (job.uploaded_ms == 0) return now_ms >= job.created_ms + config.compliance_upload_seconds * 1000 ? "expired" : "created";
  if (now_ms < job.uploaded_ms + config.compliance_processing_ms) return "in_progress";
  if (job.unparsable) return "failed";
  return now_ms >= job.created_ms + config.compliance_download_seconds * 1000 ? "expired" : "complete";
}

std::string ComplianceJobs::Results(const ComplianceJob& job, const MockConfig& config) {
  const int64_t done_ms = job.uploaded_ms + config.compliance_processing_ms;
  std::string out;
  for (const uint64_t id : job.ids) {
    std::string reason, created_at, redacted_at;
    if (job.type == "users") {
      const std::optional<GoneState> s = config.gone->XUser(id, done_ms * 1000 + 999);
      if (!s || s->reason == GoneReason::kActive) continue;
      reason = GoneReasonName(s->reason);
      created_at = FormatCreatedAt(XUserOf(id).created_ms);
      redacted_at = FormatCreatedAt(s->since_us / 1000);
    } else {
      // A post made gone (or by an author made gone) says when; the world's own fates do not
      // ("Not all compliance events will include the redacted_at field").
      if (const std::optional<GoneState> s = XGone(id, config, done_ms)) {
        reason = GoneReasonName(s->reason);
        redacted_at = FormatCreatedAt(s->since_us / 1000);
      } else {
        const TweetState state = ClassifyTweet(id, config, done_ms);
        if (state == TweetState::kNotFound) reason = "deleted";
        if (state == TweetState::kProtected) reason = "protected";
        if (reason.empty()) continue;
      }
      created_at = CreatedAt(id).value_or(FormatCreatedAt(kTwitterEpochMs));
    }
    rapidjson::StringBuffer buf;
    JsonWriter w(buf);
    w.StartObject();
    Str(w, "id", std::to_string(id));
    Str(w, "action", "delete");
    Str(w, "created_at", created_at);
    if (!redacted_at.empty()) Str(w, "redacted_at", redacted_at);
    Str(w, "reason", reason);
    w.EndObject();
    out += buf.GetString();
    out += '\n';
  }
  return out;
}

std::string ComplianceJobs::SignedUrl(const ComplianceJob& job, bool upload, const MockConfig& config) const {
  const std::string bucket = job.type == "users" ? "/twttr-user-compliance/" : "/twttr-tweet-compliance/";
  const std::string path = bucket + job.id + (upload ? "/submission/" : "/delivery/") +
                           TokenFingerprint(job.token) + "_" + job.id;
  const std::string date = GoogDate(job.created_ms);
  const std::string expires =
      std::to_string(upload ? config.compliance_upload_seconds : config.compliance_download_seconds);
  return storage_url_ + path + "?X-Goog-Algorithm=GOOG4-HMAC-SHA256&X-Goog-Credential=tweetkeeper-mock%2F" +
         date.substr(0, 8) + "%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=" + date + "&X-Goog-Expires=" + expires +
         "&X-Goog-SignedHeaders=" + (upload ? "content-type%3Bhost" : "host") +
         "&X-Goog-Signature=" + Signature(upload ? "PUT" : "GET", path, date, expires, upload ? "text/plain" : "");
}

void ComplianceJobs::WriteJob(JsonWriter& w, const ComplianceJob& job, const MockConfig& config, int64_t now_ms) const {
  w.StartObject();
  Str(w, "id", job.id);
  Str(w, "type", job.type);
  if (!job.name.empty()) Str(w, "name", job.name);
  w.Key("resumable");
  w.Bool(job.resumable);
  Str(w, "created_at", FormatCreatedAt(job.created_ms));
  Str(w, "upload_url", SignedUrl(job, true, config));
  Str(w, "upload_expires_at", FormatCreatedAt(job.created_ms + config.compliance_upload_seconds * 1000));
  Str(w, "download_url", SignedUrl(job, false, config));
  Str(w, "download_expires_at", FormatCreatedAt(job.created_ms + config.compliance_download_seconds * 1000));
  Str(w, "status", Status(job, config, now_ms));
  w.EndObject();
}

EndpointReply ComplianceJobs::Create(const std::string& token, const std::string& body, const MockConfig& config,
                                     int64_t now_ms) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return Invalid("body", body.substr(0, 100), "The request body is not a JSON object");
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    const std::string key(it->name.GetString(), it->name.GetStringLength());
    if (key != "type" && key != "name" && key != "resumable")
      return Invalid(key, "", "[" + key + "] is not one of [type,name,resumable]");
  }
  if (!doc.HasMember("type") || !doc["type"].IsString() ||
      (std::string(doc["type"].GetString()) != "tweets" && std::string(doc["type"].GetString()) != "users")) {
    return Invalid("type", doc.HasMember("type") && doc["type"].IsString() ? doc["type"].GetString() : "",
                   "The `type` body field must be one of [tweets,users]");
  }
  ComplianceJob job;
  job.type = doc["type"].GetString();
  if (doc.HasMember("name")) {
    if (!doc["name"].IsString() || doc["name"].GetStringLength() > 64)
      return Invalid("name", doc["name"].IsString() ? doc["name"].GetString() : "",
                     "The `name` body field must be a string of at most 64 characters");
    job.name = doc["name"].GetString();
  }
  if (doc.HasMember("resumable")) {
    if (!doc["resumable"].IsBool()) return Invalid("resumable", "", "The `resumable` body field must be a boolean");
    job.resumable = doc["resumable"].GetBool();
  }
  job.token = token;
  job.created_ms = now_ms - now_ms % 1000;  // X's times are whole seconds
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, other] : jobs_) {
    const std::string status = Status(other, config, now_ms);
    if (other.token == token && other.type == job.type && (status == "created" || status == "in_progress")) {
      // X's description of the spec's ConflictProblem; no source gives the live body.
      return Problem(409, std::string(R"({"title":"Conflict","detail":"You cannot create a new job if one is )") +
                              R"(already in progress.","type":")" + kProblemsBase + R"(conflict","status":409})");
    }
  }
  job.id = std::to_string((static_cast<uint64_t>(now_ms - kTwitterEpochMs) << 22) | (made_++ & 0x3FFFFF));
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("data");
  WriteJob(w, job, config, now_ms);
  w.EndObject();
  jobs_.emplace(job.id, std::move(job));
  EndpointReply r;
  r.body = buf.GetString();
  return r;
}

EndpointReply ComplianceJobs::List(const std::string& token, const QueryParams& params, const MockConfig& config,
                                   int64_t now_ms) {
  if (auto bad = CheckQuery(params, {{"type", "tweets,users"}, {"status", kListStatuses}, {"compliance_job.fields", kJobFields}}))
    return *bad;
  const auto type = params.find("type");
  if (type == params.end()) return Invalid("type", "", "The `type` query parameter can not be empty");
  const auto status = params.find("status");
  std::lock_guard<std::mutex> lock(mutex_);
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  int64_t n = 0;
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) {  // newest first (ids grow with time)
    const ComplianceJob& job = it->second;
    if (job.token != token || job.type != type->second) continue;
    if (status != params.end() && Status(job, config, now_ms) != status->second) continue;
    if (n++ == 0) {
      w.Key("data");
      w.StartArray();
    }
    WriteJob(w, job, config, now_ms);
  }
  if (n > 0) w.EndArray();  // (data has at least one item, or is left out)
  w.Key("meta");
  w.StartObject();
  w.Key("result_count");
  w.Int64(n);
  w.EndObject();
  w.EndObject();
  EndpointReply r;
  r.body = buf.GetString();
  return r;
}

EndpointReply ComplianceJobs::Get(const std::string& token, const std::string& id, const QueryParams& params,
                                  const MockConfig& config, int64_t now_ms) {
  if (auto bad = CheckQuery(params, {{"compliance_job.fields", kJobFields}})) return *bad;
  if (id.empty() || id.size() > 19 || id.find_first_not_of("0123456789") != std::string::npos)
    return Invalid("id", id, "The `id` query parameter value [" + id + "] does not match ^[0-9]{1,19}$");
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.token != token) {
    // No source gives X's answer for a job that is not the caller's: a 404 Problem.
    return Problem(404, GenericProblem(404, "Not Found"));
  }
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("data");
  WriteJob(w, it->second, config, now_ms);
  w.EndObject();
  EndpointReply r;
  r.body = buf.GetString();
  return r;
}

EndpointReply ComplianceJobs::Storage(const std::string& method, const std::string& path, const QueryParams& params,
                                      const std::string& content_type, const std::string& body,
                                      const MockConfig& config, int64_t now_ms) {
  const auto param = [&params](const char* name) {
    const auto it = params.find(name);
    return it == params.end() ? std::string() : it->second;
  };
  // /<bucket>/<job id>/<submission|delivery>/<app>_<job id>
  std::vector<std::string> parts;
  for (size_t at = 1; at <= path.size();) {
    const size_t slash = std::min(path.find('/', at), path.size());
    parts.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  const bool upload = parts.size() == 4 && parts[2] == "submission";
  const std::string date = param("X-Goog-Date"), expires = param("X-Goog-Expires");
  if (parts.size() != 4 || param("X-Goog-Signature") !=
                               Signature(method, path, date, expires, upload ? content_type : std::string())) {
    return StorageError(403, "SignatureDoesNotMatch",
                        "The request signature we calculated does not match the signature you provided. Check your "
                        "Google secret key and signing method.");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = jobs_.find(parts[1]);
  if (it == jobs_.end()) return StorageError(404, "NoSuchKey", "The specified key does not exist.");
  ComplianceJob& job = it->second;
  // Signed at the job's creation: X-Goog-Date is its created_at.
  if (now_ms >= job.created_ms + std::stoll(expires) * 1000)
    return StorageError(400, "ExpiredToken", "The provided token has expired.", "Request has expired: " + expires);
  if (upload) {
    if (job.uploaded_ms == 0) {  // a second PUT overwrites the object; X has taken the first already
      job.uploaded_ms = now_ms;
      std::set<uint64_t> seen;
      for (size_t at = 0; at < body.size();) {
        size_t end = std::min(body.find('\n', at), body.size());
        std::string line = body.substr(at, end - at);
        at = end + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        if (line.size() > 19 || line.find_first_not_of("0123456789") != std::string::npos) {
          job.unparsable = true;
          continue;
        }
        const uint64_t id = std::stoull(line);
        if (seen.insert(id).second) job.ids.push_back(id);
      }
    }
    EndpointReply r;
    r.content_type = "text/html; charset=UTF-8";
    return r;
  }
  if (Status(job, config, now_ms) != "complete") return StorageError(404, "NoSuchKey", "The specified key does not exist.");
  EndpointReply r;
  r.content_type = "application/octet-stream";
  r.body = Results(job, config);
  return r;
}

}  // namespace tweetkeeper::mock
