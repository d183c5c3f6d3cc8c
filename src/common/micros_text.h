#pragma once
// Money as text, in micro-units (1e-6 of the currency), exactly: the one home
// for reading a decimal amount (price lists, stored bill inputs, rightsizing
// options) and writing one (CSV, JSON, FOCUS, the audit). Never a binary float.
#include <cstdint>
#include <string>

namespace gpuledger {

// "4.10" -> 4'100'000. Throws Error on anything but a non-negative decimal
// with at most 6 fractional digits.
int64_t parse_micros(const std::string& text);
// 4'100'000 -> "4.100000" (six decimals, exact; "-0.000005" below 0).
std::string format_micros(int64_t micros);

}  // namespace gpuledger
