#include "report.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cmath>
#include <cstdio>

namespace gpuledger::bench {

std::string MarkdownTable::render() const {
  std::vector<size_t> width(header_.size(), 3);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  widen(header_);
  for (const auto& row : rows_) widen(row);

  auto line = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (size_t i = 0; i < width.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      out += " " + cell + std::string(width[i] - cell.size(), ' ') + " |";
    }
    return out + "\n";
  };
  std::string out = line(header_) + "|";
  for (size_t w : width) out += std::string(w + 2, '-') + "|";
  out += "\n";
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string fixed(double value, int decimals) {
  if (std::isnan(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string ratio(double numerator, double denominator) {
  // Below zero an added cost is noise, and a ratio of noise means nothing.
  if (std::isnan(numerator) || std::isnan(denominator) || numerator <= 0 || denominator <= 0) return "-";
  return fixed(numerator / denominator, 2) + "x";
}

void progress(const char* format, ...) {
  static const auto start = std::chrono::steady_clock::now();
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::fprintf(stderr, "[%6.1f s] ", elapsed.count());
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
}

}  // namespace gpuledger::bench
