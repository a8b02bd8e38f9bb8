// A post's URL, as people who track posts paste it, read into the network and the key that names
// the post there: X (x.com, twitter.com), Bluesky (bsky.app and at:// URIs) and Mastodon (any
// other host). No PostgreSQL headers here: the extension's parse_post_url() and
// tweetkeeper-import read URLs with this one parser, and it is unit-tested and fuzzed alone.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tweetkeeper {

enum class Network { kX, kBluesky, kMastodon };

// "x", "bluesky", "mastodon": the names SQL and the worker's --provider use.
const char* NetworkName(Network network);

struct PostRef {
  Network network = Network::kX;
  // Mastodon: the server that holds the status (lower case; ids are per server). Empty for X and
  // Bluesky, whose posts one endpoint answers for.
  std::string host;
  // Who posted, as the URL says: X: the user name (empty for /i/web/status/<id>); Bluesky: a DID,
  // or a handle in lower case (resolved to a DID before the post is asked for); Mastodon: the
  // user name, with its home domain for a remote account (alice@example.org).
  std::string author;
  // The post's key on its network: X: the id in decimal; Bluesky: the record key (a TID);
  // Mastodon: the status id on `host`.
  std::string key;
  // When the post was made, from the key where it encodes one: X's Snowflake ids, Mastodon's
  // ids (milliseconds << 16) and Bluesky's TIDs (microseconds << 10; an estimate only: clients
  // choose them). Empty when the key encodes nothing plausible.
  std::optional<int64_t> created_ms;
  // One spelling per post and form: https://x.com/i/web/status/<id>,
  // at://<author>/app.bsky.feed.post/<rkey>, https://<host>/@<author>/<id>.
  std::string canonical;
};

class PostUrlError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The longest post URL read, in bytes (real ones have a few hundred at most; 2,048 is what
// browsers and servers commonly accept). A caller may pass only the first kMaxPostUrlBytes + 1
// bytes of a longer value: the error is the same.
constexpr std::size_t kMaxPostUrlBytes = 2048;

// Reads a post URL (surrounding blanks ignored). Throws PostUrlError with a message that quotes
// the value (cut to 200 characters) and says what is wrong with it.
PostRef ParsePostUrl(std::string_view url);

// An account as people paste it to follow it: its network, where it lives, and its name there.
struct ProfileRef {
  Network network = Network::kX;
  // Mastodon: the account's own server (lower case), the one its statuses are read from: the
  // URL's host, or the domain of a remote account's address (https://a.social/@bob@b.social is
  // bob of b.social). Empty for X and Bluesky.
  std::string host;
  // The account's name as the URL gives it: X: the user name in lower case (X's are
  // case-insensitive); Bluesky: the handle in lower case; Mastodon: the user name on `host`.
  // Empty when the URL names the account by its id only (X's /i/user/<id>, a Bluesky DID).
  std::string handle;
  // The network's stable id of the account, when the URL names it: X's /i/user/<id>, a Bluesky
  // DID. Empty otherwise (a follower resolves the handle once). One of the two is never empty.
  std::string account_id;
  // One spelling per account and form: https://x.com/<user>, https://x.com/i/user/<id>,
  // https://bsky.app/profile/<handle or DID>, https://<host>/@<user>.
  std::string canonical;
};

// Reads a profile URL (surrounding blanks ignored): https://x.com/<user> (twitter.com too, and
// the profile's own pages: /media, /with_replies, ...), https://x.com/i/user/<id>,
// https://bsky.app/profile/<handle or DID>, at://<DID or handle>, https://<server>/@<user>,
// https://<server>/users/<user>, and the address forms @user@server and user@server (Mastodon).
// The scheme may be left out (x.com/<user>). Throws PostUrlError ("not a profile URL ...").
ProfileRef ParseProfileUrl(std::string_view url);

}  // namespace tweetkeeper
