// X's batch compliance jobs as the mock serves them (compliance.hpp, compliance_routes.cpp): the
// three API routes with their checks, one active job per type and token, the storage host's signed
// URLs (upload, expiry, signature), the statuses over time and the results' lines and reasons.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "mock_api/mock_api.hpp"
#include "mock_api/tweet_model.hpp"
#include "mock_test_config.hpp"

namespace tweetkeeper::mock {
namespace {

constexpr int64_t kNow = 1767225600000;  // 2026-01-01T00:00:00Z
const uint64_t kVisible = 1228393702244134912;  // 2020-02-14, visible in NoFates()

std::string Header(const HttpReply& reply, const std::string& name) {
  for (const auto& [key, value] : reply.headers)
    if (key == name) return value;
  return "<absent>";
}

struct World {
  int64_t now = kNow;
  MockConfig config;
  std::unique_ptr<MockApi> api;
  explicit World(MockConfig c = NoFates()) : config(std::move(c)) {
    const int64_t* clock = &now;
    config.gone = std::make_shared<GoneWorld>([clock] { return *clock * 1000; });
    api = std::make_unique<MockApi>(config);
    api->SetStorageUrl("http://storage.test:9");
  }
  HttpReply Call(const std::string& method, const std::string& path, QueryParams params = {},
                 const std::string& body = "", const std::string& token = "app") {
    HttpCall call{method, path, std::move(params), "Bearer " + token};
    call.body = body;
    return api->Handle(call, now);
  }
  // A signed URL's request on the storage host (the URL as the job gave it).
  HttpReply Storage(const std::string& method, const std::string& url, const std::string& body = "",
                    const std::string& content_type = "text/plain") {
    const std::string rest = url.substr(std::string("http://storage.test:9").size());
    const size_t q = rest.find('?');
    HttpCall call{method, rest.substr(0, q), {}, ""};
    for (size_t at = q + 1; at < rest.size();) {
      const size_t amp = std::min(rest.find('&', at), rest.size());
      const std::string pair = rest.substr(at, amp - at);
      const size_t eq = pair.find('=');
      std::string value = pair.substr(eq + 1);
      for (size_t p; (p = value.find("%2F")) != std::string::npos;) value.replace(p, 3, "/");
      for (size_t p; (p = value.find("%3B")) != std::string::npos;) value.replace(p, 3, ";");
      call.params.emplace(pair.substr(0, eq), value);
      at = amp + 1;
    }
    call.body = body;
    call.content_type = content_type;
    return api->HandleStorage(call, now);
  }
};

rapidjson::Document Parse(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  EXPECT_FALSE(doc.HasParseError()) << body;
  return doc;
}

std::string Field(const HttpReply& reply, const char* name) {
  const rapidjson::Document doc = Parse(reply.body);
  return doc["data"][name].GetString();
}

TEST(MockCompliance, CreatesAJobWithSignedUrlsAndItsTimes) {
  World w;
  w.now = kNow + 123;  // X's times are whole seconds
  const HttpReply made = w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets","name":"my-job"})");
  ASSERT_EQ(made.status, 200) << made.body;
  EXPECT_EQ(made.content_type, kJson);
  EXPECT_EQ(Header(made, "x-rate-limit-limit"), "150");
  EXPECT_EQ(Header(made, "x-rate-limit-remaining"), "149");
  const rapidjson::Document doc = Parse(made.body);
  const auto& job = doc["data"];
  EXPECT_STREQ(job["type"].GetString(), "tweets");
  EXPECT_STREQ(job["name"].GetString(), "my-job");
  EXPECT_FALSE(job["resumable"].GetBool());
  EXPECT_STREQ(job["status"].GetString(), "created");
  EXPECT_STREQ(job["created_at"].GetString(), "2026-01-01T00:00:00.000Z");
  EXPECT_STREQ(job["upload_expires_at"].GetString(), "2026-01-01T00:15:00.000Z");
  EXPECT_STREQ(job["download_expires_at"].GetString(), "2026-01-08T00:00:00.000Z");
  const std::string id = job["id"].GetString();
  EXPECT_EQ(id.find_first_not_of("0123456789"), std::string::npos);
  const std::string upload = job["upload_url"].GetString(), download = job["download_url"].GetString();
  EXPECT_EQ(upload.rfind("http://storage.test:9/twttr-tweet-compliance/" + id + "/submission/", 0), 0u) << upload;
  EXPECT_NE(upload.find("X-Goog-Date=20260101T000000Z&X-Goog-Expires=900&"), std::string::npos) << upload;
  EXPECT_NE(download.find("/delivery/"), std::string::npos);
  EXPECT_NE(download.find("X-Goog-Expires=604800&"), std::string::npos);
  // Without a name, none is sent.
  const HttpReply users = w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"users","resumable":true})");
  EXPECT_FALSE(Parse(users.body)["data"].HasMember("name"));
  EXPECT_NE(Field(users, "upload_url").find("/twttr-user-compliance/"), std::string::npos);
  // Asked for by id, the same job.
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs/" + id).body, made.body);
}

