// The WARC writer (worker/archive/warc.hpp): digests, payloads, redaction, the record format, and
// files written, rolled over, closed and recovered, read back here record by record.
#include "archive/warc.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace warc = tweetkeeper::worker::warc;

namespace {

// A fresh directory, removed with everything in it when the test program ends.
std::string TempDir() {
  static std::vector<std::string> made;
  static const bool cleanup = [] {
    std::atexit([] {
      for (const auto& d : made) std::filesystem::remove_all(d);
    });
    return true;
  }();
  (void)cleanup;
  char tmpl[] = "/tmp/tk-warc-test.XXXXXX";
  char* d = mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  if (d) made.push_back(d);
  return d ? d : "";
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') out.push_back(e->d_name);
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every gzip member of data, decompressed, each on its own.
std::vector<std::string> Members(const std::string& data) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < data.size()) {
    z_stream z{};
    EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + at));
    z.avail_in = static_cast<uInt>(data.size() - at);
    std::string member;
    char buf[4096];
    int rc = Z_OK;
    while (rc == Z_OK) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      member.append(buf, sizeof buf - z.avail_out);
    }
    at += z.total_in;
    inflateEnd(&z);
    EXPECT_EQ(rc, Z_STREAM_END);
    if (rc != Z_STREAM_END) break;
    out.push_back(member);
  }
  return out;
}

struct Parsed {
  std::map<std::string, std::string> fields;
  std::string block;
  bool well_formed = false;
};

// A record as a strict reader reads it: version line, CRLF-terminated fields, CRLF, exactly
// Content-Length bytes of block, CRLF CRLF, nothing after.
Parsed Parse(const std::string& record) {
  Parsed p;
  if (record.rfind("WARC/1.0\r\n", 0) != 0) return p;
  std::size_t head_end = record.find("\r\n\r\n");
  if (head_end == std::string::npos) return p;
  std::size_t pos = std::string("WARC/1.0\r\n").size();
  while (pos < head_end + 2) {
    std::size_t eol = record.find("\r\n", pos);
    std::string line = record.substr(pos, eol - pos);
    std::size_t colon = line.find(": ");
    if (colon == std::string::npos) return p;
    p.fields[line.substr(0, colon)] = line.substr(colon + 2);
    pos = eol + 2;
  }
  std::size_t length = std::stoul(p.fields["Content-Length"]);
  std::size_t start = head_end + 4;
  if (record.size() != start + length + 4 || record.substr(start + length) != "\r\n\r\n") return p;
  p.block = record.substr(start, length);
  p.well_formed = true;
  return p;
}

// n in hexadecimal, as a chunk's size line has it.
std::string Hex(std::size_t n) {
  std::ostringstream o;
  o << std::hex << n;
  return o.str();
}

// The path of a .open file in dir as a writer of this host, long gone (pid 999999), leaves it.
std::string DeadWritersFile(const std::string& dir) {
  char h[256] = {};
  gethostname(h, sizeof h - 1);
  std::string host(h);
  for (char& c : host)
    if (c == '/' || c == '~' || c == '-') c = '_';  // as the writer names its files
  return dir + "/tweetkeeper-20260101000000000-00000-999999~" + host + ".warc.gz.open";
}

warc::WriterOptions Options(const std::string& dir) {
  warc::WriterOptions o;
  o.dir = dir;
  return o;
}

warc::Exchange SampleExchange(const std::string& token) {
  warc::Exchange e;
  e.target_uri = "http://127.0.0.1:8080/2/tweets?ids=20,21&tweet.fields=public_metrics";
  e.ip = "127.0.0.1";
  e.request = "GET /2/tweets?ids=20,21&tweet.fields=public_metrics HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
              "Authorization: Bearer " + token + "\r\nAccept: */*\r\n\r\n";
  e.response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
               "b\r\n{\"data\":[]}\r\n0\r\n\r\n";
  e.started = std::chrono::system_clock::now();
  return e;
}

}  // namespace

