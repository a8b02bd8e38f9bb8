// X's batch compliance jobs, the worker's pure parts (worker/compliance/compliance_answers.*): a
// job answer, the results file, the ids file, the job's name, and which signed URLs may be fetched.
#include <gtest/gtest.h>

#include <string>

#include "compliance/compliance_answers.hpp"

namespace tc = tweetkeeper::worker::compliance;

namespace {

std::string JobAnswer(const std::string& status, const std::string& id = "1425543269983784962") {
  return R"({"data":{"download_expires_at":"2021-08-18T19:42:55.000Z","status":")" + status +
         R"(","upload_url":"https://storage.googleapis.com/twttr-tweet-compliance/x/submission/y?X-Goog-Signature=s","created_at":"2021-08-11T19:42:55.000Z","resumable":false,"id":")" +
         id +
         R"(","type":"tweets","download_url":"https://storage.googleapis.com/twttr-tweet-compliance/x/delivery/y?X-Goog-Signature=t","upload_expires_at":"2021-08-11T19:57:55.000Z"}})";
}

}  // namespace

TEST(ComplianceJob, AJobAnswer) {
  tc::Job job;
  std::string why;
  ASSERT_TRUE(tc::ParseJob(JobAnswer("created"), &job, &why)) << why;
  EXPECT_EQ(job.id, "1425543269983784962");
  EXPECT_EQ(job.status, "created");
  EXPECT_EQ(job.upload_url.rfind("https://storage.googleapis.com/", 0), 0u);
  EXPECT_NE(job.download_url.find("delivery"), std::string::npos);
}

TEST(ComplianceJob, WhatIsRefusedAndWhy) {
  tc::Job job;
  std::string why;
  EXPECT_FALSE(tc::ParseJob(JobAnswer("done"), &job, &why));
  EXPECT_NE(why.find("unknown status"), std::string::npos) << why;
  EXPECT_FALSE(tc::ParseJob(JobAnswer("created", "12a"), &job, &why));
  EXPECT_FALSE(tc::ParseJob(JobAnswer("created", "12345678901234567890"), &job, &why)) << "20 digits";
  EXPECT_FALSE(tc::ParseJob(R"({"title":"Conflict","detail":"You can only have one active job per type","type":"about:blank","status":409})",
                            &job, &why));
  EXPECT_NE(why.find("Conflict"), std::string::npos) << why;
  EXPECT_FALSE(tc::ParseJob(R"({"errors":[{"message":"Forbidden","title":"Client Forbidden"}]})", &job, &why));
  EXPECT_NE(why.find("Client Forbidden"), std::string::npos) << why;
  EXPECT_FALSE(tc::ParseJob("[[[[", &job, &why));
  EXPECT_FALSE(tc::ParseJob(std::string(100000, '['), &job, &why));
  EXPECT_FALSE(tc::ParseJob(std::string(2u << 20, ' '), &job, &why));
  EXPECT_NE(why.find("1 MiB"), std::string::npos) << why;
  // A users job is not ours.
  std::string users = JobAnswer("created");
  users.replace(users.find("\"tweets\""), 8, "\"users\"");
  EXPECT_FALSE(tc::ParseJob(users, &job, &why));
}

TEST(ComplianceJob, ResultsLineByLine) {
  const std::string body =
      R"({"id":"1265324480517361664","action":"delete","created_at":"2019-10-29T17:02:47.000Z","redacted_at":"2020-07-29T17:02:47.000Z","reason":"deleted"})"
      "\n"
      R"({"id":"1265324480517361665","action":"delete","created_at":"2019-10-29T17:02:47.000Z","reason":"protected"})"
      "\r\n\n"
      "not json\n"
      R"({"id":1265324480517361666,"reason":"deleted"})"
      "\n"
      R"({"id":"1265324480517361667","reason":"Deleted Now"})"
      "\n"
      R"({"id":"9999999999999999999","reason":"deleted"})"
      "\n" +
      std::string(5000, ' ') + "\n" +
      R"({"id":"1265324480517361668","action":"delete","reason":"scrub_geo"})";
  const tc::Results r = tc::ParseResults(body, 100);
  EXPECT_EQ(r.ids, (std::vector<std::int64_t>{1265324480517361664, 1265324480517361665, 1265324480517361668}));
  EXPECT_EQ(r.reasons, (std::vector<std::string>{"deleted", "protected", "scrub_geo"}));
  EXPECT_EQ(r.refused, 5u) << "not JSON, a numeric id, a reason with capitals, an id past 2^63, a line over 4 KiB";
  EXPECT_NE(r.first_refusal.find("not a JSON object"), std::string::npos) << r.first_refusal;
  EXPECT_EQ(tc::ParseResults(body, 1).ids.size(), 1u) << "at most max_lines";
  EXPECT_TRUE(tc::ParseResults("", 10).ids.empty()) << "no line: every id in compliance";
}

TEST(ComplianceJob, WhatIsSent) {
  EXPECT_EQ(tc::CreateJobBody("tweetkeeper-7"), R"({"type":"tweets","name":"tweetkeeper-7"})");
  EXPECT_EQ(tc::CreateJobBody("a\"b" + std::string(100, 'c')), R"({"type":"tweets","name":"ab)" + std::string(62, 'c') + "\"}")
      << "only [A-Za-z0-9_-], at most 64";
  EXPECT_EQ(tc::IdsFile({20, 1228393702244134912}), "20\n1228393702244134912\n");
}

TEST(ComplianceJob, WhichSignedUrlsAreFetched) {
  bool same = true;
  EXPECT_EQ(tc::StorageUrlRefusal("https://storage.googleapis.com/a?sig=1", "https://api.x.com", &same), "");
  EXPECT_FALSE(same);
  EXPECT_EQ(tc::StorageUrlRefusal("http://127.0.0.1:9/upload/1", "http://127.0.0.1:8089", &same), "");
  EXPECT_TRUE(same) << "the mock's storage, on --api-url's host";
  EXPECT_NE(tc::StorageUrlRefusal("http://storage.example/a", "https://api.x.com", &same), "") << "http elsewhere";
  EXPECT_NE(tc::StorageUrlRefusal("file:///etc/passwd", "https://api.x.com", &same), "");
  EXPECT_NE(tc::StorageUrlRefusal("https://user@storage.example/a", "https://api.x.com", &same), "") << "no userinfo";
}
