#pragma once
// A two-dimensional text[] as PostgreSQL sends it (array_out): the cells of
// "{{a,\"b c\",NULL},{...}}", each as the text libpq would give for a column
// of that value, so that the readers of a row's columns (fleet_rows.h) read
// a cell the same way. The reader gets a window's accounts, charges and
// energy parts this way, one row a window, instead of a row a part each with
// the window's key again (fleet_reader.cpp, read_windows).
//
// It reads what array_out writes and nothing else: braces, cells split by
// commas, a cell quoted (its quotes and backslashes escaped) when it is empty,
// the word NULL in any case, or holds a quote, a backslash, a brace, a comma
// or white space; NULL unquoted is SQL NULL. Any other text throws Error.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::fleet {

class TextArrayRows {
 public:
  TextArrayRows() = default;
  // text: the array's text (a SQL NULL or an empty array: no rows). The cells
  // point into it (or into this object's copies of escaped cells): it must
  // outlive the reads.
  explicit TextArrayRows(std::string_view text);
  TextArrayRows(const TextArrayRows&) = delete;
  TextArrayRows& operator=(const TextArrayRows&) = delete;

  int rows() const { return static_cast<int>(row_starts_.empty() ? 0 : row_starts_.size() - 1); }
  int columns(int row) const { return static_cast<int>(row_starts_[row + 1] - row_starts_[row]); }
  // PgResult's reads of a cell (pg_connection.h), where a row is one inner array.
  bool null(int row, int col) const { return cell(row, col).null; }
  std::string_view view(int row, int col) const;
  std::string text(int row, int col) const { return std::string(view(row, col)); }
  int64_t i64(int row, int col) const;
  double f64(int row, int col) const;
  std::optional<double> opt_f64(int row, int col) const;
  std::optional<int64_t> opt_i64(int row, int col) const;

 private:
  struct Cell {
    size_t at = 0, size = 0;
    bool escaped = false;  // in unescaped_, not in text_
    bool null = false;
  };
  const Cell& cell(int row, int col) const;
  std::string_view text_;
  std::string unescaped_;  // the quoted cells that held an escape, unescaped
  std::vector<Cell> cells_;
  std::vector<size_t> row_starts_;  // cells_ index of each row's first cell, then the end
};

}  // namespace gpuledger::fleet
