#include "report/focus_decimal.h"

#include <cmath>
#include <stdexcept>

namespace gpuledger::report {

int64_t to_nanos(double value) { return std::llround(value * 1e9); }

namespace {

// v's decimal digits, the least significant first, into `digits`; returns how
// many. A digit of a 128-bit value is a call into libgcc's division (~30 of
// them for a ListCost, 4 % of a fleet's FOCUS export): the value is cut at
// 10^19 once and each part divided as 64 bits.
int reversed_digits(unsigned __int128 v, char* digits) {
  constexpr uint64_t k19 = 10'000'000'000'000'000'000ULL;
  int n = 0;
  auto put = [&](uint64_t part, bool padded) {
    const int first = n;
    do {
      digits[n++] = static_cast<char>('0' + part % 10);
      part /= 10;
    } while (part > 0);
    if (padded)
      while (n - first < 19) digits[n++] = '0';
  };
  while (v > UINT64_MAX) {
    put(static_cast<uint64_t>(v % k19), true);
    v /= k19;
  }
  put(static_cast<uint64_t>(v), false);
  return n;
}

}  // namespace

std::string scaled_decimal(__int128 value, int scale) {
  if (scale < 0 || scale > kMaxScale) throw std::invalid_argument("scaled_decimal: scale out of range");
  const bool negative = value < 0;
  const unsigned __int128 v = negative ? static_cast<unsigned __int128>(-value) : static_cast<unsigned __int128>(value);
  char digits[40 + kMaxScale];  // the least significant first; 2^127 has 39
  int n = reversed_digits(v, digits);
  while (n <= scale) digits[n++] = '0';  // an integer digit at least
  int lowest = 0;                        // the fraction without its trailing zeros
  while (lowest < scale && digits[lowest] == '0') ++lowest;
  char text[44 + kMaxScale];
  char* p = text;
  if (negative) *p++ = '-';  // never "-0": a negative value has a digit that is not 0
  for (int i = n - 1; i >= scale; --i) *p++ = digits[i];
  if (lowest < scale) *p++ = '.';
  for (int i = scale - 1; i >= lowest; --i) *p++ = digits[i];
  return std::string(text, p);
}

std::string micros_times_nanos(int64_t micros, int64_t nanos) {
  return scaled_decimal(static_cast<__int128>(micros) * nanos, 15);
}

}  // namespace gpuledger::report
