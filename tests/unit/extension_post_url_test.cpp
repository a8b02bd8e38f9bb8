// Post URLs of X, Bluesky and Mastodon: every accepted form, the refused ones and their messages.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "post_url.hpp"

namespace tweetkeeper {
namespace {

// An accepted URL and what it parses to. For a post `name` is its author and `id` its key; for a
// profile, the handle and the account id.
struct Accepted {
  std::string url;
  Network network;
  std::string host, name, id, canonical;
};

// Checks what a URL parsed to against its case.
void ExpectParsed(const Accepted& c, Network network, const std::string& host, const std::string& name,
                  const std::string& id, const std::string& canonical) {
  EXPECT_EQ(network, c.network);
  EXPECT_EQ(host, c.host);
  EXPECT_EQ(name, c.name);
  EXPECT_EQ(id, c.id);
  EXPECT_EQ(canonical, c.canonical);
}

// The message a parser refuses `url` with; nothing (and a failure) when it accepts it.
template <typename Parse>
std::optional<std::string> Refusal(Parse parse, const std::string& url) {
  try {
    parse(url);
  } catch (const PostUrlError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << url.substr(0, 100);
  return std::nullopt;
}

TEST(PostUrl, AcceptedForms) {
  const std::string x = "https://x.com/i/web/status/1460323737035677698";
  const std::string bsky = "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l";
  const std::vector<Accepted> cases = {
      {"https://x.com/jack/status/20", Network::kX, "", "jack", "20", "https://x.com/i/web/status/20"},
      {"https://x.com/XDevelopers/status/1460323737035677698", Network::kX, "", "XDevelopers", "1460323737035677698",
       x},
      {"https://twitter.com/XDevelopers/status/1460323737035677698?s=20&t=abc", Network::kX, "", "XDevelopers",
       "1460323737035677698", x},
      {"http://mobile.twitter.com/XDevelopers/statuses/1460323737035677698#frag", Network::kX, "", "XDevelopers",
       "1460323737035677698", x},
      {"HTTPS://WWW.X.COM/XDevelopers/status/1460323737035677698/", Network::kX, "", "XDevelopers",
       "1460323737035677698", x},
      {"https://x.com/i/web/status/1460323737035677698", Network::kX, "", "", "1460323737035677698", x},
      {"https://x.com/i/status/1460323737035677698", Network::kX, "", "", "1460323737035677698", x},
      {"https://x.com/XDevelopers/status/1460323737035677698/photo/1", Network::kX, "", "XDevelopers",
       "1460323737035677698", x},
      {"https://x.com/XDevelopers/status/1460323737035677698/analytics", Network::kX, "", "XDevelopers",
       "1460323737035677698", x},
      {"  https://x.com/jack/status/20\r\n", Network::kX, "", "jack", "20", "https://x.com/i/web/status/20"},
      {"https://bsky.app/profile/did:plc:z72i7hdynmk6r22z27h6tvur/post/3l6oveex3ii2l", Network::kBluesky, "",
       "did:plc:z72i7hdynmk6r22z27h6tvur", "3l6oveex3ii2l", bsky},
      {"https://bsky.app/profile/Alice.Bsky.Social/post/3l6oveex3ii2l?ref=x", Network::kBluesky, "",
       "alice.bsky.social", "3l6oveex3ii2l", "at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l"},
      {bsky, Network::kBluesky, "", "did:plc:z72i7hdynmk6r22z27h6tvur", "3l6oveex3ii2l", bsky},
      {"at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l", Network::kBluesky, "", "alice.bsky.social",
       "3l6oveex3ii2l", "at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l"},
      {"at://did:web:Example.COM/app.bsky.feed.post/3l6oveex3ii2l", Network::kBluesky, "", "did:web:example.com",
       "3l6oveex3ii2l", "at://did:web:example.com/app.bsky.feed.post/3l6oveex3ii2l"},
      {"https://mastodon.social/@Gargron/113310863287398209", Network::kMastodon, "mastodon.social", "Gargron",
       "113310863287398209", "https://mastodon.social/@Gargron/113310863287398209"},
      {"https://Mastodon.Social/users/Gargron/statuses/113310863287398209", Network::kMastodon, "mastodon.social",
       "Gargron", "113310863287398209", "https://mastodon.social/@Gargron/113310863287398209"},
      {"https://hachyderm.io/@alice@Example.ORG/109391337346297337/", Network::kMastodon, "hachyderm.io",
       "alice@example.org", "109391337346297337", "https://hachyderm.io/@alice@example.org/109391337346297337"},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.url);
    const PostRef ref = ParsePostUrl(c.url);
    ExpectParsed(c, ref.network, ref.host, ref.author, ref.key, ref.canonical);
  }
}

TEST(PostUrl, CreationTimeFromTheKey) {
  // X: a Snowflake id; 20 predates them and encodes nothing.
  // 2021-11-15 19:08:05.069 UTC, as X shows that post.
  EXPECT_EQ(ParsePostUrl("https://x.com/XDevelopers/status/1460323737035677698").created_ms, 1637003285069);
  EXPECT_FALSE(ParsePostUrl("https://x.com/jack/status/20").created_ms.has_value());
  // Mastodon: milliseconds << 16; a small id (another software's counter) encodes nothing.
  // 2024-10-15 10:02:41.392 UTC.
  EXPECT_EQ(ParsePostUrl("https://mastodon.social/@Gargron/113310863287398209").created_ms, 1728986561392);
  EXPECT_FALSE(ParsePostUrl("https://example.social/@bob/12345").created_ms.has_value());
  // Bluesky: the TID's microseconds; one from before 2022 is no estimate.
  // 2024-10-17 07:06:51.642 UTC.
  EXPECT_EQ(ParsePostUrl("at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l").created_ms, 1729148811642);
  EXPECT_FALSE(ParsePostUrl("at://alice.bsky.social/app.bsky.feed.post/2222222222222").created_ms.has_value());
}

TEST(PostUrl, NetworkNames) {
  EXPECT_STREQ(NetworkName(Network::kX), "x");
  EXPECT_STREQ(NetworkName(Network::kBluesky), "bluesky");
  EXPECT_STREQ(NetworkName(Network::kMastodon), "mastodon");
}

TEST(PostUrl, RefusedWithAReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it is empty"},
      {"   ", "it is empty"},
      {"x.com/jack/status/20", "expected an https:// or at:// URL"},
      {"ftp://x.com/jack/status/20", "expected an https:// or at:// URL"},
      {"https://x.com/jack/status/", "an X post URL is"},
      {"https://x.com/jack/status/abc", "an X post id is a positive number"},
      {"https://x.com/jack/status/0", "an X post id is a positive number"},
      {"https://x.com/jack/status/012", "an X post id is a positive number"},
      {"https://x.com/jack/status/9223372036854775808", "an X post id is a positive number"},
      {"https://x.com/jack/status/20/replies", "an X post URL is"},
      {"https://x.com/jack", "an X post URL is"},
      {"https://user@x.com/jack/status/20", "the host is not a domain name"},
      {"https://x.com:443/jack/status/20", "the host is not a domain name"},
      {"https://localhost/@bob/1", "the host is not a domain name"},
      {"https://bsky.app/profile/alice.bsky.social", "a Bluesky post URL is"},
      {"https://bsky.app/profile/alice.bsky.social/post/3l6oveex3ii2", "a Bluesky post's key is a TID"},
      {"https://bsky.app/profile/alice.bsky.social/post/3L6OVEEX3II2L", "a Bluesky post's key is a TID"},
      {"https://bsky.app/profile/alice.bsky.social/post/zl6oveex3ii2l", "a Bluesky post's key is a TID"},
      {"https://bsky.app/profile/did:plc:abc/post/3l6oveex3ii2l", "a did:plc is"},
      {"https://bsky.app/profile/did:key:z6Mk/post/3l6oveex3ii2l", "did:plc or did:web"},
      {"https://bsky.app/profile/alice/post/3l6oveex3ii2l", "neither a handle"},
      {"at://alice.bsky.social/app.bsky.feed.like/3l6oveex3ii2l", "an at:// post URI is"},
      // A repost is an app.bsky.feed.repost record, not a post (docs/workers.md, reposts).
      {"at://did:plc:ec4f2dbb3bb4aad555acdafb/app.bsky.feed.repost/3l6cmz4wju22b", "an at:// post URI is"},
      {"at://alice.bsky.social/app.bsky.feed.post/3l6oveex3ii2l/x", "an at:// post URI is"},
      {"https://mastodon.social/@Gargron/abc", "a Mastodon status id is a positive number"},
      {"https://mastodon.social/@Gar gron/1", "a Mastodon user is"},
      {"https://mastodon.social/@alice@nowhere/1", "a Mastodon user is"},
      {"https://mastodon.social/about", "no known post URL form"},
      {"https://example.org/", "no known post URL form"},
  };
  for (const auto& [url, why] : cases) {
    if (const auto msg = Refusal(ParsePostUrl, url)) {
      EXPECT_NE(msg->find(why), std::string::npos) << url << " -> " << *msg;
      if (url.find_first_not_of(' ') != std::string::npos) {
        EXPECT_NE(msg->find(url.substr(0, 20)), std::string::npos) << "the message quotes the value: " << *msg;
      }
    }
  }
}

TEST(PostUrl, MessagesQuoteSafely) {
  if (const auto msg = Refusal(ParsePostUrl, "https://x.com/jack/status/1\x01\"" + std::string(500, 'a'))) {
    EXPECT_NE(msg->find("\\x01\\\""), std::string::npos) << *msg;
    EXPECT_NE(msg->find("...\""), std::string::npos) << *msg;
    EXPECT_LT(msg->size(), 600u);
  }
  for (const std::string& bad : {std::string("https://x.com/\xff/status/1"), std::string("\xc0\xaf"),
                                 std::string("https://x.com/\xed\xa0\x80"), std::string("\xe2\x82")}) {
    EXPECT_EQ(Refusal(ParsePostUrl, bad), "not a post URL: the value is not valid UTF-8");
  }
  EXPECT_THROW(ParsePostUrl("https://mastodon.social/@b\xc3\xa9/1"), PostUrlError);  // valid UTF-8, not a user
}

TEST(PostUrl, AtMost2048Bytes) {
  // The longest URL accepted, padded with a query string (which says nothing about the post).
  std::string url = "https://x.com/jack/status/20?";
  url.resize(kMaxPostUrlBytes, 'a');
  EXPECT_EQ(ParsePostUrl(url).key, "20");
  for (const std::size_t size : {kMaxPostUrlBytes + 1, std::size_t{10} << 20}) {
    url.resize(size, 'a');
    if (const auto what = Refusal(ParsePostUrl, url)) {
      EXPECT_EQ(what->substr(what->find(": it is")), ": it is longer than 2048 bytes, the most a post URL has");
      EXPECT_LT(what->size(), 400u) << "the message quotes a prefix only";
    }
  }
}

TEST(ProfileUrl, AcceptedForms) {
  const std::string did = "did:plc:z72i7hdynmk6r22z27h6tvur";
  const std::vector<Accepted> cases = {
      {"https://x.com/XDevelopers", Network::kX, "", "xdevelopers", "", "https://x.com/xdevelopers"},
      {"x.com/XDevelopers", Network::kX, "", "xdevelopers", "", "https://x.com/xdevelopers"},
      {"  https://twitter.com/jack/?s=20\n", Network::kX, "", "jack", "", "https://x.com/jack"},
      {"https://mobile.x.com/jack/with_replies", Network::kX, "", "jack", "", "https://x.com/jack"},
      {"https://x.com/jack/media", Network::kX, "", "jack", "", "https://x.com/jack"},
      {"https://x.com/i/user/12", Network::kX, "", "", "12", "https://x.com/i/user/12"},
      {"https://bsky.app/profile/Alice.Bsky.Social", Network::kBluesky, "", "alice.bsky.social", "",
       "https://bsky.app/profile/alice.bsky.social"},
      {"bsky.app/profile/" + did + "/", Network::kBluesky, "", "", did, "https://bsky.app/profile/" + did},
      {"https://bsky.app/profile/" + did + "/follows", Network::kBluesky, "", "", did, "https://bsky.app/profile/" + did},
      {"https://bsky.app/profile/did:web:Example.COM", Network::kBluesky, "", "", "did:web:example.com",
       "https://bsky.app/profile/did:web:example.com"},
      {"at://" + did, Network::kBluesky, "", "", did, "https://bsky.app/profile/" + did},
      {"at://alice.bsky.social", Network::kBluesky, "", "alice.bsky.social", "",
       "https://bsky.app/profile/alice.bsky.social"},
      // Mastodon's user names are case-insensitive: kept in lower case.
      {"https://mastodon.social/@Gargron", Network::kMastodon, "mastodon.social", "gargron", "",
       "https://mastodon.social/@gargron"},
      {"https://Mastodon.Social/users/Gargron", Network::kMastodon, "mastodon.social", "gargron", "",
       "https://mastodon.social/@gargron"},
      {"mastodon.social/@Gargron/with_replies", Network::kMastodon, "mastodon.social", "gargron", "",
       "https://mastodon.social/@gargron"},
      {"https://x.com/jack?ref=https://t.co/abc", Network::kX, "", "jack", "", "https://x.com/jack"},
      // A remote account seen on another server lives on its own.
      {"https://hachyderm.io/@alice@Example.ORG", Network::kMastodon, "example.org", "alice", "",
       "https://example.org/@alice"},
      {"@Gargron@mastodon.social", Network::kMastodon, "mastodon.social", "gargron", "",
       "https://mastodon.social/@gargron"},
      {"Gargron@Mastodon.Social", Network::kMastodon, "mastodon.social", "gargron", "",
       "https://mastodon.social/@gargron"},
  };
  for (const Accepted& c : cases) {
    SCOPED_TRACE(c.url);
    const ProfileRef ref = ParseProfileUrl(c.url);
    ExpectParsed(c, ref.network, ref.host, ref.handle, ref.account_id, ref.canonical);
    // The canonical form reads back as itself.
    EXPECT_EQ(ParseProfileUrl(ref.canonical).canonical, ref.canonical);
  }
}

TEST(ProfileUrl, RefusedWithWhy) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "it is empty"},
      {"https://x.com/home", "an X profile URL is https://x.com/<user>"},
      {"https://x.com/jack/status/20", "an X profile URL is https://x.com/<user>"},
      {"https://x.com/a_name_of_sixteen", "an X profile URL is https://x.com/<user>"},
      {"https://x.com/i/user/0", "an X user id is a positive number"},
      {"https://bsky.app/profile/alice.bsky.social/post/3l6oveex3ii2l", "a Bluesky profile URL is"},
      {"https://bsky.app/profile/did:plc:short", "a did:plc is"},
      {"at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l", "an at:// account URI is"},
      {"https://mastodon.social/@Gargron/113310863287398209", "no known profile URL form"},
      {"https://mastodon.social/", "no known profile URL form"},
      {"@b\xc3\xa9@mastodon.social", "a Mastodon user is"},
      {"@alice@", "the server is not a domain name"},
      {"@alice@b@c", "a Mastodon address is"},
      {"@alice@localhost", "the server is not a domain name"},
      {"https://user:pw@x.com/jack", "the host is not a domain name"},
      {"ftp://x.com/jack", "expected an https:// URL"},
      {"@jack", "the host is not a domain name"},
      // The address or /@ form on hosts that are no Mastodon server: their canonical form would
      // not read back (x.com/@bob), or the account is another network's.
      {"@bob@x.com", "is no Mastodon server"},
      {"bob@bsky.app", "is no Mastodon server"},
      {"https://a.social/@bob@twitter.com", "is no Mastodon server"},
      {"https://www.youtube.com/@channel", "is no Mastodon server"},
      {"https://bsky.app/profile/alice.bsky.social/feed", "a Bluesky profile URL is"},
      {"https://x.com/jack/posts", "an X profile URL is"},
      {"@..@mastodon.social", "a Mastodon user is"},
  };
  for (const auto& [url, why] : cases) {
    SCOPED_TRACE(url);
    if (const auto what = Refusal(ParseProfileUrl, url)) {
      EXPECT_EQ(what->rfind("not a profile URL", 0), 0u) << *what;
      EXPECT_NE(what->find(why), std::string::npos) << *what;
    }
  }
  std::string url = "https://x.com/jack?";
  url.resize(kMaxPostUrlBytes + 1, 'a');
  EXPECT_THROW(ParseProfileUrl(url), PostUrlError);
}

}  // namespace
}  // namespace tweetkeeper
