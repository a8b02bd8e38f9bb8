#include "mock_api/problems.hpp"

namespace tweetkeeper::mock {

namespace {

void Field(JsonWriter& w, const char* key, const std::string& value) {
  w.Key(key);
  w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

}  // namespace

std::string GenericProblem(int status, const std::string& title) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  Field(w, "title", title);
  Field(w, "type", "about:blank");
  w.Key("status");
  w.Int(status);
  Field(w, "detail", title);
  w.EndObject();
  return buf.GetString();
}

std::string UsageCappedProblem(uint64_t account_id) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("account_id");
  w.Uint64(account_id);
  Field(w, "product_name", "standard-basic");
  Field(w, "title", "UsageCapExceeded");
  Field(w, "period", "Monthly");
  Field(w, "scope", "Product");
  Field(w, "detail", "Usage cap exceeded: Monthly product cap");
  Field(w, "type", std::string(kProblemsBase) + "usage-capped");
  w.EndObject();
  return buf.GetString();
}

std::string OneError(const std::function<void(JsonWriter& w)>& members) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("errors");
  w.StartArray();
  w.StartObject();
  members(w);
  w.EndObject();
  w.EndArray();
  w.EndObject();
  return buf.GetString();
}

std::string V1Error(int code, const std::string& message) {
  return OneError([&](JsonWriter& w) {
    w.Key("code");
    w.Int(code);
    Field(w, "message", message);
  });
}

std::string InvalidRequestProblem(const std::vector<InvalidParam>& errors) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("errors");
  w.StartArray();
  for (const InvalidParam& e : errors) {
    w.StartObject();
    w.Key("parameters");
    w.StartObject();
    w.Key(e.parameter.c_str(), static_cast<rapidjson::SizeType>(e.parameter.size()));
    w.StartArray();
    for (const std::string& v : e.values) w.String(v.c_str(), static_cast<rapidjson::SizeType>(v.size()));
    w.EndArray();
    w.EndObject();
    Field(w, "message", e.message);
    w.EndObject();
  }
  w.EndArray();
  Field(w, "title", "Invalid Request");
  Field(w, "detail", "One or more parameters to your request was invalid.");
  Field(w, "type", std::string(kProblemsBase) + "invalid-request");
  w.EndObject();
  return buf.GetString();
}

void WriteNotFound(JsonWriter& w, const std::string& id) {
  w.StartObject();
  Field(w, "value", id);
  Field(w, "detail", "Could not find tweet with ids: [" + id + "].");
  Field(w, "title", "Not Found Error");
  Field(w, "resource_type", "tweet");
  Field(w, "parameter", "ids");
  Field(w, "resource_id", id);
  Field(w, "type", std::string(kProblemsBase) + "resource-not-found");
  w.EndObject();
}

void WriteNotAuthorized(JsonWriter& w, const std::string& id) {
  w.StartObject();
  Field(w, "value", id);
  Field(w, "parameter", "ids");
  Field(w, "resource_type", "tweet");
  Field(w, "section", "data");
  Field(w, "title", "Authorization Error");
  Field(w, "resource_id", id);
  Field(w, "detail", "Sorry, you are not authorized to see the Tweet with ids: [" + id + "].");
  Field(w, "type", std::string(kProblemsBase) + "not-authorized-for-resource");
  w.EndObject();
}

}  // namespace tweetkeeper::mock
