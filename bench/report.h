#pragma once
// A markdown table, built row by row and printed with aligned columns.
#include <string>
#include <vector>

namespace gpuledger::bench {

class MarkdownTable {
 public:
  explicit MarkdownTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Number formatting shared by every section: fixed decimals, "-" for none.
std::string fixed(double value, int decimals);
std::string ratio(double numerator, double denominator);  // "1.23x"; "-" unless both are positive

// A progress line on stderr, stamped with the seconds since the run began
// (the report itself goes to stdout).
void progress(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace gpuledger::bench
