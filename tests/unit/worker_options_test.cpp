// Command line, API URL and token validation, and password redaction of database messages.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>

#include <string>
#include <tuple>
#include <vector>

#include "cli/options.hpp"
#include "credentials/credentials.hpp"
#include "dsn/dsn.hpp"

namespace tweetkeeper::worker {
namespace {

ParsedCommandLine Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "tweetkeeper-worker");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

// `--dsn x OPTION VALUE` with each of the values: refused, as a usage error whose message names
// `named` (the option, or the family of options it belongs to).
void ExpectUsageErrors(const char* option, std::initializer_list<const char*> values, const std::string& named) {
  for (const char* value : values) {
    ParsedCommandLine p = Parse({"--dsn", "x", option, value});
    EXPECT_FALSE(p.options) << option << " " << value;
    EXPECT_EQ(p.exit_code, kExitUsage) << option << " " << value;
    EXPECT_NE(p.err.find(named), std::string::npos) << p.err;
  }
}

// The options a run is shaped by, in one value, so a test states all of them at once.
auto RunShape(const Options& o) {
  return std::make_tuple(o.api.base, o.concurrency, o.batch_size, o.name, o.http_timeout_s, o.poll_interval_ms,
                         o.exit_when_idle_s, o.log_level);
}

TEST(CommandLine, DefaultsWithOnlyDsn) {
  ParsedCommandLine p = Parse({"--dsn", "dbname=tk"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->dsn, "dbname=tk");
  EXPECT_EQ(p.options->api.host, "api.x.com");
  EXPECT_EQ(RunShape(*p.options), std::make_tuple("https://api.x.com", 2, 100, "", 30, 5000, 0, "info"));
  EXPECT_EQ(p.options->startup_timeout_s, 0);  // wait for the database as long as it takes
  EXPECT_EQ(p.options->credentials_file, "");
  EXPECT_EQ(p.options->provider, "x-v2");
}

// Partitions (docs/partitions.md): --dsn once per node, in order, each taking one value; a
// follower reads one node; --dsn-file beside several --dsn is refused, as is an empty one.
TEST(CommandLine, DsnOncePerPartition) {
  ParsedCommandLine p = Parse({"--dsn", "dbname=p0", "--dsn", "dbname=p1"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->dsn, "dbname=p0");
  EXPECT_EQ(p.options->dsns, (std::vector<std::string>{"dbname=p0", "dbname=p1"}));
  p = Parse({"--dsn", "dbname=p0", "--dsn", "dbname=p1", "--follow"});
  EXPECT_FALSE(p.options);
  EXPECT_NE(p.err.find("--follow reads one database"), std::string::npos) << p.err;
  p = Parse({"--dsn", "dbname=p0", "--dsn", "", "--concurrency", "3"});
  EXPECT_FALSE(p.options);
  EXPECT_NE(p.err.find("--dsn is empty"), std::string::npos) << p.err;
  p = Parse({"--dsn", "dbname=p0", "--dsn", "dbname=p1", "--dsn-file", "/etc/tweetkeeper/dsn"});
  EXPECT_FALSE(p.options);
  EXPECT_NE(p.err.find("--dsn-file"), std::string::npos) << p.err;
  p = Parse({"--dsn", "dbname=p0", "dbname=p1"});  // one value per --dsn: the second is no option
  EXPECT_FALSE(p.options);
}

TEST(CommandLine, CredentialsAndProvider) {
  ParsedCommandLine p = Parse({"--dsn", "x", "--credentials", "/etc/tweetkeeper/tokens", "--provider", "x-v1.1"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->credentials_file, "/etc/tweetkeeper/tokens");
  EXPECT_EQ(p.options->provider, "x-v1.1");
  p = Parse({"--dsn", "x", "--provider", "x-v2"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->provider, "x-v2");
}

TEST(CommandLine, BlueskyHasItsOwnEndpointAndBatch) {
  ParsedCommandLine p = Parse({"--dsn", "x", "--provider", "bluesky"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->api.base, "https://public.api.bsky.app");
  EXPECT_EQ(p.options->batch_size, 25);
  p = Parse({"--dsn", "x", "--provider", "bluesky", "--api-url", "http://127.0.0.1:9/", "--batch-size", "10"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->api.base, "http://127.0.0.1:9");
  EXPECT_EQ(p.options->batch_size, 10);
  p = Parse({"--dsn", "x", "--provider", "bluesky", "--batch-size", "26"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.exit_code, kExitUsage);
  EXPECT_EQ(p.err, "tweetkeeper-worker: --batch-size 26 is more than bluesky's getPosts takes (25)");
  p = Parse({"--dsn", "x", "--provider", "mastodon", "--instance", "A.social=http://127.0.0.1:9/m/a.social/"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->batch_size, 20);
  EXPECT_EQ(p.options->instances.at("a.social"), "http://127.0.0.1:9/m/a.social");
  p = Parse({"--dsn", "x", "--provider", "mastodon", "--instance", "a.social"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.err, "tweetkeeper-worker: --instance 'a.social' is not HOST=http(s)://host[:port][/path]");
  // Never echoed with its user info (a password, perhaps), and on one line.
  p = Parse({"--dsn", "x", "--provider", "mastodon", "--instance", "a.social=ftp://me:s3cret@proxy"});
  EXPECT_EQ(p.err, "tweetkeeper-worker: --instance is not HOST=http(s)://host[:port][/path]");
  p = Parse({"--dsn", "x", "--provider", "mastodon", "--instance", "a\x1b[2J.social"});
  EXPECT_EQ(p.err, "tweetkeeper-worker: --instance 'a\\x1b[2J.social' is not HOST=http(s)://host[:port][/path]");
  p = Parse({"--dsn", "x", "--provider", "mastodon", "--batch-size", "21"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.exit_code, kExitUsage);
  p = Parse({"--dsn", "x", "--provider", "threads"});
  EXPECT_FALSE(p.options);
}

// Stream counts: Bluesky's stream, a reader of its own (no --follow), its flush and ring bounded.
TEST(CommandLine, StreamCounts) {
  ParsedCommandLine p = Parse({"--dsn", "x", "--provider", "bluesky", "--stream-counts", "--stream-flush", "0.5"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_TRUE(p.options->stream_counts);
  EXPECT_EQ(p.options->stream_flush_s, 0.5);
  EXPECT_EQ(p.options->stream_ring_s, 120);
  for (std::vector<const char*> bad : {std::vector<const char*>{"--dsn", "x", "--stream-counts"},
                                       {"--dsn", "x", "--provider", "bluesky", "--stream-counts", "--follow"},
                                       {"--dsn", "x", "--provider", "bluesky", "--stream-counts", "--jetstream-url", "none"}}) {
    ParsedCommandLine q = Parse(bad);
    EXPECT_FALSE(q.options);
    EXPECT_NE(q.err.find("--stream-counts reads Bluesky's Jetstream"), std::string::npos) << q.err;
  }
  ExpectUsageErrors("--stream-flush", {"0", "61", "x"}, "--stream-flush");
  ExpectUsageErrors("--stream-ring", {"9", "3601"}, "--stream-ring");
}

TEST(CommandLine, StartupTimeout) {
  ParsedCommandLine p = Parse({"--dsn", "x", "--startup-timeout", "90"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->startup_timeout_s, 90);
  ExpectUsageErrors("--startup-timeout", {"-1", "soon", "1.5"}, "--startup-timeout");
}

TEST(CommandLine, MetricsAddress) {
  ParsedCommandLine p = Parse({"--dsn", "x"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->metrics_address, "");  // no /metrics unless asked
  for (const char* good : {"127.0.0.1:9464", "0.0.0.0:0", "localhost:65535", "metrics-host.internal:9464"}) {
    ParsedCommandLine q = Parse({"--dsn", "x", "--metrics-address", good});
    ASSERT_TRUE(q.options) << good << ": " << q.err;
    EXPECT_EQ(q.options->metrics_address, good);
  }
  ExpectUsageErrors("--metrics-address",
                    {"", "9464", ":9464", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:99999999", "[::1]:9464",
                     "host:port", "a b:1"},
                    "--metrics-address");
}

TEST(CommandLine, Warc) {
  ParsedCommandLine p = Parse({"--dsn", "x"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->warc_dir, "");  // nothing recorded unless asked
  EXPECT_EQ(p.options->warc_rollover_s, 1800);
  EXPECT_EQ(p.options->warc_max_mb, 1000);
  EXPECT_EQ(p.options->warc_purge_interval_s, 3600);  // gone posts out of the files every hour
  ParsedCommandLine q = Parse({"--dsn", "x", "--warc-dir", "/var/lib/tk/warc", "--warc-rollover", "60", "--warc-max-size", "5"});
  ASSERT_TRUE(q.options) << q.err;
  EXPECT_EQ(std::make_tuple(q.options->warc_dir, q.options->warc_rollover_s, q.options->warc_max_mb),
            std::make_tuple(std::string("/var/lib/tk/warc"), 60, 5));
  ExpectUsageErrors("--warc-rollover", {"0", "soon"}, "--warc");
  ExpectUsageErrors("--warc-max-size", {"0"}, "--warc");
  ExpectUsageErrors("--warc-purge-interval", {"-1", "hourly", "604801"}, "--warc");
  EXPECT_EQ(Parse({"--dsn", "x", "--warc-purge-interval", "0"}).options->warc_purge_interval_s, 0);  // never
  ExpectUsageErrors("--warc-dir", {"", "a\tb"}, "--warc");
}

// --jetstream-dictionary: a path (main.cpp reads and checks the file), only with a Jetstream.
TEST(CommandLine, JetstreamDictionary) {
  ParsedCommandLine p = Parse({"--dsn", "x", "--follow", "--provider", "bluesky"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->jetstream_dictionary, "");  // uncompressed unless asked
  p = Parse({"--dsn", "x", "--follow", "--provider", "bluesky", "--jetstream-dictionary", "/etc/tk/zstd_dictionary"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(p.options->jetstream_dictionary, "/etc/tk/zstd_dictionary");
  p = Parse({"--dsn", "x", "--follow", "--provider", "bluesky", "--jetstream-url", "none", "--jetstream-dictionary", "d"});
  EXPECT_EQ(p.exit_code, kExitUsage);
  EXPECT_NE(p.err.find("--jetstream-dictionary needs a Jetstream"), std::string::npos) << p.err;
  ExpectUsageErrors("--jetstream-dictionary", {"a\nb"}, "--jetstream-dictionary");
}

TEST(CommandLine, AllOptions) {
  ParsedCommandLine p = Parse({"--dsn", "postgresql:///tk", "--api-url", "http://127.0.0.1:8080/", "--concurrency",
                               "64", "--batch-size", "1", "--name", "w1", "--http-timeout", "5", "--poll-interval",
                               "50", "--exit-when-idle", "3", "--log-level", "debug"});
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_EQ(RunShape(*p.options), std::make_tuple("http://127.0.0.1:8080", 64, 1, "w1", 5, 50, 3, "debug"));
}

TEST(CommandLine, HelpMentionsTheTokenVariable) {
  ParsedCommandLine p = Parse({"--help"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_NE(p.out.find("TWEETKEEPER_BEARER_TOKEN"), std::string::npos);
  EXPECT_NE(p.out.find("--exit-when-idle"), std::string::npos);
  EXPECT_NE(p.out.find("--credentials"), std::string::npos);
  EXPECT_NE(p.out.find("chmod 600"), std::string::npos);
  EXPECT_NE(p.out.find("--provider"), std::string::npos);
  EXPECT_NE(p.out.find("x-v1.1"), std::string::npos);
  EXPECT_TRUE(p.err.empty());
}

TEST(CommandLine, UsageErrorsExit2WithOneLine) {
  const std::vector<std::vector<const char*>> bad = {
      {"--dsn-file"},
      {"--dsn", ""},
      {"--dsn", "x", "--concurrency", "0"},
      {"--dsn", "x", "--concurrency", "65"},
      {"--dsn", "x", "--batch-size", "101"},
      {"--dsn", "x", "--batch-size", "ten"},
      {"--dsn", "x", "--log-level", "verbose"},
      {"--dsn", "x", "--api-url", "ftp://api.x.com"},
      {"--dsn", "x", "--http-timeout", "0"},
      {"--dsn", "x", "--exit-when-idle", "-1"},
      {"--dsn", "x", "--bearer-token", "secret"},
      {"--dsn", "x", "--name", "a\nb"},
      {"--dsn", "x", "--credentials", ""},
      {"--dsn", "x", "--credentials"},
      {"--dsn", "x", "--credentials", "a\nb"},
      {"--dsn", "x", "--provider", "x-v3"},
      {"--dsn", "x", "--provider", ""},
  };
  for (const auto& args : bad) {
    ParsedCommandLine p = Parse(args);
    std::string shown;
    for (const char* a : args) shown += std::string(a) + " ";
    EXPECT_FALSE(p.options) << shown;
    EXPECT_EQ(p.exit_code, 2) << shown;
    EXPECT_EQ(p.err.find('\n'), std::string::npos) << p.err;
    EXPECT_EQ(p.err.rfind("tweetkeeper-worker: ", 0), 0u) << p.err;
  }
  EXPECT_NE(Parse({"--dsn-file"}).err.find("--dsn-file"), std::string::npos);
  // No --dsn: libpq's environment (PGHOST, PGSERVICE, ...), as psql does.
  EXPECT_TRUE(Parse({}).options);
  EXPECT_NE(Parse({"--dsn", "x", "--api-url", "ftp://h"}).err.find("'ftp://h'"), std::string::npos);
  // User info may hold a password: not echoed.
  EXPECT_EQ(Parse({"--dsn", "x", "--api-url", "https://u:pw@h"}).err.find("pw"), std::string::npos);
}

TEST(ApiUrl, Accepted) {
  struct Case {
    const char* url;
    const char* base;
    const char* host;
  };
  for (const Case& c : std::vector<Case>{
           {"https://api.x.com", "https://api.x.com", "api.x.com"},
           {"https://api.x.com/", "https://api.x.com", "api.x.com"},
           {"HTTPS://API.X.COM", "HTTPS://API.X.COM", "API.X.COM"},
           {"http://localhost:8080", "http://localhost:8080", "localhost"},
           {"http://127.0.0.1:65535/mock/x/", "http://127.0.0.1:65535/mock/x", "127.0.0.1"},
           {"http://[::1]:8080/p", "http://[::1]:8080/p", "[::1]"},
           {"http://[::1]", "http://[::1]", "[::1]"},
           {"http://mock_api", "http://mock_api", "mock_api"},
       }) {
    auto api = ParseApiUrl(c.url);
    ASSERT_TRUE(api) << c.url;
    EXPECT_EQ(api->base, c.base);
    EXPECT_EQ(api->host, c.host);
  }
}

TEST(ApiUrl, Rejected) {
  for (const char* url : {"",
                          "api.x.com",
                          "ftp://api.x.com",
                          "https://",
                          "https:///path",
                          "https://:80",
                          "https://h:",
                          "https://h:0",
                          "https://h:65536",
                          "https://h:123456",
                          "https://h:8a",
                          "https://u:p@h",
                          "https://h/p?q=1",
                          "https://h/#f",
                          "https://h /p",
                          "https://h\t",
                          "https://[::1",
                          "https://[]",
                          "https://[::1]x",
                          "https://[::1]:",
                          "https://[zz]",
                          "https://h\\p",
                          "https://hé"}) {
    EXPECT_FALSE(ParseApiUrl(url)) << url;
  }
}

TEST(Token, Validation) {
  EXPECT_FALSE(TokenError("AAAAAAAAAAAAAAAAAAAAA%2Fabc%3D"));
  ASSERT_TRUE(TokenError(nullptr));
  EXPECT_NE(TokenError(nullptr)->find("TWEETKEEPER_BEARER_TOKEN"), std::string::npos);
  EXPECT_TRUE(TokenError(""));
  auto error = TokenError("secret\r\nX-Injected: 1");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->find("secret"), std::string::npos);  // never quotes the token
  // One rule for the environment and the credentials file: a space or a non-ASCII byte would
  // break the Authorization header wherever the token came from.
  for (const char* bad : {"two words", "caf\xc3\xa9"}) {
    EXPECT_TRUE(TokenError(bad)) << bad;
    EXPECT_TRUE(CredentialTokenError(bad)) << bad;
  }
}

TEST(Dsn, ParsableOrNot) {
  EXPECT_FALSE(DsnError("host=localhost dbname=tk password=s3cret"));
  EXPECT_FALSE(DsnError("postgresql://tk:s3cret@localhost:5432/tk"));
  EXPECT_FALSE(DsnError(""));  // libpq defaults (PG* environment)
  auto error = DsnError("postgresql://tk:s3cr%zzet@localhost/tk");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->find("s3cr"), std::string::npos) << *error;
  error = DsnError("host=h password=topsecret bogus=1");
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("bogus"), std::string::npos) << *error;
  EXPECT_EQ(error->find("topsecret"), std::string::npos) << *error;
}

TEST(Dsn, RedactsPasswordsAndJoinsLines) {
  EXPECT_EQ(RedactDsnSecrets("connection to server failed: FATAL:  password \"hunter2\" rejected\n\tHINT here\n",
                             "host=db password=hunter2"),
            "connection to server failed: FATAL: password \"***\" rejected HINT here");
  EXPECT_EQ(RedactDsnSecrets("bad: pa%20ss and pa ss", "postgresql://u:pa%20ss@h/db"), "bad: *** and ***");
  EXPECT_EQ(RedactDsnSecrets("quoted: it's", "host=h password = 'it\\'s'"), "quoted: ***");
  EXPECT_EQ(RedactDsnSecrets("uri: postgresql://h/db?password=q1", "postgresql://h/db?password=q1"), "uri: <dsn>");
  EXPECT_EQ(RedactDsnSecrets("q1 leaked", "postgresql://h/db?password=q1&sslmode=disable"), "*** leaked");
  EXPECT_EQ(RedactDsnSecrets("nothing secret", "host=h"), "nothing secret");
}

TEST(ApiUrlCleartext, WarnedForHttpBeyondLoopback) {
  auto warn = [](const char* url) { return CleartextWarning(*ParseApiUrl(url)); };
  EXPECT_FALSE(warn("https://api.x.com").has_value());
  EXPECT_FALSE(warn("http://127.0.0.1:8080/mock").has_value());
  EXPECT_FALSE(warn("http://localhost:9").has_value());
  EXPECT_FALSE(warn("http://[::1]:9").has_value());
  const auto w = warn("http://proxy.example:8080");
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("http:// to proxy.example: the bearer token goes over the network in clear"), std::string::npos) << *w;
}

}  // namespace
TEST(CommandLine, UsageErrorIsOneLineWithoutPasswords) {
  // A pasted newline in a value must not split the one stderr line.
  for (const auto& args : {std::vector<const char*>{"--dsn", "x", "--api-url", "http://a\nb"},
                           std::vector<const char*>{"--dsn", "x", "--concurrency", "1\n2"}}) {
    ParsedCommandLine p = Parse(args);
    ASSERT_FALSE(p.options);
    EXPECT_EQ(p.exit_code, kExitUsage);
    EXPECT_EQ(p.err.find('\n'), std::string::npos) << p.err;
  }
  // An unquoted DSN splits into stray arguments, which CLI11 quotes.
  ParsedCommandLine p = Parse({"--dsn", "host=db", "password=s3cretPw", "postgresql://u:s3cretPw2@db/x"});
  ASSERT_FALSE(p.options);
  EXPECT_NE(p.err.find("not expected"), std::string::npos) << p.err;
  EXPECT_EQ(p.err.find("s3cretPw"), std::string::npos) << p.err;
}

// --dsn-file: the connection string from a file only its owner may read, never from both options.
TEST(ConnectionString, FromTheCommandLineAFileOrTheEnvironment) {
  std::string error;
  EXPECT_EQ(ChosenDsn("host=a", true, "", &error), "host=a");
  EXPECT_EQ(ChosenDsn("", false, "", &error), "");  // libpq's environment
  char path[] = "/tmp/tk-dsn-XXXXXX";
  const int fd = mkstemp(path);  // mode 600, ours
  ASSERT_GE(fd, 0);
  const std::string text = "# the queue's database\n\n  host=db dbname=tk password=s3cret \n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  EXPECT_EQ(ChosenDsn("", false, path, &error), "host=db dbname=tk password=s3cret") << error;
  EXPECT_FALSE(ChosenDsn("host=a", true, path, &error));
  EXPECT_EQ(error, "--dsn and --dsn-file are both given: the connection string comes from one of them");
  chmod(path, 0640);
  error.clear();
  EXPECT_FALSE(ChosenDsn("", false, path, &error));
  EXPECT_EQ(error, std::string("--dsn-file ") + path + ": group or others may read it (it may hold a password); run chmod 600 " + path);
  EXPECT_EQ(error.find("s3cret"), std::string::npos);
  chmod(path, 0600);
  FILE* f = fopen(path, "w");
  ASSERT_NE(f, nullptr);
  fputs("# nothing\n", f);
  fclose(f);
  error.clear();
  EXPECT_FALSE(ChosenDsn("", false, path, &error));
  EXPECT_NE(error.find("holds no connection string"), std::string::npos) << error;
  unlink(path);
  error.clear();
  EXPECT_FALSE(ChosenDsn("", false, "/nonexistent/dsn", &error));
  EXPECT_EQ(error, "--dsn-file /nonexistent/dsn: cannot open it: No such file or directory");
  error.clear();
  EXPECT_FALSE(ChosenDsn("", false, "/tmp", &error));
  EXPECT_EQ(error, "--dsn-file /tmp: not a regular file");
}

}  // namespace tweetkeeper::worker
