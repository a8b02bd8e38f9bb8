#pragma once
// tweetkeeper-export's output, without I/O (unit-tested): CSV fields and rows (RFC 4180), and
// twarc2's JSON lines: one line per page of at most 100 X posts, shaped as GET /2/tweets
// answers them ({"data": [...], "includes": {"users": [...]}}) with the "__twarc" object
// twarc2 appends, and our own provenance beside it under "__tweetkeeper" (page level: twarc2's
// flatten copies only __twarc onto each tweet, and twarc-csv drops a whole batch of tweets for a
// key it does not know).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tweetkeeper::exporter {

// One field: quoted when it holds a comma, a quote, CR or LF (quotes doubled); NULL is empty.
// Text (typed false) starting with =, +, -, @, a tab or a CR, a formula to a spreadsheet, gets a
// leading ' and is quoted (OWASP's advice on CSV injection); typed: a value the database typed (a
// number, a time), taken as it is.
std::string CsvField(const std::optional<std::string>& value, bool typed = false);
// Fields joined by commas, ending in CRLF (RFC 4180); typed[i] as CsvField's (missing: text).
std::string CsvRow(const std::vector<std::optional<std::string>>& fields, const std::vector<bool>& typed = {});

// The ages of --format curves: "1h,6h,24h,7d" (a whole number and a unit: s, m, h, d or w), each
// with its label (as written) and its length in seconds, in the order given. nullopt, with
// *error saying why, for anything else: an empty list, a bad or repeated age, more than 50.
struct Age {
  std::string label;
  std::int64_t seconds = 0;
};
std::optional<std::vector<Age>> ParseAges(std::string_view text, std::string* error);

// A post's counts as last observed (tweets' columns; NULL where the answer had none), and when.
struct Counts {
  std::optional<std::int64_t> retweet, reply, like, quote, bookmark, impression;
  std::string observed_at;  // ISO 8601
};

// A post's latest payload as stored: its id, the tweet object and its author's (JSON text; the
// author may be empty), and its latest counts (written as its public_metrics: what twarc2
// hydrate run now would give, not the counts of the answer that first carried that content).
struct StoredPost {
  std::int64_t id = 0;
  std::string payload;
  std::string author;
  std::optional<Counts> latest;
};

// What one page says of where it came from: the batch whose answer the payloads are, when it
// came (retrieved_at, ISO 8601 with +00:00 as twarc2 writes it; seen_at with its fraction).
struct PageSource {
  std::int64_t lease_id = 0;
  std::string retrieved_at;
  std::string seen_at;
};

// The page as one line of compact JSON, non-ASCII escaped as \uXXXX (Python's json.dumps, as
// twarc2 writes); users in includes once each, in order of first appearance. Each tweet's
// public_metrics are its latest counts (StoredPost::latest), the answer's own kept in
// __tweetkeeper.answer_public_metrics (by id) with __tweetkeeper.counts_observed_at; with
// answer_counts, the answer's stay where they were. `url` is the
// request that reads these ids with the fields tweetkeeper asks for; `version` is
// "tweetkeeper-export <version>". A stored text that is no JSON object is left out, its id
// in `unreadable` (the caller reports it); no line when nothing is left.
struct PageResult {
  std::string line;
  std::vector<std::int64_t> unreadable;  // ids whose stored payload could not be read: left out
};
PageResult Twarc2Page(const std::vector<StoredPost>& posts, const PageSource& source, const std::string& url,
                      const std::string& version, bool answer_counts = false);

}  // namespace tweetkeeper::exporter
