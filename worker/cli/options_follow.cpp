// --follow's options and their rules: ParseCommandLine's part for the follower.
#include "cli/option_groups.hpp"

namespace tweetkeeper::worker::cli {

void AddFollowOptions(CLI::App& app, Options& o) {
  app.add_flag("--follow", o.follow,
               "Follow accounts instead of refreshing posts: read the new posts of the accounts followed with "
               "tweetkeeper.follow() on --provider's network (x-v2, bluesky, mastodon) and schedule each one");
  AddBounded(app, "--follow-max-accounts", o.follow_max_accounts, "--follow: most accounts this follower holds at once",
             1, 10000);
  AddBounded(app, "--follow-min-poll", o.follow_min_poll_s, "--follow: no account is read more often than this", 0.1,
             86400.0)
      ->type_name("SECONDS");
  AddBounded(app, "--follow-max-poll", o.follow_max_poll_s,
             "--follow: no account is read less often than this, as far as the rate-limit windows allow", 1.0, 86400.0)
      ->type_name("SECONDS");
  AddBounded(app, "--follow-lease", o.follow_lease_s,
             "--follow: the lease on the accounts held, renewed every third of it; a killed follower's "
             "accounts go to another follower after this long",
             1, 3600)
      ->type_name("SECONDS");
  app.add_option("--jetstream-url", o.jetstream_url,
                 "--follow --provider bluesky: the Jetstream the follower subscribes to (ws:// or wss://host[:port]); "
                 "\"none\": read each account's feed (getAuthorFeed) as often as the AppView's window allows")
      ->capture_default_str()
      ->type_name("URL");
  app.add_flag("--stream-counts", o.stream_counts,
               "--provider bluesky: count the likes, reposts, replies and quotes of tracked Bluesky posts from "
               "Jetstream (--jetstream-url) as they happen, instead of refreshing; needs "
               "tweetkeeper.bluesky_stream_counts on. One reader per database: others wait for its lease");
  AddBounded(app, "--stream-flush", o.stream_flush_s,
             "--stream-counts: how often the counts that moved, their history and the stream's position are "
             "stored (one transaction); a post's history gets a point at most this often",
             0.1, 60.0)
      ->type_name("SECONDS");
  AddBounded(app, "--stream-ring", o.stream_ring_s,
             "--stream-counts: how long every event is kept in memory to place a read in time (a read older "
             "than this when the reader takes it in is read again, or not compared)",
             10, 3600)
      ->type_name("SECONDS");
  AddBounded(app, "--stream-warm", o.stream_warm_s,
             "--stream-counts: read the stream again from this long before where counting starts (the stored "
             "position; with none, or after a gap, now), only to know the records made then (a post first "
             "read just before a restart is counted exactly, unlikes included); 0: not",
             0, 3600)
      ->type_name("SECONDS");
  app.add_option("--jetstream-dictionary", o.jetstream_dictionary,
                 "--follow or --stream-counts (--provider bluesky): read Jetstream's stream zstd-compressed (compress=true) with this "
                 "dictionary, the file pkg/models/zstd_dictionary of Jetstream's repository "
                 "(github.com/bluesky-social/jetstream): about half the bytes (Jetstream's README: ~56% smaller) "
                 "for the CPU of decoding each event; without it the stream is read uncompressed")
      ->type_name("FILE");
  AddBounded(app, "--follow-share", o.follow_share,
             "--follow: the share of each rate-limit window (a Mastodon server's, the AppView's, an X "
             "credential's timeline window) this follower spends; the rest is the refreshing workers'",
             0.01, 1.0);
}

std::optional<std::string> CheckFollow(const Parsing& p) {
  const Options& o = p.o;
  if (o.follow && o.provider == "x-v1.1")
    return "tweetkeeper-worker: --follow reads X's timelines through API v2: use --provider x-v2";
  if (o.jetstream_url != "none" && o.jetstream_url.rfind("ws://", 0) != 0 && o.jetstream_url.rfind("wss://", 0) != 0)
    return UsageLine("--jetstream-url '" + o.jetstream_url + "' is not ws:// or wss://host[:port], nor none", p.argc,
                     p.argv);
  if (o.stream_counts && (o.provider != "bluesky" || o.follow || o.jetstream_url == "none"))
    return "tweetkeeper-worker: --stream-counts reads Bluesky's Jetstream: use --provider bluesky, a --jetstream-url, "
           "and no --follow";
  if (!o.jetstream_dictionary.empty() && o.jetstream_url == "none")
    return "tweetkeeper-worker: --jetstream-dictionary needs a Jetstream: not with --jetstream-url none";
  if (HasControlCharacter(o.jetstream_dictionary))
    return "tweetkeeper-worker: --jetstream-dictionary must not contain control characters";
  if (o.stream_warm_s > o.stream_ring_s)
    return "tweetkeeper-worker: --stream-warm is more than --stream-ring (the ring keeps what it reads)";
  if (o.follow && o.follow_min_poll_s > o.follow_max_poll_s)
    return "tweetkeeper-worker: --follow-min-poll is more than --follow-max-poll";
  return std::nullopt;
}

}  // namespace tweetkeeper::worker::cli
