#include "common/utf8.h"

#include <cstdint>

namespace gpuledger {
namespace {

// Length of the well-formed sequence starting at s[i], or 0 when the bytes
// there do not start one. `bad` gets how many bytes form the maximal
// ill-formed subpart (at least 1) so the caller replaces exactly those.
size_t sequence_length(std::string_view s, size_t i, size_t& bad) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  bad = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
  else if (b0 == 0xE0) need = 2, lo = 0xA0;
  else if (b0 == 0xED) need = 2, hi = 0x9F;  // no UTF-16 surrogates
  else if (b0 >= 0xE1 && b0 <= 0xEF) need = 2;
  else if (b0 == 0xF0) need = 3, lo = 0x90;
  else if (b0 == 0xF4) need = 3, hi = 0x8F;  // nothing past U+10FFFF
  else if (b0 >= 0xF1 && b0 <= 0xF3) need = 3;
  else return 0;
  for (size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<uint8_t>(s[i + k]);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return 0;
    bad = k + 1;
  }
  return need + 1;
}

}  // namespace

size_t utf8_sequence(std::string_view s, size_t i, size_t& bad, char32_t& code_point) {
  const size_t n = sequence_length(s, i, bad);
  if (n == 0) return 0;
  static constexpr uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  code_point = static_cast<uint8_t>(s[i]) & kLeadMask[n];
  for (size_t k = 1; k < n; ++k) code_point = (code_point << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  return n;
}

bool is_valid_utf8(std::string_view bytes) {
  size_t bad;
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = sequence_length(bytes, i, bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 8);
  size_t bad;
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = sequence_length(bytes, i, bad);
    if (n) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      i += bad;
    }
  }
  return out;
}

}  // namespace gpuledger
