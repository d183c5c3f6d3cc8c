#include "report/focus_cells.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <cstdint>

#include "common/inert_text.h"
#include "report/report_text.h"

namespace gpuledger::report {

namespace {

// What one pass over a cell's bytes tells: printable ASCII (no controls, DEL
// or bytes of UTF-8) is a cell no form of which differs from the bytes but by
// the characters below.
struct Scan {
  bool printable = true, comma_or_quote = false, backslash = false;
};
// Each byte's class, ORed over the cell without a branch a byte (the scan was
// 15 % of a fleet's FOCUS export when it stopped at the first odd byte).
enum : uint8_t { kOdd = 1, kCommaOrQuote = 2, kBackslash = 4 };
constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = c < 0x20 || c > 0x7E ? kOdd : 0;
  t[','] = t['"'] = kCommaOrQuote;
  t['\\'] = kBackslash;
  return t;
}();
Scan scan(std::string_view v) {
  uint8_t seen = 0;
  for (char c : v) seen |= kByteClass[static_cast<uint8_t>(c)];
  return {(seen & kOdd) == 0, (seen & kCommaOrQuote) != 0, (seen & kBackslash) != 0};
}

}  // namespace

void append_csv_cell(std::string& out, std::string_view v) {
  const Scan s = scan(v);
  if (!s.printable) {
    out += csv_field(std::string(v));
    return;
  }
  append_csv_field(out, v, s.comma_or_quote);  // printable ASCII: no line break
}

void append_text_cell(std::string& out, std::string_view v) {
  // spreadsheet_text escapes a backslash and marks a leading formula character.
  const Scan s = scan(v);
  if (!s.printable || s.backslash || (!v.empty() && std::string_view("=+-@").find(v.front()) != std::string_view::npos)) {
    out += csv_field(spreadsheet_text(v));
    return;
  }
  append_csv_field(out, v, s.comma_or_quote);  // printable ASCII: no line break
}

void append_json_string(std::string& out, std::string_view v) {
  if (const Scan s = scan(v); s.printable && !s.backslash && v.find('"') == std::string_view::npos) {
    out += '"';
    out += v;
    out += '"';
    return;
  }
  out += nlohmann::json(std::string(v)).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

// nlohmann's serializer itself (dump_float): its Grisu2 digits into a
// buffer of the serializer's size, without a json value or a string a number.
void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  std::array<char, 64> buf;
  const char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), v);
  out.append(buf.data(), static_cast<size_t>(end - buf.data()));
}

}  // namespace gpuledger::report
