// Credentials: the name=token file (content, mode, file type) and the environment variable.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "credentials/credentials.hpp"

namespace tweetkeeper::worker {
namespace {

// A file in a fresh temporary directory, removed with it.
class TempFile {
 public:
  TempFile(const std::string& content, mode_t mode) {
    char dir[] = "/tmp/tk-cred-XXXXXX";
    dir_ = mkdtemp(dir);
    path_ = dir_ + "/credentials";
    std::ofstream(path_) << content;
    chmod(path_.c_str(), mode);
  }
  ~TempFile() {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, path_;
};

TEST(CredentialsParse, LinesCommentsAndBlanks) {
  CredentialsOrError c = ParseCredentials(
      "# tokens for tweetkeeper\n\nbasic-1=AAAA%2Fb==\r\n  pro_app.2 = tok2  \n\t# indented comment\nx=y", "f");
  ASSERT_TRUE(c.ok()) << c.error;
  EXPECT_EQ(*c.credentials, (Credentials{{"basic-1", "AAAA%2Fb=="}, {"pro_app.2", "tok2"}, {"x", "y"}}));
}

TEST(CredentialsParse, RefusesWithoutQuotingTokens) {
  struct Case {
    std::string text;
    std::string message;  // a part of the error
  };
  const std::vector<Case> cases = {
      {"", "holds no credentials"},
      {"# only a comment\n\n", "holds no credentials"},
      {"a=SECRET1\nSECRET2\n", "f line 2: expected name=token"},
      {"=SECRET", "line 1: the name before '=' must be"},
      {"bad name=SECRET", "line 1: the name before '=' must be"},
      {"caf\xc3\xa9=SECRET", "the name before '='"},
      {std::string(65, 'n') + "=SECRET", "1 to 64 characters"},
      {"a=", "line 1: the token is empty (credential 'a')"},
      {"a=SEC RET", "contains a space"},
      {"a=SECRET\x01", "control character"},
      {"a=SECRET\xc3\xa9", "non-ASCII"},
      {"a=SECRET\nb=SECRET2\na=SECRET3", "line 3: credential 'a' is defined twice"},
  };
  for (const Case& c : cases) {
    CredentialsOrError r = ParseCredentials(c.text, "f");
    EXPECT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error.find(c.message), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find("SECRET"), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  }
  EXPECT_TRUE(ParseCredentials(std::string(64, 'n') + "=t", "f").ok());
}

TEST(CredentialsFile, Loads) {
  TempFile f("default=SECRET\nother=SECRET2\n", 0600);
  CredentialsOrError c = LoadCredentials(f.path());
  ASSERT_TRUE(c.ok()) << c.error;
  EXPECT_EQ(c.credentials->size(), 2u);
  EXPECT_EQ(c.credentials->at("default"), "SECRET");
  TempFile readonly("a=b", 0400);
  EXPECT_TRUE(LoadCredentials(readonly.path()).ok());
}

TEST(CredentialsFile, RefusesOpenModesWithTheFix) {
  for (mode_t mode : {0644, 0640, 0604, 0660, 0606, 0610, 0601, 0666, 0777}) {
    TempFile f("a=SECRET", mode);
    CredentialsOrError c = LoadCredentials(f.path());
    EXPECT_FALSE(c.ok()) << std::oct << mode;
    char shown[8];
    snprintf(shown, sizeof shown, "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(c.error.find(f.path()), std::string::npos) << c.error;
    EXPECT_NE(c.error.find(std::string("mode ") + shown), std::string::npos) << c.error;
    EXPECT_NE(c.error.find("chmod 600 " + f.path()), std::string::npos) << c.error;
    EXPECT_EQ(c.error.find("SECRET"), std::string::npos) << c.error;
  }
}

TEST(CredentialsFile, RefusesNonRegularFilesAndMissingOnes) {
  TempFile f("a=b", 0600);
  CredentialsOrError dir = LoadCredentials(f.dir());
  EXPECT_FALSE(dir.ok());
  EXPECT_NE(dir.error.find("is not a regular file"), std::string::npos) << dir.error;

  const std::string fifo = f.dir() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  CredentialsOrError pipe = LoadCredentials(fifo);  // must not block waiting for a writer
  unlink(fifo.c_str());
  EXPECT_FALSE(pipe.ok());
  EXPECT_NE(pipe.error.find("is not a regular file"), std::string::npos) << pipe.error;

  CredentialsOrError missing = LoadCredentials(f.dir() + "/nope");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.error.find("cannot open credentials file " + f.dir() + "/nope"), std::string::npos)
      << missing.error;
  EXPECT_FALSE(LoadCredentials("").ok());
}

TEST(CredentialsFile, SymlinkToAPrivateFileIsFollowed) {
  TempFile f("a=b", 0600);
  const std::string link = f.dir() + "/link";
  ASSERT_EQ(symlink(f.path().c_str(), link.c_str()), 0);
  CredentialsOrError c = LoadCredentials(link);
  unlink(link.c_str());
  EXPECT_TRUE(c.ok()) << c.error;
}

TEST(CredentialsFile, ContentErrorsNameTheFile) {
  TempFile f("a=SECRET\na=SECRET\n", 0600);
  CredentialsOrError c = LoadCredentials(f.path());
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.error, "credentials file " + f.path() + " line 2: credential 'a' is defined twice");
}

TEST(CredentialsMode, Pure) {
  EXPECT_FALSE(CredentialsModeError(S_IFREG | 0600, "f").has_value());
  EXPECT_FALSE(CredentialsModeError(S_IFREG | 0400, "f").has_value());
  EXPECT_EQ(CredentialsModeError(S_IFREG | 0644, "f"),
            "credentials file f has mode 0644: group or others have access to the tokens in it; run chmod 600 f");
  EXPECT_TRUE(CredentialsModeError(S_IFDIR | 0700, "f").has_value());
  EXPECT_EQ(CredentialsModeError(S_IFREG | 0604, "a\nb")->find('\n'), std::string::npos);
}

TEST(CredentialsEnv, DefaultName) {
  CredentialsOrError c = CredentialsFromEnvValue("AAAA");
  ASSERT_TRUE(c.ok()) << c.error;
  EXPECT_EQ(*c.credentials, (Credentials{{"default", "AAAA"}}));
  EXPECT_FALSE(CredentialsFromEnvValue(nullptr).ok());
  EXPECT_NE(CredentialsFromEnvValue(nullptr).error.find("TWEETKEEPER_BEARER_TOKEN"), std::string::npos);
  EXPECT_FALSE(CredentialsFromEnvValue("").ok());
  CredentialsOrError bad = CredentialsFromEnvValue("SECRET\n");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.find("SECRET"), std::string::npos);

  setenv("TWEETKEEPER_BEARER_TOKEN", "FROMENV", 1);
  CredentialsOrError env = CredentialsFromEnv();
  EXPECT_EQ(std::getenv("TWEETKEEPER_BEARER_TOKEN"), nullptr) << "read once, then cleared from the environment";
  unsetenv("TWEETKEEPER_BEARER_TOKEN");
  ASSERT_TRUE(env.ok()) << env.error;
  EXPECT_EQ(env.credentials->at("default"), "FROMENV");
}

TEST(CredentialsFile, OwnedByTheWorkersUserOnly) {
  EXPECT_FALSE(CredentialsOwnerError(1000, 1000, "f").has_value());
  const auto error = CredentialsOwnerError(0, 1000, "/etc/tk/creds");
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("belongs to uid 0, not to this worker's (1000)"), std::string::npos) << *error;
  EXPECT_NE(error->find("chown"), std::string::npos) << *error;
}

}  // namespace
}  // namespace tweetkeeper::worker
