// Tests for common/utf8.h: hostile bytes become valid UTF-8, nothing dropped.
#include "common/utf8.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

TEST(Utf8, ValidTextIsKeptAsIs) {
  EXPECT_TRUE(is_valid_utf8("pod-7 \xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_EQ(valid_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(valid_utf8(""), "");
}

TEST(Utf8, EachIllFormedSubpartBecomesOneReplacementCharacter) {
  EXPECT_EQ(valid_utf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");            // overlong
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(valid_utf8("x\xE2\x82"), "x\xEF\xBF\xBD");  // truncated at the end: one subpart
  EXPECT_EQ(valid_utf8("\xE2\x82" "A"), "\xEF\xBF\xBD" "A");
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

TEST(Utf8, OutputIsAlwaysValid) {
  std::string all;
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 256; j += 7) all += {static_cast<char>(i), static_cast<char>(j)};
  EXPECT_TRUE(is_valid_utf8(valid_utf8(all)));
}

}  // namespace
}  // namespace gpuledger