TEST(MockCompliance, RefusesBadJobsAndASecondActiveJobOfAType) {
  World w;
  for (const char* body : {"", "[]", R"({"name":"x"})", R"({"type":"likes"})", R"({"type":"tweets","resumable":"yes"})",
                           R"({"type":"tweets","color":"red"})"}) {
    const HttpReply r = w.Call("POST", "/2/compliance/jobs", {}, body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.content_type, kProblemJson);
    EXPECT_NE(r.body.find("/2/problems/invalid-request"), std::string::npos) << r.body;
  }
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets","name":")" + std::string(65, 'n') + "\"}").status,
            400);
  ASSERT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets","name":")" + std::string(64, 'n') + "\"}").status,
            200);
  const HttpReply second = w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})");
  EXPECT_EQ(second.status, 409);
  EXPECT_EQ(second.body,
            R"({"title":"Conflict","detail":"You cannot create a new job if one is already in progress.",)"
            R"("type":"https://api.twitter.com/2/problems/conflict","status":409})");
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"users"})").status, 200);  // another type
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})", "other").status, 200);  // another app
  // The first expires after 15 minutes with nothing uploaded: then a new one may start.
  w.now += 900'000;
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})").status, 200);
}

TEST(MockCompliance, UploadsThroughTheSignedUrlOnlyAndCompletesWithTheReasons) {
  MockConfig config = NoFates();
  config.deleted_every = 53;
  config.protected_every = 61;
  World w(config);
  uint64_t rule_deleted = kVisible, rule_protected = kVisible, fine = kVisible;
  while (rule_deleted % 53 != 7) ++rule_deleted;
  while (rule_protected % 61 != 11 || rule_protected % 53 == 7) ++rule_protected;
  while (fine % 53 == 7 || fine % 61 == 11 || fine == kVisible) ++fine;
  const HttpReply made = w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})");
  const std::string id = Field(made, "id"), upload = Field(made, "upload_url"), download = Field(made, "download_url");
  // The post made gone says when; the world's own fates do not.
  HttpCall gone{"POST", "/mock/gone", {}, ""};
  gone.body = R"({"x":[{"post":")" + std::to_string(kVisible) + R"(","reason":"deleted"}]})";
  ASSERT_EQ(w.api->Handle(gone, w.now).status, 200);
  const std::string ids = std::to_string(kVisible) + "\n" + std::to_string(rule_deleted) + "\r\n" +
                          std::to_string(rule_protected) + "\n\n" + std::to_string(fine) + "\n" + std::to_string(kVisible) + "\n";
  // Not through a URL changed by hand, another method or another content type.
  std::string tampered = upload;
  tampered[tampered.size() - 1] = tampered.back() == '0' ? '1' : '0';
  for (const HttpReply& r : {w.Storage("PUT", tampered, ids), w.Storage("PUT", upload, ids, "application/json"),
                             w.Storage("POST", upload, ids)}) {
    EXPECT_EQ(r.status, 403);
    EXPECT_NE(r.body.find("<Code>SignatureDoesNotMatch</Code>"), std::string::npos) << r.body;
    EXPECT_EQ(r.content_type, "application/xml; charset=UTF-8");
  }
  EXPECT_EQ(w.Storage("GET", download).status, 404);  // nothing yet: NoSuchKey
  w.now += 1000;
  ASSERT_EQ(w.Storage("PUT", upload, ids).status, 200);
  EXPECT_EQ(Field(w.Call("GET", "/2/compliance/jobs/" + id), "status"), "in_progress");
  EXPECT_NE(w.Storage("GET", download).body.find("<Code>NoSuchKey</Code>"), std::string::npos);
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})").status, 409);  // still active
  w.now += w.config.compliance_processing_ms;
  EXPECT_EQ(Field(w.Call("GET", "/2/compliance/jobs/" + id), "status"), "complete");
  const HttpReply results = w.Storage("GET", download);
  ASSERT_EQ(results.status, 200);
  EXPECT_EQ(results.content_type, "application/octet-stream");
  EXPECT_EQ(results.body, R"({"id":")" + std::to_string(kVisible) +
                              R"(","action":"delete","created_at":"2020-02-14T19:00:55.000Z","redacted_at":"2026-01-01T00:00:00.000Z","reason":"deleted"})"
                              "\n" R"({"id":")" + std::to_string(rule_deleted) + R"(","action":"delete","created_at":")" +
                              *CreatedAt(rule_deleted) + R"(","reason":"deleted"})" "\n" R"({"id":")" +
                              std::to_string(rule_protected) + R"(","action":"delete","created_at":")" +
                              *CreatedAt(rule_protected) + R"(","reason":"protected"})" "\n");
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})").status, 200);  // done: a new one may start
  // A week after the job was made, the download URL has expired, as Cloud Storage says.
  w.now = kNow + 7 * 86'400'000LL;
  const HttpReply late = w.Storage("GET", download);
  EXPECT_EQ(late.status, 400);
  EXPECT_NE(late.body.find("<Code>ExpiredToken</Code><Message>The provided token has expired.</Message><Details>Request has expired: 604800</Details>"),
            std::string::npos)
      << late.body;
  EXPECT_EQ(Field(w.Call("GET", "/2/compliance/jobs/" + id), "status"), "expired");
}

