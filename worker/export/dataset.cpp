#include "export/dataset.hpp"

#include <openssl/evp.h>
#include <rapidjson/document.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "json/bounded.hpp"

namespace tweetkeeper::exporter {

std::optional<std::string> Sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return std::nullopt;
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0 && EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(in.gcount())) != 1)
      return std::nullopt;
  }
  if (in.bad()) return std::nullopt;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) return std::nullopt;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) (out += kHex[md[i] >> 4]) += kHex[md[i] & 15];
  return out;
}

std::string SumsText(const std::vector<std::pair<std::string, std::string>>& sums) {
  std::string text;
  for (const auto& [name, hex] : sums) text += hex + "  " + name + "\n";
  return text;
}

std::optional<std::map<std::string, std::string>> ParseSums(std::string_view text, std::string* error) {
  std::map<std::string, std::string> sums;
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const auto bad = [&](const std::string& why) {
      *error = "SHA256SUMS:" + std::to_string(number) + ": " + why;
      return std::nullopt;
    };
    if (line.size() < 67 || line.substr(0, 64).find_first_not_of("0123456789abcdef") != std::string_view::npos ||
        line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
      return bad("not \"<64 hex digits>  <file>\"");
    const std::string name(line.substr(66));
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      return bad("a file outside the dataset's directory: " + name);
    if (!sums.emplace(name, std::string(line.substr(0, 64))).second) return bad(name + " is listed twice");
  }
  return sums;
}

