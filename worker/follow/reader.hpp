#pragma once
// A network as the follower sees it: how its accounts are looked up and read, which budget a read
// spends and what its answers say of that budget's window, which token a request carries, and
// what the network bills. Everything that differs between networks is here, in its readers
// (readers.cpp, with the parsers of timeline.* and bluesky_follow.*): the follower itself names no
// network, and a fourth network is one more Reader.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batch/batch_result.hpp"
#include "follow/follow_db.hpp"
#include "follow/timeline.hpp"
#include "http/http_client.hpp"

namespace tweetkeeper::worker::follow {

struct FollowerOptions;

// What one read of an account found.
struct ReadOutcome {
  bool ok = false;
  std::string reason;
  std::vector<FoundPost> posts;
  std::string newest_id;
  std::int64_t checked_until_ms = 0;
  bool more = false;  // a full page: read again at once
  std::optional<Account> account;  // the account is gone or hidden
  std::vector<std::vector<std::string>> returned_pages;  // billed networks: every post each page returned (each one billed)
};

using Fetch = std::function<HttpResponse(const std::string& url, Reach reach)>;

class Reader {
 public:
  virtual ~Reader() = default;
  // The network's name as the database's follows name it (claim_follows()).
  virtual std::string Network() const = 0;
  // ... and as a log line names it.
  virtual std::string DisplayName() const { return Network(); }
  // The credential whose token reads (the leases name it; record_follow_read() takes no other);
  // "" where the network needs none.
  virtual std::string Credential() const { return ""; }
  // The token a request about this account carries ("" none).
  virtual std::string TokenFor(const Followed& f) const = 0;
  // Whether every post a read returns is billed (each read asks follow_read_allowed() first and
  // each page's returned ids go with the store, record_follow_read() once per page).
  virtual bool Billed() const { return false; }
  // A refusal of the credential as a whole ("usage-capped", "rejected"), recorded as a refresh's is;
  // nullopt for any other answer.
  virtual std::optional<std::string> CredentialRefusal(const HttpResponse&) const { return std::nullopt; }
  // Whether the network has a stream of its posts (Jetstream) the follower may subscribe to.
  virtual bool Streams() const { return false; }
  // The budget an account's reads spend (a server, a credential's window, ...), its default
  // limit per window and the window, and what an answer says of that window.
  virtual std::string Group(const Followed& f) const = 0;
  virtual double DefaultLimit() const = 0;
  virtual double WindowSeconds() const = 0;
  virtual RateLimit Rate(const HttpResponse& r) const = 0;
  virtual Account Lookup(const Followed& f, const Fetch& fetch) const = 0;
  // Several accounts looked up at once, when the network has a request for that (at most
  // LookupBatch() of them): one answer for each, in order.
  virtual std::size_t LookupBatch() const { return 1; }
  virtual std::vector<Account> LookupAll(const std::vector<Followed>& fs, const Fetch& fetch) const {
    std::vector<Account> out;
    for (const Followed& f : fs) out.push_back(Lookup(f, fetch));
    return out;
  }
  virtual ReadOutcome Read(const Followed& f, const Fetch& fetch) const = 0;
};

// The reader of --provider's network.
std::unique_ptr<Reader> MakeReader(const FollowerOptions& options);

}  // namespace tweetkeeper::worker::follow