TEST(MockCompliance, AnUploadTooLateIsRefusedAndOneOfNoIdsFails) {
  World w;
  const HttpReply first = w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})");
  w.now += 900'000;
  const HttpReply late = w.Storage("PUT", Field(first, "upload_url"), "20\n");
  EXPECT_EQ(late.status, 400);
  EXPECT_NE(late.body.find("<Code>ExpiredToken</Code>"), std::string::npos);
  EXPECT_EQ(Field(w.Call("GET", "/2/compliance/jobs/" + Field(first, "id")), "status"), "expired");
  const HttpReply second = w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})");
  ASSERT_EQ(w.Storage("PUT", Field(second, "upload_url"), "20\nhttps://x.com/a/status/21\n").status, 200);
  w.now += w.config.compliance_processing_ms;
  EXPECT_EQ(Field(w.Call("GET", "/2/compliance/jobs/" + Field(second, "id")), "status"), "failed");
  EXPECT_EQ(w.Storage("GET", Field(second, "download_url")).status, 404);
}

TEST(MockCompliance, AUsersJobReportsTheAccountsMadeGone) {
  World w;
  HttpCall gone{"POST", "/mock/gone", {}, ""};
  gone.body = R"({"x":[{"user":"100001","reason":"suspended"},{"user":"100002","reason":"protected"},)"
              R"({"user":"100003","reason":"deactivated"},{"user":"100004","reason":"suspended"}]})";
  ASSERT_EQ(w.api->Handle(gone, w.now).status, 200);
  w.now += 10;
  gone.body = R"({"x":[{"user":"100004","reason":"active"}]})";
  ASSERT_EQ(w.api->Handle(gone, w.now).status, 200);
  const HttpReply job = w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"users"})");
  ASSERT_EQ(w.Storage("PUT", Field(job, "upload_url"), "100001\n100002\n100003\n100004\n100005\n").status, 200);
  w.now += w.config.compliance_processing_ms;
  const std::string lines = w.Storage("GET", Field(job, "download_url")).body;
  const std::string user1 = FormatCreatedAt(XUserOf(100001).created_ms);
  EXPECT_NE(lines.find(R"({"id":"100001","action":"delete","created_at":")" + user1 +
                       R"(","redacted_at":"2026-01-01T00:00:00.000Z","reason":"suspended"})"),
            std::string::npos)
      << lines;
  EXPECT_NE(lines.find(R"("id":"100002")"), std::string::npos);
  EXPECT_NE(lines.find(R"("reason":"protected")"), std::string::npos);
  EXPECT_NE(lines.find(R"("reason":"deactivated")"), std::string::npos);
  EXPECT_EQ(lines.find(R"("id":"100004")"), std::string::npos);  // back before the job
  EXPECT_EQ(lines.find(R"("id":"100005")"), std::string::npos);
}

