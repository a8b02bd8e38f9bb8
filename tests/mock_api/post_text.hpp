#pragma once
// What the mock's posts say and who writes them: text that reads like posts do (a sentence or
// two, sometimes a hashtag, a mention, an emoji or a language other than English), and people's
// display names. A pure function of a seed (a hash of the post or author), the same in every run.
// Shared by the three networks' answers so the demo and the payloads look like the real thing.

#include <cstdint>
#include <string>

namespace tweetkeeper::mock {

// A post's text, UTF-8, at most 280 characters (code points) and 300 bytes for any seed.
// `mention_domain` names the server of a mention ("" for X and Bluesky's @handle form).
struct PostText {
  std::string text;
  std::string lang;     // BCP 47 of the text: "en", "de", "fr", "es", "ja", "pt"
  std::string hashtag;  // the hashtag's name without '#', or "" when there is none
  std::string mention;  // the mentioned user's name without '@', or "" when there is none
};

PostText MockPostText(uint64_t seed);

// Unicode code points in UTF-8 text (X counts a tweet's length and its entities' offsets in them).
size_t CodePoints(const std::string& utf8);

// A person's name as profiles show it ("Ana Lima", "Jürgen Weiß", "佐藤 花子"), UTF-8.
std::string MockDisplayName(uint64_t seed);

// A short profile line ("Birds, bikes and bad puns."), UTF-8.
std::string MockBio(uint64_t seed);

}  // namespace tweetkeeper::mock
