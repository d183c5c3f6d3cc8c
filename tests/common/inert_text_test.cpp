// Tests for common/inert_text.h: a tenant's name cannot act on a person's
// terminal, browser or spreadsheet, and every escape reads back unambiguously.
#include "common/inert_text.h"

#include <gtest/gtest.h>

#include "common/utf8.h"

namespace gpuledger {
namespace {

TEST(InertText, PlainNamesAreKeptAsIs) {
  EXPECT_EQ(inert_text("k8s/ml/pod-a"), "k8s/ml/pod-a");
  EXPECT_EQ(inert_text("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(inert_text(""), "");
}

TEST(InertText, TerminalSequencesAreShownNotSent) {
  EXPECT_EQ(inert_text("\x1b[2J\x1b]0;pwned\x07"), "\\x1b[2J\\x1b]0;pwned\\x07");
  EXPECT_EQ(inert_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(inert_text("tab\there\r\nnext\x7f"), "tab\\x09here\\x0d\\x0anext\\x7f");
  EXPECT_EQ(inert_text("\xC2\x9B" "2J"), "\\u009b2J");  // C1 CSI
}

TEST(InertText, BidiAndInvisibleCharactersAreShownByCodePoint) {
  EXPECT_EQ(inert_text("abc\xE2\x80\xAEgpj.exe"), "abc\\u202egpj.exe");              // RLO
  EXPECT_EQ(inert_text("team\xE2\x80\x8B" "a"), "team\\u200ba");                     // ZWSP
  EXPECT_EQ(inert_text("\xE2\x81\xA6x\xE2\x81\xA9"), "\\u2066x\\u2069");               // LRI .. PDI
  EXPECT_EQ(inert_text("\xE2\x80\x8E\xE2\x80\x8F\xD8\x9C"), "\\u200e\\u200f\\u061c");  // LRM RLM ALM
  EXPECT_EQ(inert_text("\xEF\xBB\xBF" "a\xC2\xAD" "b\xE2\x81\xA0"), "\\ufeffa\\u00adb\\u2060");
  EXPECT_EQ(inert_text("x\xE2\x80\xA8y"), "x\\u2028y");                                // line separator
  EXPECT_EQ(inert_text("\xF3\xA0\x80\x81"), "\\U000e0001");                            // language tag
  for (char32_t cp : {0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200B, 0x200C,
                      0x200D, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x00AD, 0x0080, 0x009F})
    EXPECT_TRUE(is_shown_escaped(cp)) << std::hex << static_cast<unsigned>(cp);
  for (char32_t cp : {0x20, 0x41, 0xE9, 0x20AC, 0x1F600, 0x4E2D}) EXPECT_FALSE(is_shown_escaped(cp));
}

TEST(InertText, InvalidUtf8IsShownByteByByte) {
  EXPECT_EQ(inert_text("a\xFF" "b"), "a\\xffb");
  EXPECT_EQ(inert_text("\xC0\xAF"), "\\xc0\\xaf");
  EXPECT_EQ(inert_text("x\xE2\x82"), "x\\xe2\\x82");
  EXPECT_EQ(inert_text("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

TEST(InertText, BackslashIsEscapedSoNoNameCanForgeAnEscape) {
  EXPECT_EQ(inert_text("\\x1b"), "\\\\x1b");  // the four characters, not ESC
  EXPECT_NE(inert_text("\\x1b"), inert_text("\x1b"));
  EXPECT_EQ(inert_text("a\\b"), "a\\\\b");
}

TEST(InertText, OutputIsPrintableValidUtf8ForEveryByte) {
  std::string all;
  for (int i = 0; i < 256; ++i)
    for (int j = 0; j < 256; j += 5) all += {static_cast<char>(i), static_cast<char>(j), static_cast<char>(0x80 | (j & 0x3F))};
  const std::string shown = inert_text(all);
  EXPECT_TRUE(is_valid_utf8(shown));
  for (unsigned char c : shown) EXPECT_FALSE(c < 0x20 || c == 0x7F) << static_cast<int>(c);
  EXPECT_EQ(shown.find("\xE2\x80\xAE"), std::string::npos);
  EXPECT_EQ(shown.find("\xC2\x9B"), std::string::npos);
}

TEST(InertText, CutKeepsWholeEscapesAndCharacters) {
  const std::string shown = inert_text("ab\x1b" "c\xE2\x80\xAE\xC3\xA9\\");  // ab\x1bc\u202eé\\ .
  ASSERT_EQ(shown, "ab\\x1bc\\u202e\xC3\xA9\\\\");
  EXPECT_EQ(inert_cut(shown, 2), 2u);
  EXPECT_EQ(inert_cut(shown, 3), 2u);  // inside \x1b
  EXPECT_EQ(inert_cut(shown, 5), 2u);
  EXPECT_EQ(inert_cut(shown, 6), 6u);
  EXPECT_EQ(inert_cut(shown, 12), 7u);  // inside \u202e
  EXPECT_EQ(inert_cut(shown, 13), 13u);
  EXPECT_EQ(inert_cut(shown, 14), 13u);  // inside é
  EXPECT_EQ(inert_cut(shown, 16), 15u);  // inside the escaped backslash
  EXPECT_EQ(inert_cut(shown, 99), shown.size());
}

TEST(SpreadsheetText, FormulaStartsBecomeText) {
  EXPECT_EQ(spreadsheet_text("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
  EXPECT_EQ(spreadsheet_text("+1+1"), "'+1+1");
  EXPECT_EQ(spreadsheet_text("-2+3"), "'-2+3");
  EXPECT_EQ(spreadsheet_text("@SUM(A1)"), "'@SUM(A1)");
  // Tab and carriage return are shown escaped already, so the cell starts with a backslash.
  EXPECT_EQ(spreadsheet_text("\t=1"), "\\x09=1");
  EXPECT_EQ(spreadsheet_text("\r=1"), "\\x0d=1");
  EXPECT_EQ(spreadsheet_text("team-a"), "team-a");
  EXPECT_EQ(spreadsheet_text("a=b"), "a=b");
  EXPECT_EQ(spreadsheet_text(""), "");
  EXPECT_EQ(spreadsheet_text("=\x1b[2J"), "'=\\x1b[2J");
}

}  // namespace
}  // namespace gpuledger
