// The mock's post text: reads like posts, stays within X's 280 characters, valid UTF-8, the same
// for the same seed, and varied across seeds (languages, hashtags, mentions, names).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "mock_api/post_text.hpp"

namespace tweetkeeper::mock {
namespace {

// Code points of valid UTF-8, or -1 (overlong forms and surrogates are not checked: the texts
// come from string literals).
int CodePoints(const std::string& s) {
  int n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return -1;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return -1;
    i += len;
  }
  return n;
}

TEST(MockPostText, WithinLimitsAndValidUtf8) {
  for (uint64_t seed = 0; seed < 20000; ++seed) {
    const PostText p = MockPostText(seed);
    const int n = CodePoints(p.text);
    ASSERT_GT(n, 10) << p.text;
    ASSERT_LE(n, 280) << p.text;
    ASSERT_LE(p.text.size(), 300u) << p.text;
    if (!p.hashtag.empty()) {
      EXPECT_NE(p.text.find("#" + p.hashtag), std::string::npos) << p.text;
    }
    if (!p.mention.empty()) {
      EXPECT_EQ(p.text.rfind("@" + p.mention + " ", 0), 0u) << p.text;
    }
    ASSERT_GT(CodePoints(MockDisplayName(seed)), 2);
    ASSERT_GT(CodePoints(MockBio(seed)), 5);
  }
}

TEST(MockPostText, SameSeedSameText) {
  EXPECT_EQ(MockPostText(42).text, MockPostText(42).text);
  EXPECT_EQ(MockDisplayName(42), MockDisplayName(42));
  EXPECT_NE(MockPostText(42).text, MockPostText(43).text);
}

TEST(MockPostText, VariedAsRealPostsAre) {
  std::map<std::string, int> langs;
  std::set<std::string> texts;
  int hashtags = 0, mentions = 0, non_ascii_names = 0;
  constexpr int kN = 6000;
  for (uint64_t seed = 0; seed < kN; ++seed) {
    const PostText p = MockPostText(seed);
    ++langs[p.lang];
    texts.insert(p.text);
    hashtags += !p.hashtag.empty();
    mentions += !p.mention.empty();
    const std::string name = MockDisplayName(seed);
    for (char c : name) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        ++non_ascii_names;
        break;
      }
    }
  }
  EXPECT_EQ(langs.size(), 6u);
  EXPECT_GT(langs["en"], kN / 2);  // most, not all
  EXPECT_LT(langs["en"], kN * 3 / 4);
  EXPECT_GT(texts.size(), 1000u);
  EXPECT_GT(hashtags, kN / 5);
  EXPECT_LT(hashtags, kN / 2);
  EXPECT_GT(mentions, kN / 8);
  EXPECT_LT(mentions, kN / 3);
  EXPECT_GT(non_ascii_names, kN / 10);
}

}  // namespace
}  // namespace tweetkeeper::mock
