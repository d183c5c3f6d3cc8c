#pragma once
// Exact decimals for the FOCUS export: a cost is a unit price times a quantity
// to the last digit (FOCUS's ListCost = ListUnitPrice x PricingQuantity), so
// both factors are integers of fixed scale and the product is never a binary
// float.
#include <cstdint>
#include <string>

namespace gpuledger::report {

// 0.1234567894 -> 123456789 (nano-units, rounded half away from zero).
int64_t to_nanos(double value);
// An integer of `scale` decimal places as text, trailing zeros dropped:
// (1500, 3) -> "1.5"; (-20, 2) -> "-0.2"; (0, 9) -> "0". A scale past
// kMaxScale throws std::invalid_argument.
constexpr int kMaxScale = 30;
std::string scaled_decimal(__int128 value, int scale);
// micros x nanos, exactly: (3'600'000, 266'666'667) -> "0.9600000012".
std::string micros_times_nanos(int64_t micros, int64_t nanos);

}  // namespace gpuledger::report
