#include "common/inert_text.h"

#include <cstdio>
#include <iterator>

#include "common/utf8.h"

namespace gpuledger {
namespace {

struct Range {
  char32_t first, last;
};

// Invisible or reordering code points above U+009F: Unicode's Cf (format)
// category, the line and paragraph separators, and the fillers that render as
// nothing (Hangul fillers, combining grapheme joiner), in code point order.
constexpr Range kInvisible[] = {
    {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},
    {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x115F, 0x1160},   {0x17B4, 0x17B5},
    {0x180B, 0x180F},   {0x200B, 0x200F},   {0x2028, 0x202E},   {0x2060, 0x206F},   {0x3164, 0x3164},
    {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD},
    {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
};

void append_hex(std::string& out, const char* prefix, unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
  out += buf;
}

}  // namespace

bool is_shown_escaped(char32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return true;
  for (const Range& r : kInvisible)
    if (cp >= r.first && cp <= r.last) return true;
  return false;
}

std::string inert_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t bad;
  char32_t cp = 0;
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = utf8_sequence(bytes, i, bad, cp);
    if (n == 0) {  // ill-formed: each byte shown, none passed raw
      for (size_t k = 0; k < bad; ++k) append_hex(out, "\\x", static_cast<unsigned char>(bytes[i + k]), 2);
      i += bad;
      continue;
    }
    if (cp == '\\')
      out += "\\\\";
    else if (!is_shown_escaped(cp))
      out.append(bytes.substr(i, n));
    else if (cp < 0x80)
      append_hex(out, "\\x", cp, 2);
    else if (cp <= 0xFFFF)
      append_hex(out, "\\u", cp, 4);
    else
      append_hex(out, "\\U", cp, 8);
    i += n;
  }
  return out;
}

size_t inert_cut(std::string_view shown, size_t max) {
  size_t cut = 0;
  for (size_t i = 0; i < shown.size();) {
    size_t unit = 1;
    const auto b = static_cast<unsigned char>(shown[i]);
    if (b == '\\' && i + 1 < shown.size()) {
      const char kind = shown[i + 1];
      unit = kind == 'x' ? 4 : kind == 'u' ? 6 : kind == 'U' ? 10 : 2;
    } else if (b >= 0xF0) {
      unit = 4;
    } else if (b >= 0xE0) {
      unit = 3;
    } else if (b >= 0xC0) {
      unit = 2;
    }
    if (i + unit > max) break;
    i += unit;
    cut = i;
  }
  return cut;
}

std::string spreadsheet_text(std::string_view bytes) {
  std::string shown = inert_text(bytes);
  if (!shown.empty() && std::string_view("=+-@\t\r").find(shown.front()) != std::string_view::npos)
    shown.insert(shown.begin(), '\'');
  return shown;
}

}  // namespace gpuledger
