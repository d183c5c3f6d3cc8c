#include "report/focus_decimal.h"

#include <cmath>
#include <stdexcept>

namespace gpuledger::report {

int64_t to_nanos(double value) { return std::llround(value * 1e9); }

std::string scaled_decimal(__int128 value, int scale) {
  if (scale < 0 || scale > kMaxScale) throw std::invalid_argument("scaled_decimal: scale out of range");
  const bool negative = value < 0;
  unsigned __int128 v = negative ? static_cast<unsigned __int128>(-value) : static_cast<unsigned __int128>(value);
  char digits[40 + kMaxScale];  // the least significant first; 2^127 has 39
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  } while (v > 0);
  while (n <= scale) digits[n++] = '0';  // an integer digit at least
  int lowest = 0;                        // the fraction without its trailing zeros
  while (lowest < scale && digits[lowest] == '0') ++lowest;
  std::string out;
  out.reserve(static_cast<size_t>(n) + 2);
  if (negative) out += '-';  // never "-0": a negative value has a digit that is not 0
  for (int i = n - 1; i >= scale; --i) out += digits[i];
  if (lowest < scale) out += '.';
  for (int i = scale - 1; i >= lowest; --i) out += digits[i];
  return out;
}

std::string micros_times_nanos(int64_t micros, int64_t nanos) {
  return scaled_decimal(static_cast<__int128>(micros) * nanos, 15);
}

}  // namespace gpuledger::report
