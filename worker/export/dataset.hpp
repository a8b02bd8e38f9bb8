#pragma once
// A dataset to share (tweetkeeper-export --format dataset, read back by tweetkeeper-import
// --dataset): a directory of references that each network's terms let one share (X: post ids
// only; Bluesky: at:// URIs; Mastodon: status URLs), the posts' observations and curves (counts
// and times, no content), a datasheet (datasheet.json, and datasheet.md rendered from it), and
// SHA256SUMS over them all, as sha256sum writes and `sha256sum -c` checks. Without I/O beyond the
// files named (unit-tested).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tweetkeeper::exporter {

// The files of a dataset, in the order SHA256SUMS lists them.
inline constexpr const char* kXIds = "x_ids.txt";
inline constexpr const char* kBlueskyUris = "bluesky_uris.txt";
inline constexpr const char* kMastodonUrls = "mastodon_urls.txt";
inline constexpr const char* kHistory = "history.csv";
inline constexpr const char* kCurves = "curves.csv";
inline constexpr const char* kDatasheetJson = "datasheet.json";
inline constexpr const char* kDatasheetMd = "datasheet.md";
inline constexpr const char* kSums = "SHA256SUMS";
inline const std::vector<std::string> kDatasetFiles = {kXIds,    kBlueskyUris,    kMastodonUrls, kHistory,
                                                       kCurves,  kDatasheetJson, kDatasheetMd};

// X's developer policy: "you may not distribute more than 1,500,000 Post IDs to any entity ...
// within any 30 day period unless you have received written permission from X".
inline constexpr std::uint64_t kXIdsPer30Days = 1'500'000;

// The SHA-256 of a file's bytes in lower-case hex; nullopt when it cannot be read.
std::optional<std::string> Sha256File(const std::string& path);

// SHA256SUMS's text: "<hex>  <name>\n" for each (name, hex), in the order given.
std::string SumsText(const std::vector<std::pair<std::string, std::string>>& sums);

// SHA256SUMS read back: name -> hex, in text mode ("<64 hex>  <name>") or binary ("<hex> *<name>");
// nullopt, *error saying which line and why, for anything else (a name given twice, a path
// with a slash or "..").
std::optional<std::map<std::string, std::string>> ParseSums(std::string_view text, std::string* error);

// datasheet.md from datasheet.json's text (the object tweetkeeper-export writes): the sections of
// Gebru et al.'s Datasheets for Datasets, with the numbers as tables. *error when it is no such
// object.
std::optional<std::string> DatasheetMarkdown(const std::string& json, std::string* error);

}  // namespace tweetkeeper::exporter
