#pragma once
// The API seam: how one batch of ids becomes a request URL, and how the answer becomes a
// BatchResult. Implementations are pure (no I/O) so they can be tested on recorded bodies.
// X API v2 (GET /2/tweets) lives in x_v2.hpp, v1.1 (statuses/lookup) in x_v1_1.hpp, Bluesky's
// AppView (app.bsky.feed.getPosts) in bluesky.hpp, Mastodon's servers in mastodon.hpp (these two
// are KeyedProviders); factory.hpp picks one by --provider. Another API is one more class
// implementing this interface.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "http/http_response.hpp"
#include "batch/batch_result.hpp"

namespace tweetkeeper::worker {

// What names a batch's posts beyond their ids, as claim_posts() hands them out: each id's key on
// its network, in the ids' order (Bluesky: at:// URIs; Mastodon: status ids), and the endpoint.
// Empty for X, whose ids are the keys.
struct PostKeys {
  std::vector<std::string> keys;
  std::string endpoint;
  // tweetkeeper.payloads is on (the claim says): ask for a payload's fields, and hand each
  // post's new object to complete_batch (content_hash.hpp: AttachPayload).
  bool payloads = false;
  // The content hash of each post's last kept payload, as the claim gave them (null: none known,
  // every payload is handed on), and whether a post keeps its first payload only
  // (tweetkeeper.payloads = first). Points into the Lease, which outlives the request.
  const std::unordered_map<std::int64_t, std::string>* kept = nullptr;
  bool first_only = false;
};

// What a second request says of a failed answer (Provider::Diagnose), in release_batch's words:
// `refusal` (e.g. single-status) and the reason.
struct Diagnosis {
  std::string refusal;
  std::string reason;
};

// What resolving one name said (Provider::ParseResolution): the key it stands for (Bluesky: the
// handle's DID), or why there is none (`problem`), or, with `failure` set, that nothing was
// learnt (transport, 5xx, 429, garbage: the batch goes back; failure.rate_limit the window).
struct Resolution {
  std::string key;
  std::string problem;
  BatchResult failure;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string Name() const = 0;
  // Whether its posts are claimed with claim_posts() (keys and an endpoint per batch) rather
  // than claim_batch(), and how many one request takes.
  virtual bool Keyed() const { return false; }
  virtual int MaxBatch() const { return 100; }
  // Whether requests carry a bearer token (Bluesky's public AppView takes none).
  virtual bool NeedsToken() const { return true; }
  // Whether it hands on payloads (tweetkeeper.payloads; PostKeys.payloads).
  virtual bool KeepsPayloads() const { return true; }
  virtual std::string RequestUrl(const std::vector<std::int64_t>& ids) const = 0;
  // `ids` are the ids requested; anything else in the answer is ignored.
  virtual BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids) const = 0;
  // The same with the batch's keys; a keyed provider overrides these.
  virtual std::string RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys&) const {
    return RequestUrl(ids);
  }
  virtual BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                                  const PostKeys&) const {
    return ParseAnswer(response, ids);
  }
  // An API that refuses a whole request (400) for one key it calls malformed (Bluesky's getPosts)
  // would refuse the batch again on every claim: SplitsRefusals() has the runner take the key
  // out (provider/refusals.hpp) and mark it 'invalid-key'; RefusedKey() is its position in the
  // request when the answer names it ("uris/3 must be a valid at-uri"): then one more request
  // sends the rest, otherwise the batch is halved until the key is alone.
  virtual bool SplitsRefusals() const { return false; }
  virtual std::optional<std::size_t> RefusedKey(const HttpResponse&) const { return std::nullopt; }

  // The token a batch's requests carry, by its name in the credentials file, where the endpoint
  // picks it (Mastodon: the server's host; a server without one is asked with none). nullopt:
  // the claim's credential's (X), or the file's only token.
  virtual std::optional<std::string> EndpointToken(const std::string& /*endpoint*/) const { return std::nullopt; }

  // Whether an endpoint's requests may connect to public addresses only (HttpClient's
  // Reach::kPublicOnly): true where its host was taken from a post's URL, which anyone who can
  // schedule a post picks (Mastodon, unless mapped with --instance or --allow-private-hosts is
  // given). An --api-url is the operator's: false.
  virtual bool PublicAddressesOnly(const std::string& /*endpoint*/) const { return false; }

  // A failed answer that one more request can explain (Mastodon: a 404 to a batch may be a server
  // older than 4.3, which its /api/v2/instance tells): the URL to ask, or empty; and what that
  // answer says, if anything.
  virtual std::string DiagnosisUrl(const PostKeys& /*keys*/, std::size_t /*ids*/,
                                   const HttpResponse& /*failed*/) const {
    return "";
  }
  virtual std::optional<Diagnosis> Diagnose(const HttpResponse& /*answer*/) const { return std::nullopt; }

  // Batches of names to resolve before their posts can be read (Bluesky: posts known by handle,
  // endpoint bluesky-handle): whether an endpoint's batches are such, a batch's names (each
  // once), the request for one, and what its answer says (complete_handles() takes the result).
  virtual bool ResolvesNames(const std::string& /*endpoint*/) const { return false; }
  virtual std::vector<std::string> NamesToResolve(const PostKeys& /*keys*/) const { return {}; }
  virtual std::string ResolveUrl(const std::string& /*name*/) const { return ""; }
  virtual Resolution ParseResolution(const HttpResponse& /*response*/) const { return {}; }
};

// A network whose posts are named by keys (Bluesky's at:// URIs, Mastodon's status ids), claimed
// with claim_posts() and read without a token: only the keyed requests and answers mean anything.
class KeyedProvider : public Provider {
 public:
  bool Keyed() const final { return true; }
  bool NeedsToken() const override { return false; }
  std::string RequestUrl(const std::vector<std::int64_t>& /*ids*/) const final {
    throw std::logic_error(Name() + " requests are built from the claim's keys, not ids");
  }
  BatchResult ParseAnswer(const HttpResponse& /*response*/, const std::vector<std::int64_t>& /*ids*/) const final {
    throw std::logic_error(Name() + " answers are matched to the claim's keys, not ids");
  }
  std::string RequestUrl(const std::vector<std::int64_t>& ids, const PostKeys& keys) const override = 0;
  BatchResult ParseAnswer(const HttpResponse& response, const std::vector<std::int64_t>& ids,
                          const PostKeys& keys) const override = 0;
};

}  // namespace tweetkeeper::worker
