#pragma once
// Tenants choose the bytes of their cgroup, pod, team and file names, and a
// person reads them in a terminal, a browser or a spreadsheet. A name must
// never act there: no ESC sequence that clears the screen or retitles the
// window, no right-to-left override that reorders a line, no invisible
// character that makes two names look alike, no spreadsheet formula. These
// functions are applied once, where text leaves for a person (table, HTML,
// logs, CSV); JSON keeps the exact name.
#include <string>
#include <string_view>

namespace gpuledger {

// True for the code points shown escaped: C0 controls, DEL, C1 controls, the
// bidi controls, line/paragraph separators, zero-width and other invisible
// formatting characters (Unicode's Cf category, as listed in inert_text.cpp).
bool is_shown_escaped(char32_t code_point);

// `bytes` as a person may see them: each byte below 0x80 that is_shown_escaped
// and each byte of ill-formed UTF-8 becomes "\xHH", each other such code point
// "\uHHHH" (or "\UHHHHHHHH" past U+FFFF), and a backslash "\\", so every escape
// is unambiguous; everything else is kept. The result is valid, printable UTF-8.
std::string inert_text(std::string_view bytes);

// The longest prefix length <= max of `shown` (an inert_text result) that
// splits neither an escape nor a UTF-8 character, for truncating a cell.
size_t inert_cut(std::string_view shown, size_t max);

// A CSV (or FOCUS) cell of text - a name, account, team, label, never an
// amount: inert_text, and a leading ' when it would start with =, +, -, @,
// tab or carriage return, so a spreadsheet reads it as text, not a formula
// (OWASP's CSV-injection advice). The ' is part of the cell then.
std::string spreadsheet_text(std::string_view bytes);

}  // namespace gpuledger
