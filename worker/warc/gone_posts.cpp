#include "warc/gone_posts.hpp"

namespace tweetkeeper::worker::warc {

GoneLoad LoadGonePosts(pqxx::connection& conn, bool force, PurgeSet* set) {
  GoneLoad load;
  pqxx::read_transaction tx(conn);
  // (The setting is the extension's; a session that has not loaded it reads it only when set.)
  load.keep = tx.exec1("SELECT coalesce(current_setting('tweetkeeper.deleted_payloads', true), 'erase') = 'keep'")[0]
                  .as<bool>();
  if (load.keep && !force) return load;
  // X posts by their id; Bluesky's by author and record key, Mastodon's by server and status id
  // (post_refs: the names behind the negative ids).
  const pqxx::result rows = tx.exec(
      "SELECT a.post_id, a.network, coalesce(a.reason, ''), coalesce(a.detail, ''), r.host, r.author, r.post_key "
      "FROM tweetkeeper.post_availability a LEFT JOIN tweetkeeper.post_refs r ON r.tweet_id = a.post_id "
      "WHERE a.gone_since IS NOT NULL");
  for (const auto& row : rows) {
    GonePost post{row[0].as<std::int64_t>(), row[2].as<std::string>(), row[3].as<std::string>()};
    const std::string network = row[1].as<std::string>();
    if (network == "x" && post.post_id > 0) {
      set->AddX(std::to_string(post.post_id), std::move(post));
    } else if (network == "bluesky" && !row[5].is_null()) {
      set->AddBluesky(row[5].as<std::string>(), row[6].as<std::string>(), std::move(post));
    } else if (network == "mastodon" && !row[4].is_null()) {
      set->AddMastodon(row[4].as<std::string>(), row[6].as<std::string>(), std::move(post));
    } else {
      continue;
    }
    ++load.posts;
  }
  return load;
}

}  // namespace tweetkeeper::worker::warc
