// Text quoted in a one-line message: control characters as \xNN, the rest as it is (UTF-8 too).
#include <gtest/gtest.h>

#include <string>

#include "text/one_line.hpp"

namespace tweetkeeper::worker {
namespace {

TEST(OneLine, ControlCharactersEscapedTheRestKept) {
  EXPECT_EQ(OneLine("plain /etc/tk/creds"), "plain /etc/tk/creds");
  EXPECT_EQ(OneLine("a\nb\r\tc"), "a\\x0ab\\x0d\\x09c");
  EXPECT_EQ(OneLine(std::string("\x1b[31mred\x7f", 9)), "\\x1b[31mred\\x7f");
  EXPECT_EQ(OneLine(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(OneLine("J\xc3\xbcrgen"), "J\xc3\xbcrgen");  // UTF-8 kept
  EXPECT_EQ(OneLine(""), "");
}

}  // namespace
}  // namespace tweetkeeper::worker
