#include "report/focus_decimal.h"

#include <cmath>

namespace gpuledger::report {

int64_t to_nanos(double value) { return std::llround(value * 1e9); }

std::string scaled_decimal(__int128 value, int scale) {
  const bool negative = value < 0;
  unsigned __int128 v = negative ? static_cast<unsigned __int128>(-value) : static_cast<unsigned __int128>(value);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  if (static_cast<int>(digits.size()) <= scale) digits.insert(0, static_cast<size_t>(scale + 1) - digits.size(), '0');
  std::string out = digits.substr(0, digits.size() - static_cast<size_t>(scale));
  std::string frac = digits.substr(digits.size() - static_cast<size_t>(scale));
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  if (!frac.empty()) out += "." + frac;
  return (negative && out != "0" ? "-" : "") + out;
}

std::string micros_times_nanos(int64_t micros, int64_t nanos) {
  return scaled_decimal(static_cast<__int128>(micros) * nanos, 15);
}

}  // namespace gpuledger::report
