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

std::string duration_words(int64_t seconds) {
  if (seconds < 0) return "-" + duration_words(-seconds);
  struct Unit {
    int64_t seconds;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
  std::string out;
  int shown = 0;
  for (const Unit& u : kUnits) {
    const int64_t n = seconds / u.seconds;
    if (shown == 0 && n == 0 && u.seconds > 1) continue;
    if (n > 0 || shown == 0) out += (shown ? " " : "") + std::to_string(n) + u.name;
    seconds -= n * u.seconds;
    if (++shown == 2 || seconds == 0) break;
  }
  return out;
}

}  // namespace gpuledger