namespace {

using Value = rapidjson::Value;

std::string Text(const Value& v) {
  if (v.IsNull()) return "";
  if (v.IsString()) return v.GetString();
  if (v.IsBool()) return v.GetBool() ? "yes" : "no";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  if (v.IsUint64()) return std::to_string(v.GetUint64());
  if (v.IsNumber()) {
    char b[64];
    std::snprintf(b, sizeof b, "%g", v.GetDouble());
    return b;
  }
  return "";
}

std::string Get(const Value& object, const char* key) {
  if (!object.IsObject()) return "";
  const auto m = object.FindMember(key);
  return m == object.MemberEnd() ? "" : Text(m->value);
}

const Value& Member(const Value& object, const char* key) {
  static const Value null;
  if (!object.IsObject()) return null;
  const auto m = object.FindMember(key);
  return m == object.MemberEnd() ? null : m->value;
}

// An array of objects as a Markdown table of these keys (headings as given); "(none)" when empty.
std::string Table(const Value& rows, const std::vector<std::pair<const char*, const char*>>& columns) {
  if (!rows.IsArray() || rows.Empty()) return "(none)\n";
  std::string out = "|", rule = "|";
  for (const auto& [key, heading] : columns) {
    out += " " + std::string(heading) + " |";
    rule += " --- |";
  }
  out += "\n" + rule + "\n";
  for (const Value& row : rows.GetArray()) {
    out += "|";
    for (const auto& [key, heading] : columns) {
      std::string cell = Get(row, key);
      for (std::size_t i = 0; (i = cell.find('|', i)) != std::string::npos; i += 2) cell.replace(i, 1, "\\|");
      out += " " + cell + " |";
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::optional<std::string> DatasheetMarkdown(const std::string& json, std::string* error) {
  rapidjson::Document d;
  if (const std::string e = json::Parse(d, json); !e.empty() || !d.IsObject()) {
    *error = e.empty() ? "datasheet.json is no JSON object" : "datasheet.json: " + e;
    return std::nullopt;
  }
  const Value& comp = Member(d, "composition");
  const Value& proc = Member(d, "collection_process");
  const Value& surv = Member(d, "survival");
  const Value& sel = Member(d, "selection");
  const Value& terms = Member(d, "terms");
  std::string md;
  md += "# Datasheet: " + Get(d, "name") + "\n\n";
  md += "Exported " + Get(d, "exported_at") + " by " + Get(d, "exported_by") +
        ". The sections follow Gebru et al., *Datasheets for Datasets* (CACM 64(12), 2021). The numbers are "
        "also in datasheet.json; SHA256SUMS lists every file's checksum (`sha256sum -c SHA256SUMS`).\n\n";
  md += "## Motivation\n\nFor the publisher to fill in: for what purpose the dataset was created, by whom, and "
        "who funded it.\n\n";
  md += "## Composition\n\n";
  md += "Each instance is a reference to a public post, not its content: " + Get(comp, "posts") + " posts (" +
        Get(Member(comp, "by_network"), "x") + " X post ids in x_ids.txt, " +
        Get(Member(comp, "by_network"), "bluesky") + " Bluesky at:// URIs in bluesky_uris.txt, " +
        Get(Member(comp, "by_network"), "mastodon") + " Mastodon status URLs in mastodon_urls.txt), one per line. " +
        "history.csv holds their " + Get(comp, "observations") +
        " observations (post, time, counts: every stored one, and each post's last read when it changed "
        "nothing); curves.csv their counts at the ages " + Get(d, "curves_ages") +
        " (tweetkeeper-export --format curves). No text, author, media or token.\n\n";
  md += "Selection: collection " + (Get(sel, "collection").empty() ? "(any)" : Get(sel, "collection")) + ", network " +
        (Get(sel, "network").empty() ? "(all)" : Get(sel, "network")) + ", created since " +
        (Get(sel, "since").empty() ? "(any time)" : Get(sel, "since")) + ", until " +
        (Get(sel, "until").empty() ? "(any time)" : Get(sel, "until")) +
        (Get(sel, "ids_file") == "yes" ? ", the posts of an --ids file" : "") + ".\n\n";
  md += "Collections the posts are in:\n\n" +
        Table(Member(d, "collections"), {{"name", "collection"}, {"kind", "kind"}, {"created_at", "made"},
                                         {"posts", "posts in this dataset"}}) + "\n";
  md += "## Collection process\n\n";
  md += "Observed by tweetkeeper from " + Get(proc, "first_observation") + " to " + Get(proc, "last_observation") +
        " (posts created " + Get(proc, "posts_created_from") + " to " + Get(proc, "posts_created_to") +
        "). Each post was read again on a schedule: refresh policy " + Get(proc, "refresh_policy") +
        " (tweetkeeper.refresh_policy).\n\nThe age policy (a post younger than max_age is read every delay):\n\n" +
        Table(Member(proc, "age_policy"), {{"max_age", "max_age"}, {"delay", "delay"}}) +
        "\nThe adaptive policy's settings:\n\n" +
        Table(Member(proc, "adaptive"), {{"name", "setting"}, {"setting", "value"}}) +
        "\nPosts with a refresh policy of their own:\n\n" +
        Table(Member(proc, "own_policy"), {{"policy", "policy"}, {"posts", "posts"}}) + "\n";
  md += "## Preprocessing, cleaning, removals\n\n";
  md += "Posts found gone (deleted, private, suspended, left out of the network's answers) are never in a dataset. "
        "Of the " + Get(surv, "selected") + " posts selected, " + Get(surv, "available") + " are in it and " +
        Get(surv, "gone") + " were left out, for these reasons (tweetkeeper.post_availability):\n\n" +
        Table(Member(surv, "gone_by_reason"),
              {{"network", "network"}, {"reason", "reason"}, {"detail", "the network said"}, {"posts", "posts"}}) +
        "\n";
  md += "How much of the collection survives by age (tweetkeeper.mortality_by_age, " +
        std::string(Get(sel, "collection").empty() ? "all posts of the database: no collection was selected"
                                                   : "collection " + Get(sel, "collection")) +
        "):\n\n" +
        Table(Member(d, "mortality_by_age"), {{"age", "age"}, {"posts", "posts"}, {"available", "available"},
                                              {"gone", "gone"}, {"unknown", "unknown"},
                                              {"share_available", "share available"}}) + "\n";
  md += "## Uses\n\nComparing engagement over time (curves.csv) and rehydrating the posts to study them: "
        "`tweetkeeper-import --dataset DIR` schedules every post named, loads history.csv as their history and "
        "says how many could be read again. A post deleted since is not read again: respect that.\n\n";
  md += "## Distribution\n\nThe networks' terms that apply:\n\n";
  for (const char* network : {"x", "bluesky", "mastodon"}) md += "- " + Get(terms, network) + "\n";
  md += "\n## Maintenance\n\nFor the publisher to fill in: who maintains the dataset and how removals are "
        "asked for and announced.\n";
  return md;
}

}  // namespace tweetkeeper::exporter