TEST(WarcDigest, Sha1InBase32) {
  EXPECT_EQ(warc::Sha1Base32("abc"), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
  EXPECT_EQ(warc::Sha1Base32(""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
}

TEST(WarcPayload, BodyAfterTheHeadDechunked) {
  EXPECT_EQ(warc::HttpPayload("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), "hello");
  EXPECT_EQ(warc::HttpPayload("HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"),
            "Wikipedia");
  EXPECT_EQ(warc::HttpPayload("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), "");
  EXPECT_EQ(warc::HttpPayload("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"), std::nullopt) << "no end of head";
  EXPECT_EQ(warc::HttpPayload("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nz\r\nab\r\n0\r\n\r\n"), std::nullopt);
  EXPECT_EQ(warc::HttpPayload("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nab\r\n0\r\n\r\n"), std::nullopt)
      << "a chunk longer than what follows";
}

TEST(WarcRedact, AuthorizationAndTokensReplacedAtTheirLength) {
  std::string token = "AAAAsecret-token-1234";
  std::string msg = "GET /x?access_token=" + token + " HTTP/1.1\r\nauthorization: Bearer " + token +
                    "\r\nX-Other: keep\r\n\r\nbody " + token;
  std::string out = warc::Redact(msg, {token, "abc"});
  EXPECT_EQ(out.size(), msg.size());
  EXPECT_EQ(out.find(token), std::string::npos);
  EXPECT_EQ(out.find("Bearer"), std::string::npos) << "the whole Authorization value goes";
  EXPECT_NE(out.find("X-Other: keep\r\n"), std::string::npos);
  EXPECT_NE(out.find("[redacted"), std::string::npos);
  EXPECT_EQ(warc::Redact("GET / HTTP/1.1\r\nHost: abc\r\n\r\n", {"abc"}), "GET / HTTP/1.1\r\nHost: abc\r\n\r\n")
      << "secrets shorter than 4 bytes are left";
}

TEST(WarcRecord, FormatAndIds) {
  std::string r = warc::Record({{"WARC-Type", "resource"}, {"WARC-Record-ID", warc::NewRecordId()}}, "abc");
  Parsed p = Parse(r);
  ASSERT_TRUE(p.well_formed) << r;
  EXPECT_EQ(p.block, "abc");
  EXPECT_EQ(p.fields["Content-Length"], "3");
  std::string id = warc::NewRecordId();
  EXPECT_EQ(id.size(), std::string("<urn:uuid:12345678-1234-1234-1234-123456789abc>").size());
  EXPECT_EQ(id[24], '4') << id;  // version 4
  EXPECT_NE(id, warc::NewRecordId());
  EXPECT_EQ(warc::WarcDate(std::chrono::system_clock::from_time_t(1700000000)), "2023-11-14T22:13:20Z");
}

TEST(WarcWriter, WritesLinkedRecordsReadBackWithDigests) {
  std::string dir = TempDir();
  std::string token = "AAAA-bearer-token-0123456789";
  {
    warc::WriterOptions o = Options(dir);
    o.secrets = {token};
    warc::Writer w(o);
    w.Write(SampleExchange(token));
    w.Write(SampleExchange(token));
    auto open_files = Files(dir);
    ASSERT_EQ(open_files.size(), 1u);
    EXPECT_EQ(open_files[0], w.CurrentName() + ".open") << "written under a temporary name";
    EXPECT_EQ(w.RecordsWritten(), 5u);
  }
  auto files = Files(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(files[0].size() > 8 && files[0].substr(files[0].size() - 8) == ".warc.gz") << files[0];
  EXPECT_EQ(files[0].rfind("tweetkeeper-", 0), 0u);
  std::string data = ReadFile(dir + "/" + files[0]);
  auto members = Members(data);
  ASSERT_EQ(members.size(), 5u) << "warcinfo, then a request and a response per exchange, each a gzip member";
  std::vector<Parsed> records;
  for (const auto& m : members) {
    records.push_back(Parse(m));
    ASSERT_TRUE(records.back().well_formed) << m;
    EXPECT_EQ(m.find(token), std::string::npos) << "no token in any record";
    EXPECT_EQ(records.back().fields["WARC-Block-Digest"], warc::Sha1Base32(records.back().block));
  }
  EXPECT_EQ(records[0].fields["WARC-Type"], "warcinfo");
  EXPECT_EQ(records[0].fields["WARC-Filename"], files[0]);
  EXPECT_EQ(records[0].fields["Content-Type"], "application/warc-fields");
  for (int i = 1; i < 5; i += 2) {
    Parsed& req = records[i];
    Parsed& resp = records[i + 1];
    EXPECT_EQ(req.fields["WARC-Type"], "request");
    EXPECT_EQ(resp.fields["WARC-Type"], "response");
    EXPECT_EQ(req.fields["WARC-Concurrent-To"], resp.fields["WARC-Record-ID"]);
    EXPECT_EQ(resp.fields["WARC-Concurrent-To"], req.fields["WARC-Record-ID"]);
    EXPECT_EQ(req.fields["WARC-Warcinfo-ID"], records[0].fields["WARC-Record-ID"]);
    EXPECT_EQ(resp.fields["Content-Type"], "application/http;msgtype=response");
    EXPECT_EQ(resp.fields["WARC-Target-URI"], "http://127.0.0.1:8080/2/tweets?ids=20,21&tweet.fields=public_metrics");
    EXPECT_EQ(resp.fields["WARC-IP-Address"], "127.0.0.1");
    EXPECT_EQ(resp.fields["WARC-Payload-Digest"], warc::Sha1Base32("{\"data\":[]}")) << "of the dechunked body";
    EXPECT_EQ(resp.block, SampleExchange(token).response) << "the response's exact bytes";
    EXPECT_EQ(req.block.find("Authorization: [redacted"), req.block.find("Authorization: "));
    EXPECT_EQ(req.block.size(), SampleExchange(token).request.size());
  }
  EXPECT_EQ(records[1].fields["WARC-Date"].size(), 20u);
}

TEST(WarcWriter, RollsOverBySizeAndTime) {
  std::string dir = TempDir();
  {
    warc::WriterOptions o = Options(dir);
    o.max_bytes = 600;
    warc::Writer w(o);
    for (int i = 0; i < 3; ++i) w.Write(SampleExchange("t0ken-t0ken"));
  }
  EXPECT_EQ(Files(dir).size(), 3u) << "an exchange that does not fit starts the next file";
  std::string dir2 = TempDir();
  {
    warc::WriterOptions o = Options(dir2);
    o.rollover = std::chrono::seconds(1);
    warc::Writer w(o);
    w.Write(SampleExchange("t0ken-t0ken"));
    sleep(1);
    w.Write(SampleExchange("t0ken-t0ken"));
  }
  auto files = Files(dir2);
  ASSERT_EQ(files.size(), 2u) << "a file older than the rollover is closed";
  EXPECT_NE(files[0], files[1]);
  for (const auto& f : files) EXPECT_EQ(Members(ReadFile(dir2 + "/" + f)).size(), 3u) << "each starts with its warcinfo";
  warc::WriterOptions zero = Options(dir2);
  zero.rollover = std::chrono::seconds(0);
  EXPECT_THROW(warc::Writer{zero}, std::invalid_argument);
  EXPECT_THROW(warc::Writer(Options("/nonexistent/dir")).Write(SampleExchange("t0ken-t0ken")), std::runtime_error);
}

TEST(WarcWriter, NoHeaderCrossesA64KiBBlockOfTheFileDecompressed) {
  std::string dir = TempDir();
  warc::Exchange e = SampleExchange("t0ken-t0ken");
  std::string ids;
  for (int i = 0; i < 100; ++i) ids += (i ? "," : "") + std::to_string(1800000000000000000LL + i);
  e.target_uri = "http://127.0.0.1:8080/2/tweets?ids=" + ids;  // a 2 KB header, as a batch of 100
  e.response += std::string(3000, ' ');
  {
    warc::Writer w(Options(dir));
    for (int i = 0; i < 200; ++i) w.Write(e);
  }
  auto files = Files(dir);
  ASSERT_EQ(files.size(), 1u);
  std::uint64_t offset = 0;
  int fillers = 0;
  int exchanges = 0;
  for (const auto& m : Members(ReadFile(dir + "/" + files[0]))) {
    Parsed p = Parse(m);
    ASSERT_TRUE(p.well_formed);
    EXPECT_EQ(p.fields["WARC-Block-Digest"], warc::Sha1Base32(p.block));
    std::uint64_t header = m.find("\r\n\r\n") + 4;
    EXPECT_EQ(offset / 65536, (offset + header - 1) / 65536) << "a header across a block's end at " << offset;
    if (p.fields["WARC-Type"] == "metadata") ++fillers;
    if (p.fields["WARC-Type"] == "response") ++exchanges;
    offset += m.size();
  }
  EXPECT_EQ(exchanges, 200);
  EXPECT_GT(fillers, 0) << "1.5 MB of records: some header would have crossed";
}

TEST(WarcRecover, AKilledWritersFileIsCutToItsCompleteRecordsAndNamed) {
  std::string dir = TempDir();
  // A writer in a child process, killed before it closes: its file stays .open, with a
  // record cut in the middle after its complete ones.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    warc::Writer w(Options(dir));
    w.Write(SampleExchange("t0ken-t0ken"));
    std::string path = dir + "/" + w.CurrentName() + ".open";
    std::string cut = warc::Gzip(warc::Record({{"WARC-Type", "response"}}, std::string(5000, 'x')));
    std::ofstream(path, std::ios::app | std::ios::binary).write(cut.data(), static_cast<std::streamsize>(cut.size() / 2));
    _exit(0);  // no destructor: as a SIGKILL leaves it
  }
  int status = 0;
  waitpid(child, &status, 0);
  auto before = Files(dir);
  ASSERT_EQ(before.size(), 1u);
  ASSERT_TRUE(before[0].find(".warc.gz.open") != std::string::npos);
  std::string cut_data = ReadFile(dir + "/" + before[0]);
  auto [keep, members] = warc::CompleteMembers(cut_data);
  EXPECT_EQ(members, 3);
  EXPECT_LT(keep, cut_data.size());

  // A live writer's .open file is left alone.
  warc::Writer live(Options(dir));
  live.Write(SampleExchange("t0ken-t0ken"));
  EXPECT_EQ(warc::Writer::Recover(dir), 1);
  live.Close();
  auto after = Files(dir);
  ASSERT_EQ(after.size(), 2u);
  for (const auto& f : after) {
    EXPECT_EQ(f.find(".open"), std::string::npos) << f;
    std::string data = ReadFile(dir + "/" + f);
    EXPECT_EQ(warc::CompleteMembers(data).first, data.size()) << "only complete members remain in " << f;
    for (const auto& m : Members(data)) EXPECT_TRUE(Parse(m).well_formed);
  }
  EXPECT_EQ(warc::Writer::Recover(dir), 0) << "nothing left to recover";
}

// A gateway's error page that quotes the token, gzip-compressed and chunked, or chunked with the
// token cut across two chunks: its bytes cannot be redacted in place, so the response is not
// recorded and a metadata record stands in its place, paired with the request. A plain body is
// redacted in place as before. Files are 0600.
TEST(WarcWriter, AResponseWhoseDecodedBodyHoldsATokenIsNotRecorded) {
  std::string dir = TempDir();
  const std::string token = "AAAA-bearer-token-0123456789";
  const std::string page = "<p>refused with Authorization: Bearer " + token + "</p>";
  const std::string gz = warc::Gzip(page);
  warc::Exchange zipped = SampleExchange(token);
  zipped.response = "HTTP/1.1 502 Bad Gateway\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    Hex(gz.size() / 2) + "\r\n" + gz.substr(0, gz.size() / 2) + "\r\n" + Hex(gz.size() - gz.size() / 2) +
                    "\r\n" + gz.substr(gz.size() / 2) + "\r\n0\r\n\r\n";
  warc::Exchange cut = SampleExchange(token);
  const std::size_t half = page.find(token) + token.size() / 2;
  cut.response = "HTTP/1.1 502 Bad Gateway\r\nTransfer-Encoding: chunked\r\n\r\n" + Hex(half) + "\r\n" +
                 page.substr(0, half) + "\r\n" + Hex(page.size() - half) + "\r\n" + page.substr(half) + "\r\n0\r\n\r\n";
  warc::Exchange plain = SampleExchange(token);
  plain.response = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: " + std::to_string(page.size()) + "\r\n\r\n" + page;
  {
    warc::WriterOptions o = Options(dir);
    o.secrets = {token};
    warc::Writer w(o);
    w.Write(zipped);
    w.Write(cut);
    w.Write(plain);
  }
  auto files = Files(dir);
  ASSERT_EQ(files.size(), 1u);
  struct stat st {};
  ASSERT_EQ(stat((dir + "/" + files[0]).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto members = Members(ReadFile(dir + "/" + files[0]));
  ASSERT_EQ(members.size(), 7u);
  std::vector<Parsed> r;
  for (const auto& m : members) {
    r.push_back(Parse(m));
    ASSERT_TRUE(r.back().well_formed) << m;
    EXPECT_EQ(m.find(token), std::string::npos);
    EXPECT_EQ(m.find(token.substr(0, token.size() / 2)), std::string::npos) << "not even half of it";
  }
  for (int i : {2, 4}) {
    EXPECT_EQ(r[i].fields["WARC-Type"], "metadata");
    EXPECT_EQ(r[i].fields["Content-Type"], "application/warc-fields");
    EXPECT_EQ(r[i].fields["WARC-Concurrent-To"], r[i - 1].fields["WARC-Record-ID"]);
    EXPECT_EQ(r[i].block.rfind("tweetkeeper-response-dropped: ", 0), 0u) << r[i].block;
    EXPECT_NE(r[i].block.find("tweetkeeper-response-status: HTTP/1.1 502 Bad Gateway"), std::string::npos);
  }
  EXPECT_EQ(r[6].fields["WARC-Type"], "response") << "a plain body is redacted in place";
  EXPECT_EQ(r[6].block.size(), plain.response.size());
}

// A planted symlink named like a killed writer's file: recovery leaves it and its target alone.
TEST(WarcRecover, NeverThroughASymlink) {
  std::string dir = TempDir();
  const std::string target = TempDir() + "/precious";
  std::ofstream(target) << "do not truncate me";
  const std::string link = DeadWritersFile(dir);
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(warc::Writer::Recover(dir), 0);
  EXPECT_EQ(ReadFile(target), "do not truncate me");
  struct stat st {};
  EXPECT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "left as it was";
}

// A hard link named like a killed writer's file (to a file elsewhere the user can write, in a
// directory the WARC directory's other writers cannot see): recovery would have cut that file to
// its "complete gzip members", none, and unlinked the name. A file with more than one link is
// left as it is (issue 49).
TEST(WarcRecover, NeverAFileWithAnotherLink) {
  std::string dir = TempDir();
  const std::string target = TempDir() + "/precious";
  std::ofstream(target) << "do not truncate me";
  const std::string link = DeadWritersFile(dir);
  ASSERT_EQ(::link(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(warc::Writer::Recover(dir), 0);
  EXPECT_EQ(ReadFile(target), "do not truncate me");
  struct stat st {};
  ASSERT_EQ(stat(link.c_str(), &st), 0) << "left as it was";
  EXPECT_EQ(st.st_nlink, 2u);
}

// Tokens in the forms a server may echo them in (issue 49): percent-encoded (either case of hex),
// JSON-escaped (\/ for '/', \uXXXX for any character), and mixed. Replaced in place at the
// length of the escaped text, so that Content-Length and chunk sizes still hold.
TEST(WarcRedact, EscapedFormsOfATokenReplacedAtTheirLength) {
  const std::string token = "AAAA/bearer+token=0123456789";
  const std::vector<std::string> forms = {
      "AAAA%2Fbearer%2Btoken%3D0123456789",       // a query string
      "AAAA%2fbearer%2btoken%3d0123456789",       // lower case hex
      "AAAA\\/bearer+token=0123456789",           // JSON's \/
      "\\u0041AAA\\u002fbearer\\u002Btoken=012345\\u0036789",  // \uXXXX, either case
      "AAAA\\/bearer%2Btoken\\u003d0123456789",     // mixed
  };
  for (const std::string& form : forms) {
    const std::string body = "{\"echo\":\"" + form + "\"}";
    const std::string message = "HTTP/1.1 400 Bad Request\r\nContent-Length: " + std::to_string(body.size()) +
                                "\r\n\r\n" + body;
    const std::string out = warc::Redact(message, {token});
    EXPECT_EQ(out.size(), message.size()) << form;
    EXPECT_EQ(out.find(form), std::string::npos) << form << " left in " << out;
    EXPECT_NE(out.find("{\"echo\":\"[redacted"), std::string::npos) << out;
    EXPECT_EQ(out.substr(out.size() - 2), "\"}") << "only the token's own bytes are replaced: " << out;
  }
  const std::string uri = "GET /api/v1/statuses/1?access_token=AAAA%2Fbearer%2Btoken%3D0123456789 HTTP/1.1\r\n\r\n";
  EXPECT_EQ(warc::Redact(uri, {token}).find("0123456789"), std::string::npos);
  EXPECT_EQ(warc::Redact("AAAA%2Fbearer", {token}), "AAAA%2Fbearer") << "a part of a token is no token";
}

// Transfer codings other than chunked alone (Transfer-Encoding: gzip, chunked) and stacks of
// content codings: the body a reader gets is decoded through every coding before it is searched,
// for the token and its escaped forms; a body that holds one is not recorded (issue 49).
TEST(WarcWriter, TokensUnderEveryCodingAndEscapeAreNotRecorded) {
  std::string dir = TempDir();
  const std::string token = "AAAA/bearer-token-0123456789";
  const std::string page = "<p>refused with Authorization: Bearer " + token + "</p>";
  const std::string json = "{\"error\":\"bad token AAAA\\/bearer-token-0123456789\"}";
  auto chunked = [&](const std::string& body) { return Hex(body.size()) + "\r\n" + body + "\r\n0\r\n\r\n"; };
  auto deflate = [](const std::string& data) {  // zlib's format, as HTTP's "deflate" is
    uLongf size = compressBound(static_cast<uLong>(data.size()));
    std::string out(size, '\0');
    EXPECT_EQ(compress(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(data.data()),
                       static_cast<uLong>(data.size())), Z_OK);
    out.resize(size);
    return out;
  };
  std::vector<std::string> responses = {
      "HTTP/1.1 502 Bad Gateway\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunked(warc::Gzip(page)),
      "HTTP/1.1 502 Bad Gateway\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" +
          chunked(warc::Gzip(page)),
      "HTTP/1.1 502 Bad Gateway\r\nContent-Encoding: deflate\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" +
          chunked(warc::Gzip(deflate(page))),
      "HTTP/1.1 502 Bad Gateway\r\nContent-Encoding: gzip, deflate\r\nContent-Length: " +
          std::to_string(deflate(warc::Gzip(page)).size()) + "\r\n\r\n" + deflate(warc::Gzip(page)),
      "HTTP/1.1 401 Unauthorized\r\nContent-Encoding: gzip\r\nContent-Length: " +
          std::to_string(warc::Gzip(json).size()) + "\r\n\r\n" + warc::Gzip(json),
  };
  {
    warc::WriterOptions o = Options(dir);
    o.secrets = {token};
    warc::Writer w(o);
    for (const std::string& response : responses) {
      warc::Exchange e = SampleExchange(token);
      e.target_uri += "&access_token=AAAA%2Fbearer-token-0123456789";  // WARC-Target-URI too
      e.response = response;
      w.Write(e);
    }
  }
  auto files = Files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto members = Members(ReadFile(dir + "/" + files[0]));
  ASSERT_EQ(members.size(), 1 + 2 * responses.size());
  for (std::size_t i = 0; i < responses.size(); ++i) {
    const Parsed r = Parse(members[2 + 2 * i]);
    ASSERT_TRUE(r.well_formed);
    EXPECT_EQ(r.fields.at("WARC-Type"), "metadata") << "response " << i << " recorded: " << responses[i];
    EXPECT_EQ(r.block.rfind("tweetkeeper-response-dropped: ", 0), 0u) << r.block;
  }
  for (const std::string& m : members) EXPECT_EQ(m.find("0123456789"), std::string::npos) << m;
}
