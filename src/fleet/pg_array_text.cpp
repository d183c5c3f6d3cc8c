#include "fleet/pg_array_text.h"

#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace gpuledger::fleet {

namespace {

[[noreturn]] void malformed(size_t at) {
  throw Error("fleet: the database sent an array the reader cannot read (at byte " + std::to_string(at) + ")");
}

// array_out's white space (array_isspace): never part of an unquoted cell.
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

bool is_null_word(std::string_view s) {
  return s.size() == 4 && (s[0] | 0x20) == 'n' && (s[1] | 0x20) == 'u' && (s[2] | 0x20) == 'l' && (s[3] | 0x20) == 'l';
}

// strtod and strtoll, as PgResult reads a column (PQgetvalue's text ends in a NUL; a cell need not).
template <class F>
auto parse_cell(std::string_view v, F parse) {
  char small[64];
  if (v.size() < sizeof small) {
    std::memcpy(small, v.data(), v.size());
    small[v.size()] = '\0';
    return parse(small);
  }
  const std::string copy(v);
  return parse(copy.c_str());
}

}  // namespace

TextArrayRows::TextArrayRows(std::string_view text) : text_(text) {
  if (text.empty() || text == "{}") return;  // NULL (no aggregate rows) or an empty array
  const size_t n = text.size();
  size_t i = 0;
  auto expect = [&](char c) {
    if (i >= n || text[i] != c) malformed(i);
    ++i;
  };
  expect('{');
  for (;;) {
    expect('{');
    row_starts_.push_back(cells_.size());
    for (;;) {
      Cell cell;
      if (i < n && text[i] == '"') {
        ++i;
        const size_t from = i;
        while (i < n && text[i] != '"' && text[i] != '\\') ++i;
        if (i < n && text[i] == '\\') {  // an escape: the cell unescaped into unescaped_
          cell.escaped = true;
          cell.at = unescaped_.size();
          unescaped_.append(text.substr(from, i - from));
          while (i < n && text[i] != '"') {
            if (text[i] == '\\' && ++i >= n) malformed(i);
            unescaped_ += text[i++];
          }
          cell.size = unescaped_.size() - cell.at;
        } else {
          cell.at = from;
          cell.size = i - from;
        }
        expect('"');
      } else {
        const size_t from = i;
        while (i < n && text[i] != ',' && text[i] != '}' && text[i] != '{' && text[i] != '"' && text[i] != '\\' &&
               !is_space(text[i]))
          ++i;
        if (i == from) malformed(i);  // array_out quotes an empty cell
        cell.at = from;
        cell.size = i - from;
        cell.null = is_null_word(text.substr(from, i - from));
      }
      cells_.push_back(cell);
      if (i < n && text[i] == ',') {
        ++i;
        continue;
      }
      expect('}');
      break;
    }
    if (row_starts_.size() > 1 && cells_.size() - row_starts_.back() != row_starts_[1] - row_starts_[0])
      malformed(i);  // PostgreSQL's arrays are rectangular: each row as long as the first
    if (i < n && text[i] == ',') {
      ++i;
      continue;
    }
    expect('}');
    break;
  }
  if (i != n) malformed(i);
  row_starts_.push_back(cells_.size());
}

const TextArrayRows::Cell& TextArrayRows::cell(int row, int col) const {
  if (row < 0 || row >= rows() || col < 0 || col >= columns(row))
    throw Error("fleet: the database sent an array row of " +
                std::to_string(row < 0 || row >= rows() ? 0 : columns(row)) + " values where the reader needs more");
  return cells_[row_starts_[static_cast<size_t>(row)] + static_cast<size_t>(col)];
}

std::string_view TextArrayRows::view(int row, int col) const {
  const Cell& c = cell(row, col);
  if (c.null) return {};
  return (c.escaped ? std::string_view(unescaped_) : text_).substr(c.at, c.size);
}

int64_t TextArrayRows::i64(int row, int col) const {
  return parse_cell(view(row, col), [](const char* s) { return static_cast<int64_t>(std::strtoll(s, nullptr, 10)); });
}
double TextArrayRows::f64(int row, int col) const {
  return parse_cell(view(row, col), [](const char* s) { return std::strtod(s, nullptr); });
}
std::optional<double> TextArrayRows::opt_f64(int row, int col) const {
  return null(row, col) ? std::nullopt : std::optional<double>(f64(row, col));
}
std::optional<int64_t> TextArrayRows::opt_i64(int row, int col) const {
  return null(row, col) ? std::nullopt : std::optional<int64_t>(i64(row, col));
}

}  // namespace gpuledger::fleet
