#include "common/duration_text.h"

#include <cctype>
#include <cstdint>

#include "common/error.h"

namespace gpuledger {

std::chrono::milliseconds parse_duration(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string unit = text.substr(digits);
  int64_t per_unit = 0;
  if (unit.empty() || unit == "s")
    per_unit = 1000;
  else if (unit == "ms")
    per_unit = 1;
  else if (unit == "m")
    per_unit = 60'000;
  else if (unit == "h")
    per_unit = 3'600'000;
  if (digits == 0 || digits > 9 || per_unit == 0)
    throw Error("'" + text + "' is not a duration: write a whole number with s, m, h or ms (e.g. 10m)");
  return std::chrono::milliseconds(std::stoll(text.substr(0, digits)) * per_unit);
}

}  // namespace gpuledger