TEST(MockCompliance, ListsATokensJobsByTypeAndStatus) {
  World w;
  const HttpReply none = w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}});
  EXPECT_EQ(none.body, R"({"meta":{"result_count":0}})");  // data has at least one item, or is absent
  const std::string a = Field(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})"), "id");
  w.now += 900'000;  // a expired
  const std::string b = Field(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})"), "id");
  w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"users"})");
  w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})", "other");
  const rapidjson::Document all = Parse(w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}}).body);
  ASSERT_EQ(all["data"].GetArray().Size(), 2u);
  EXPECT_EQ(all["data"][0]["id"].GetString(), b);  // newest first
  EXPECT_EQ(all["data"][1]["id"].GetString(), a);
  EXPECT_EQ(all["meta"]["result_count"].GetInt(), 2);
  const rapidjson::Document created =
      Parse(w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}, {"status", "created"}}).body);
  ASSERT_EQ(created["data"].GetArray().Size(), 1u);
  EXPECT_EQ(created["data"][0]["id"].GetString(), b);
  for (const QueryParams& bad : {QueryParams{}, QueryParams{{"type", "likes"}},
                                 QueryParams{{"type", "tweets"}, {"status", "expired"}},
                                 QueryParams{{"type", "tweets"}, {"compliance_job.fields", "id,color"}},
                                 QueryParams{{"type", "tweets"}, {"color", "red"}}}) {
    EXPECT_EQ(w.Call("GET", "/2/compliance/jobs", bad).status, 400);
  }
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}, {"compliance_job.fields", "id,status"}}).status, 200);
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs/" + a, {}, "", "other").status, 404);  // not its job
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs/12345").status, 404);
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs/abc").status, 400);
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs/1/2").status, 404);
}

TEST(MockCompliance, EachEndpointHasItsWindowPerTokenBehindXsAuth) {
  MockConfig config = NoFates();
  config.compliance_rate_limit = 2;
  config.tokens = {"app", "other"};
  World w(config);
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}}).status, 200);
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}}).status, 200);
  const HttpReply refused = w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}});
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(refused.body, R"({"title":"Too Many Requests","type":"about:blank","status":429,"detail":"Too Many Requests"})");
  EXPECT_EQ(Header(refused, "x-rate-limit-remaining"), "0");
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}}, "", "other").status, 200);  // its own window
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"tweets"})").status, 200);  // another endpoint
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"users"})").status, 200);
  EXPECT_EQ(w.Call("POST", "/2/compliance/jobs", {}, R"({"type":"users"})").status, 429);  // no job made by it
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs", {{"type", "users"}}, "", "other").status, 200);
  EXPECT_EQ(w.Call("GET", "/2/compliance/jobs", {{"type", "tweets"}}, "", "stranger").status, 401);
  w.now += config.window_seconds * 1000;
  EXPECT_EQ(Parse(w.Call("GET", "/2/compliance/jobs", {{"type", "users"}}).body)["meta"]["result_count"].GetInt(), 1);
}

}  // namespace
}  // namespace tweetkeeper::mock
