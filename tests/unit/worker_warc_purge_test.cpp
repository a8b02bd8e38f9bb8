// The WARC purge (worker/warc/warc_purge.hpp): which posts of each network's answers are taken out,
// and files written by the WARC writer purged: captures dropped or rewritten, the rest copied,
// links, digests and libarchive's 64 KiB blocks kept, the log, and a second run changing nothing.
#include "warc/warc_purge.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "archive/warc.hpp"

namespace warc = tweetkeeper::worker::warc;

namespace {

warc::PurgeSet Gone() {
  warc::PurgeSet set;
  set.AddX("102", {102, "deleted", "resource-not-found"});
  set.AddX("900", {900, "hidden", "not-authorized-for-resource"});
  set.AddBluesky("did:plc:abc", "3kgone", {-5, "missing", ""});
  set.AddBluesky("alice.example", "3khandle", {-6, "missing", ""});
  set.AddMastodon("social.example", "111", {-7, "missing", ""});
  return set;
}

std::vector<std::string> Keys(const warc::Filtered& f) {
  std::vector<std::string> keys;
  for (const auto& r : f.removed) keys.push_back(r.key);
  return keys;
}

TEST(WarcPurgeFilter, XTakesGonePostsOutOfDataAndIncludes) {
  const auto f = warc::FilterBody(
      R"({"data":[{"id":"101","text":"a"},{"id":"102","text":"gone text"},{"id":"103","text":"c"}],)"
      R"("includes":{"tweets":[{"id":"900","text":"quoted gone"},{"id":"901","text":"quoted"}],"users":[{"id":"7"}]}})",
      "api.x.com", Gone());
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(f.posts, 5u);
  EXPECT_EQ(Keys(f), (std::vector<std::string>{"x:102", "x:900"}));
  EXPECT_EQ(f.removed[0].post.reason, "deleted");
  EXPECT_EQ(f.body, R"({"data":[{"id":"101","text":"a"},{"id":"103","text":"c"}],)"
                    R"("includes":{"tweets":[{"id":"901","text":"quoted"}],"users":[{"id":"7"}]}})");
}

TEST(WarcPurgeFilter, EveryPostGoneLeavesNoBody) {
  const auto f = warc::FilterBody(R"({"data":[{"id":"102","text":"gone"}]})", "api.x.com", Gone());
  EXPECT_EQ(f.posts, 1u);
  EXPECT_EQ(f.removed.size(), 1u);
  EXPECT_EQ(f.body, "");  // the capture goes whole
  const auto one = warc::FilterBody(R"({"data":{"id":"102","text":"gone"}})", "api.x.com", Gone());
  EXPECT_EQ(one.posts, 1u);
  EXPECT_EQ(one.removed.size(), 1u);
}

TEST(WarcPurgeFilter, NothingGoneChangesNothing) {
  const auto f = warc::FilterBody(R"({"data":[{"id":"101"}],"errors":[{"value":"102","detail":"Not found"}]})",
                                  "api.x.com", Gone());
  EXPECT_EQ(f.posts, 1u);
  EXPECT_TRUE(f.removed.empty());
  EXPECT_EQ(f.body, "");
}

TEST(WarcPurgeFilter, XV11MapAnswerNullsTheGonePost) {
  const auto f = warc::FilterBody(R"({"id":{"101":{"id_str":"101","text":"a"},"102":{"id_str":"102","text":"b"},"5":null}})",
                                  "api.x.com", Gone());
  EXPECT_EQ(f.posts, 2u);
  EXPECT_EQ(Keys(f), (std::vector<std::string>{"x:102"}));
  EXPECT_EQ(f.body, R"({"id":{"101":{"id_str":"101","text":"a"},"102":null,"5":null}})");
  const auto array = warc::FilterBody(R"([{"id_str":"102","text":"b"},{"id_str":"104"}])", "api.x.com", Gone());
  EXPECT_EQ(Keys(array), (std::vector<std::string>{"x:102"}));
  EXPECT_EQ(array.body, R"([{"id_str":"104"}])");
}

TEST(WarcPurgeFilter, BlueskyByUriOrByTheHandleTheDatabaseKnows) {
  const auto f = warc::FilterBody(
      R"({"posts":[{"uri":"at://did:plc:abc/app.bsky.feed.post/3kgone","record":{"text":"x"}},)"
      R"({"uri":"at://did:plc:zzz/app.bsky.feed.post/3khandle","author":{"did":"did:plc:zzz","handle":"alice.example"}},)"
      R"({"uri":"at://did:plc:abc/app.bsky.feed.post/3kstays"}]})",
      "public.api.bsky.app", Gone());
  EXPECT_EQ(f.posts, 3u);
  EXPECT_EQ(Keys(f), (std::vector<std::string>{"at://did:plc:abc/app.bsky.feed.post/3kgone",
                                               "at://alice.example/app.bsky.feed.post/3khandle"}));
  EXPECT_EQ(f.body, R"({"posts":[{"uri":"at://did:plc:abc/app.bsky.feed.post/3kstays"}]})");
  const auto feed = warc::FilterBody(
      R"({"feed":[{"post":{"uri":"at://did:plc:abc/app.bsky.feed.post/3kgone"}},{"post":{"uri":"at://did:plc:abc/app.bsky.feed.post/3k2"}}],"cursor":"c"})",
      "public.api.bsky.app", Gone());
  EXPECT_EQ(feed.posts, 2u);
  EXPECT_EQ(feed.body, R"({"feed":[{"post":{"uri":"at://did:plc:abc/app.bsky.feed.post/3k2"}}],"cursor":"c"})");
}

TEST(WarcPurgeFilter, MastodonOnItsServerOnlyWithTheBoostsOfAGoneStatus) {
  const std::string body = R"([{"id":"111","content":"gone"},{"id":"112","reblog":{"id":"111","content":"gone"}},{"id":"113"}])";
  const auto f = warc::FilterBody(body, "social.example", Gone());
  EXPECT_EQ(f.posts, 3u);
  EXPECT_EQ(f.removed.size(), 2u);
  EXPECT_EQ(f.body, R"([{"id":"113"}])");
  // Status 111 of another server is another post.
  EXPECT_TRUE(warc::FilterBody(body, "other.example", Gone()).removed.empty());
  // Asked at another address (--instance social.example=URL): known by its own page's host.
  const auto mapped = warc::FilterBody(
      R"([{"id":"111","url":"https://social.example/@a/111"},{"id":"113","url":"https://social.example/@a/113"},)"
      R"({"id":"114","reblog":{"id":"111","url":"https://social.example/@a/111"}},{"id":"111","url":"https://other.example/@a/999"}])",
      "127.0.0.1:8080", Gone());
  EXPECT_EQ(mapped.posts, 4u);
  EXPECT_EQ(mapped.removed.size(), 2u);  // (the last one's page is another status's)
  EXPECT_EQ(mapped.body, R"([{"id":"113","url":"https://social.example/@a/113"},{"id":"111","url":"https://other.example/@a/999"}])");
  // A gone status that is itself a boost: its own URL is its activity's, asked at another address.
  const auto boost = warc::FilterBody(
      R"([{"id":"111","url":"https://social.example/users/a/statuses/111/activity","reblog":{"id":"5","url":"https://x.example/@b/5"}},)"
      R"({"id":"113","url":"https://social.example/users/a/statuses/113/activity"}])",
      "127.0.0.1:8080", Gone());
  EXPECT_EQ(boost.removed.size(), 1u);
  EXPECT_EQ(boost.body, R"([{"id":"113","url":"https://social.example/users/a/statuses/113/activity"}])");
  const auto one = warc::FilterBody(R"({"id":"111","uri":"https://social.example/users/a/statuses/111"})",
                                    "social.example", Gone());
  EXPECT_EQ(one.posts, 1u);
  EXPECT_EQ(one.removed.size(), 1u);
}

TEST(WarcPurgeFilter, HostileBodiesAreRefusedNotRead) {
  EXPECT_NE(warc::FilterBody("{\"data\":[", "h", Gone()).error, "");
  EXPECT_NE(warc::FilterBody(std::string(100000, '[') + std::string(100000, ']'), "h", Gone()).error, "");
  EXPECT_NE(warc::FilterBody("{\"data\":\"\xff\xfe\"}", "h", Gone()).error, "");  // not UTF-8
  const auto odd = warc::FilterBody(R"({"data":[1,"2",null,{"id":5},{"id":"102"}]})", "h", Gone());
  EXPECT_EQ(odd.posts, 1u);  // only objects with a string id are posts
  EXPECT_EQ(odd.removed.size(), 1u);
}

// The answers in the shapes each network documents (fixtures/README.md): the posts named where
// those shapes put them (ids read off the files by hand).
std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(TK_FIXTURES_DIR) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(WarcPurgeFilter, TheNetworksDocumentedShapes) {
  warc::PurgeSet set;
  set.AddX("1961335172561255002", {1, "deleted", ""});   // v2_quote.json: the quoted post (includes.tweets)
  set.AddX("1715584543378782810", {2, "deleted", ""});   // v1_1_lookup_quote.json: the map's one post (the other: null)
  set.AddBluesky("pablo.test", "3mlvfzwbh223y", {-3, "missing", ""});  // getPosts_quote.json, its author by handle
  set.AddMastodon("mastodon.example", "102033319833109411", {-4, "missing", ""});  // statuses_index.json
  set.AddMastodon("mastodon.example", "106207127322788929", {-5, "missing", ""});  // boosted in status_reblog.json
  const auto quote = warc::FilterBody(Fixture("x/v2_quote.json"), "api.x.com", set);
  EXPECT_EQ(quote.posts, 2u);
  EXPECT_EQ(Keys(quote), (std::vector<std::string>{"x:1961335172561255002"}));
  EXPECT_EQ(quote.body.find("Reminder: Example Labs beta search closes"), std::string::npos);  // its text
  EXPECT_NE(quote.body.find("1961335172561255002"), std::string::npos);  // (the quoting post's reference: an id)
  EXPECT_NE(quote.body.find(R"("id":"1962723587437570651")"), std::string::npos);
  const auto lookup = warc::FilterBody(Fixture("x/v1_1_lookup_quote.json"), "api.x.com", set);
  EXPECT_EQ(lookup.posts, 1u);
  EXPECT_EQ(lookup.removed.size(), 1u);  // the only post: the capture goes whole
  const auto bluesky = warc::FilterBody(Fixture("bluesky/getPosts_quote.json"), "public.api.bsky.app", set);
  EXPECT_EQ(bluesky.posts, 1u);
  EXPECT_EQ(bluesky.removed.size(), 1u);  // the only post: the capture goes whole
  // A worker given --instance mastodon.example=... asks another address.
  const auto index = warc::FilterBody(Fixture("mastodon/statuses_index.json"), "127.0.0.1:9", set);
  EXPECT_EQ(index.posts, 1u);
  EXPECT_EQ(index.removed.size(), 1u);
  const auto reblog = warc::FilterBody(Fixture("mastodon/status_reblog.json"), "mastodon.example", set);
  EXPECT_EQ(reblog.posts, 1u);
  EXPECT_EQ(Keys(reblog), (std::vector<std::string>{"mastodon:mastodon.example/106207127322788929"}));
  // And with nothing gone, each is read and left as it is.
  for (const char* name : {"x/v2_media.json", "x/v2_partial_errors.json", "x/v2_reply.json", "x/v2_retweet.json",
                           "bluesky/getPosts_plain.json", "bluesky/getPosts_reply.json", "mastodon/status_poll.json",
                           "mastodon/statuses_reply_and_cw.json"}) {
    const auto f = warc::FilterBody(Fixture(name), "mastodon.example", warc::PurgeSet());
    EXPECT_EQ(f.error, "") << name;
    EXPECT_GE(f.posts, 1u) << name;
    EXPECT_TRUE(f.removed.empty()) << name;
  }
}

TEST(WarcPurgeRecord, ParsesAndRefusesBadHeads) {
  std::string why;
  const std::string ok = warc::Record({{"WARC-Type", "response"}, {"WARC-Record-ID", "<urn:uuid:1>"}}, "hello");
  const auto head = warc::ParseRecord(ok, &why);
  ASSERT_TRUE(head) << why;
  EXPECT_EQ(*head->Field("warc-type"), "response");
  EXPECT_EQ(ok.substr(head->block_offset, head->block_length), "hello");
  EXPECT_FALSE(warc::ParseRecord("WARC/1.0\r\nWARC-Type: x\r\nContent-Length: 99\r\n\r\nshort\r\n\r\n", &why));
  EXPECT_NE(why.find("Content-Length"), std::string::npos);
  EXPECT_FALSE(warc::ParseRecord("WARC/1.0\r\nContent-Length: -1\r\n\r\n\r\n\r\n", &why));
  EXPECT_FALSE(warc::ParseRecord("WARC/1.0\r\nWARC-Type: x\r\n\r\n\r\n\r\n", &why));
  EXPECT_FALSE(warc::ParseRecord("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n\r\n\r\n", &why));
  EXPECT_FALSE(warc::ParseRecord("WARC/1.0\r\n" + std::string(70000, 'a'), &why));
  EXPECT_FALSE(warc::ParseRecord("WARC/1.0\r\nno colon\r\nContent-Length: 0\r\n\r\n\r\n\r\n", &why));
}

// --- Files written by the WARC writer, then purged.

std::string TempDir() {
  char tmpl[] = "/tmp/tk-warc-purge-test.XXXXXX";
  char* d = mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d ? d : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Rec {
  std::map<std::string, std::string> f;
  std::string block;
  std::uint64_t at = 0;  // offset in the file decompressed
  std::uint64_t header = 0;
};

std::vector<Rec> ReadWarc(const std::string& path) {
  const std::string data = ReadFile(path);
  std::vector<Rec> out;
  std::uint64_t plain_at = 0;
  std::string plain, why;
  for (std::size_t at = 0; at < data.size();) {
    const std::size_t used = warc::GunzipMember(std::string_view(data).substr(at), 1 << 28, &plain);
    EXPECT_GT(used, 0u) << path << " at " << at;
    if (used == 0) break;
    const auto head = warc::ParseRecord(plain, &why);
    EXPECT_TRUE(head) << why;
    if (!head) break;
    Rec r;
    for (const auto& [k, v] : head->fields) r.f[k] += (r.f.count(k) ? " " : "") + v;
    r.block = plain.substr(head->block_offset, head->block_length);
    r.at = plain_at;
    r.header = head->header_length;
    out.push_back(r);
    plain_at += plain.size();
    at += used;
  }
  return out;
}

std::string Response(const std::string& body, bool gzip_chunked) {
  if (!gzip_chunked)
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  const std::string gz = warc::Gzip(body);
  char size[16];
  std::snprintf(size, sizeof size, "%zx", gz.size());
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" +
         std::string(size) + "\r\n" + gz + "\r\n0\r\n\r\n";
}

// X answers of ids [first, first + n), each post's text "text of ID".
std::string XPage(int first, int n) {
  std::string body = R"({"data":[)";
  for (int i = 0; i < n; ++i)
    body += std::string(i ? "," : "") + R"({"id":")" + std::to_string(first + i) + R"(","text":"text of )" +
            std::to_string(first + i) + R"("})";
  return body + "]}";
}

// A closed file of `pages` X exchanges of 3 posts each (ids first + 3k ...), every other one gzip and
// chunked; its name.
std::string WriteFile(const std::string& dir, int pages, int padding = 0, int first = 100) {
  warc::WriterOptions wo;
  wo.dir = dir;
  warc::Writer writer(wo);
  for (int k = 0; k < pages; ++k) {
    warc::Exchange e;
    e.target_uri = "https://api.x.com/2/tweets?ids=" + std::to_string(first + 3 * k);
    e.request = "GET /2/tweets HTTP/1.1\r\nHost: api.x.com\r\nAuthorization: Bearer sekrit-token-1234\r\n\r\n";
    std::string body = XPage(first + 3 * k, 3);
    if (padding > 0) body.insert(body.size() - 1, R"(,"meta":{"pad":")" + std::string(padding + 97 * k % 4000, 'p') + R"("})");
    e.response = Response(body, k % 2 == 1);
    e.started = std::chrono::system_clock::now();
    writer.Write(e);
  }
  const std::string name = writer.CurrentName();
  writer.Close();
  return name;
}

warc::PurgeSet XGone(const std::vector<int>& ids) {
  warc::PurgeSet set;
  for (int id : ids) set.AddX(std::to_string(id), {id, "deleted", "resource-not-found"});
  return set;
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return st.st_ino;
}

// Whether every record of the file is whole and linked: digests, each request paired with a
// response (or its stand-in), metadata referring to a record of the file, headers within a block.
void ExpectSound(const std::vector<Rec>& recs) {
  std::map<std::string, const Rec*> by_id;
  for (const Rec& r : recs) by_id[r.f.at("WARC-Record-ID")] = &r;
  ASSERT_FALSE(recs.empty());
  EXPECT_EQ(recs[0].f.at("WARC-Type"), "warcinfo");
  for (const Rec& r : recs) {
    EXPECT_EQ(r.f.at("WARC-Block-Digest"), warc::Sha1Base32(r.block));
    EXPECT_LE(r.at % warc::kReaderBlock + r.header, warc::kReaderBlock) << "a header across a 64 KiB block";
    const std::string type = r.f.at("WARC-Type");
    if (type == "request" || type == "response") {
      const auto other = by_id.find(r.f.at("WARC-Concurrent-To"));
      ASSERT_NE(other, by_id.end()) << type << " without its pair";
      EXPECT_EQ(other->second->f.at("WARC-Concurrent-To"), r.f.at("WARC-Record-ID"));
      if (const auto payload = warc::HttpPayload(r.block)) {
        EXPECT_EQ(r.f.at("WARC-Payload-Digest"), warc::Sha1Base32(*payload));
      }
    }
    if (r.f.count("WARC-Refers-To")) {
      EXPECT_TRUE(by_id.count(r.f.at("WARC-Refers-To"))) << "a dangling WARC-Refers-To";
    }
    EXPECT_EQ(r.block.find("sekrit-token"), std::string::npos);
  }
}

// Every post text the file's responses hold (decoded).
std::string Texts(const std::vector<Rec>& recs) {
  std::string all;
  for (const Rec& r : recs)
    if (r.f.at("WARC-Type") == "response") all += *warc::DecodedBody(r.block);
  return all;
}

TEST(WarcPurgeFile, DropsWholeCapturesRewritesTheOthersCopiesTheRest) {
  const std::string dir = TempDir();
  const std::string name = WriteFile(dir, 6);
  const std::string other = WriteFile(dir, 2);  // ids 100..105 again
  const std::string untouched = WriteFile(dir, 2, 0, 500);  // none of them gone
  const auto before = ReadWarc(dir + "/" + name);
  // Page 0 (100-102) all gone: dropped with its request. Page 1 (103-105): 104 gone, rewritten
  // (a gzip and chunked answer). Page 4 (112-114): 113 gone (plain).
  warc::PurgeSet set = XGone({100, 101, 102, 104, 113});
  // The second file holds pages 0 and 1 too: it is purged as well; the third is left as it is.
  warc::PurgeOptions o;
  o.dir = dir;
  o.run_id = "test";
  const ino_t other_inode = Inode(dir + "/" + other), untouched_inode = Inode(dir + "/" + untouched);
  const std::string untouched_bytes = ReadFile(dir + "/" + untouched);
  const auto stats = warc::PurgeDirectory(o, set);
  EXPECT_TRUE(stats.errors.empty()) << stats.errors[0];
  EXPECT_EQ(stats.files_seen, 3);
  EXPECT_EQ(stats.files_rewritten, 2);
  EXPECT_EQ(stats.posts_removed, 9u);
  EXPECT_EQ(stats.records_dropped, 4u);
  EXPECT_EQ(stats.responses_rewritten, 3u);
  EXPECT_NE(Inode(dir + "/" + other), other_inode);
  EXPECT_EQ(Inode(dir + "/" + untouched), untouched_inode);
  EXPECT_EQ(ReadFile(dir + "/" + untouched), untouched_bytes);
  ExpectSound(ReadWarc(dir + "/" + other));
  const auto after = ReadWarc(dir + "/" + name);
  ExpectSound(after);
  // 1 warcinfo + 6 x 2 before; after: 5 x 2 + 2 metadata (one per rewritten response).
  EXPECT_EQ(before.size(), 13u);
  EXPECT_EQ(after.size(), 13u);
  const std::string texts = Texts(after);
  for (int id : {100, 101, 102, 104, 113}) EXPECT_EQ(texts.find("text of " + std::to_string(id) + "\""), std::string::npos) << id;
  for (int id : {103, 105, 106, 110, 112, 114, 117}) EXPECT_NE(texts.find("text of " + std::to_string(id) + "\""), std::string::npos) << id;
  // Untouched records are the same records, the warcinfo first among them.
  EXPECT_EQ(after[0].f.at("WARC-Record-ID"), before[0].f.at("WARC-Record-ID"));
  int metadata = 0;
  for (const Rec& r : after) {
    if (r.f.at("WARC-Type") != "metadata") continue;
    ++metadata;
    EXPECT_NE(r.block.find("tweetkeeper-removed-post: x:"), std::string::npos);
    EXPECT_NE(r.block.find("stands for response <urn:uuid:"), std::string::npos);
  }
  EXPECT_EQ(metadata, 2);
  // The log: a pending line per post removed, then "replaced" per file.
  const std::string log = ReadFile(dir + "/purge.log");
  EXPECT_NE(log.find(R"("action":"dropped","post":"x:100","post_id":100,"reason":"deleted")"), std::string::npos) << log;
  EXPECT_NE(log.find(R"("action":"rewritten","post":"x:113")"), std::string::npos);
  EXPECT_NE(log.find(R"("file":")" + name + R"(","action":"replaced","new_sha256":")"), std::string::npos) << log;
  EXPECT_NE(log.find(R"("records_dropped":2,"posts_removed":5})"), std::string::npos) << log;
  EXPECT_NE(log.find(R"("records_dropped":2,"posts_removed":4})"), std::string::npos) << log;
  // Again: nothing left to purge, nothing touched.
  const ino_t inode = Inode(dir + "/" + name);
  const auto again = warc::PurgeDirectory(o, set);
  EXPECT_EQ(again.files_rewritten, 0);
  EXPECT_EQ(Inode(dir + "/" + name), inode);
  std::filesystem::remove_all(dir);
}

TEST(WarcPurgeFile, FillersKeepEveryHeaderWithinA64KiBBlock) {
  const std::string dir = TempDir();
  // ~3 to 7 KiB an exchange, 200 of them: 20 blocks and more. (Every size here is the same at each
  // run: ids, dates and digests have fixed lengths.)
  WriteFile(dir, 200, 3000);
  std::vector<int> gone;
  for (int k = 0; k < 200; k += 3) gone.push_back(100 + 3 * k + 1);      // rewritten
  for (int k = 1; k < 200; k += 7) for (int i = 0; i < 3; ++i) gone.push_back(100 + 3 * k + i);  // dropped
  warc::PurgeOptions o;
  o.dir = dir;
  const auto stats = warc::PurgeDirectory(o, XGone(gone));
  EXPECT_GE(stats.files_seen, 1);
  EXPECT_EQ(stats.files_rewritten, stats.files_seen);
  EXPECT_GT(stats.responses_rewritten, 50u);
  int fillers = 0;  // (the writer's are not copied: each one here is the purge's)
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".gz") continue;
    const auto recs = ReadWarc(e.path().string());
    ExpectSound(recs);
    for (const Rec& r : recs) fillers += r.block.rfind("padding: ", 0) == 0;
  }
  EXPECT_GT(fillers, 0) << "no header needed moving: the test shows nothing";
  std::filesystem::remove_all(dir);
}

TEST(WarcPurgeFile, LeavesOpenFilesLinksAndUnreadableFilesAlone) {
  const std::string dir = TempDir();
  const std::string name = WriteFile(dir, 2);
  const std::string path = dir + "/" + name;
  std::filesystem::copy_file(path, path + ".open");                   // a file being written
  std::filesystem::create_symlink(path, dir + "/link.warc.gz");      // a symbolic link
  std::ofstream(dir + "/bad.warc.gz") << "not gzip at all";          // not a WARC file
  std::ofstream(dir + "/" + name + ".purging") << "half written";    // a killed purge's
  const std::string open_before = ReadFile(path + ".open");
  warc::PurgeOptions o;
  o.dir = dir;
  const auto stats = warc::PurgeDirectory(o, XGone({100}));
  EXPECT_EQ(stats.files_rewritten, 1);
  EXPECT_EQ(stats.files_failed, 2);
  ASSERT_EQ(stats.errors.size(), 2u);
  EXPECT_NE(stats.errors[0].find("bad.warc.gz: left as it is: the gzip member at byte 0"), std::string::npos) << stats.errors[0];
  EXPECT_NE(stats.errors[1].find("link.warc.gz: left as it is: a symbolic link"), std::string::npos) << stats.errors[1];
  EXPECT_EQ(ReadFile(path + ".open"), open_before);
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + name + ".purging"));
  EXPECT_EQ(Texts(ReadWarc(path)).find("text of 100\""), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(WarcPurgeFile, DryRunSaysWhatWouldGoAndChangesNothing) {
  const std::string dir = TempDir();
  const std::string name = WriteFile(dir, 2);
  const std::string before = ReadFile(dir + "/" + name);
  warc::PurgeOptions o;
  o.dir = dir;
  o.dry_run = true;
  const auto stats = warc::PurgeDirectory(o, XGone({100, 101, 102, 104}));
  EXPECT_EQ(stats.files_rewritten, 0);
  EXPECT_NE(stats.planned.find(R"("post":"x:104")"), std::string::npos) << stats.planned;
  EXPECT_NE(stats.planned.find(R"("state":"dry-run")"), std::string::npos);
  EXPECT_EQ(ReadFile(dir + "/" + name), before);
  EXPECT_FALSE(std::filesystem::exists(dir + "/purge.log"));
  std::filesystem::remove_all(dir);
}

}  // namespace
