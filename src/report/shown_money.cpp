#include "report/shown_money.h"

#include <algorithm>
#include <numeric>

#include "common/largest_remainder.h"
#include "report/report.h"

namespace gpuledger::report {

int minor_unit_digits(const std::string& c) {
  // ISO 4217 codes whose minor unit is not two places.
  static const std::vector<std::pair<std::string, int>> kDigits = {
      {"BIF", 0}, {"CLP", 0}, {"DJF", 0}, {"GNF", 0}, {"ISK", 0}, {"JPY", 0}, {"KMF", 0}, {"KRW", 0},
      {"PYG", 0}, {"RWF", 0}, {"UGX", 0}, {"UYI", 0}, {"VND", 0}, {"VUV", 0}, {"XAF", 0}, {"XOF", 0},
      {"XPF", 0}, {"BHD", 3}, {"IQD", 3}, {"JOD", 3}, {"KWD", 3}, {"LYD", 3}, {"OMR", 3}, {"TND", 3},
      {"CLF", 4}, {"UYW", 4}};
  for (const auto& [code, digits] : kDigits)
    if (code == c) return digits;
  return 2;
}

namespace {
int64_t unit_of(int digits) {
  int64_t unit = 1'000'000;
  for (int i = 0; i < digits; ++i) unit /= 10;
  return unit;
}
int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
}  // namespace

std::vector<int64_t> round_parts(const std::vector<int64_t>& parts, int64_t unit) {
  const int64_t sum = std::accumulate(parts.begin(), parts.end(), int64_t{0});
  const int64_t shown_units = floor_div(sum + unit / 2, unit);  // half up
  std::vector<int64_t> units(parts.size()), remainders(parts.size());
  int64_t floors = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    floors += units[i] = floor_div(parts[i], unit);
    remainders[i] = parts[i] - units[i] * unit;
  }
  // Non-negative parts leave 0 <= left < parts.size(); a negative part can need units taken back.
  settle_remainders(units, remainders, shown_units - floors, false);
  for (auto& u : units) u *= unit;
  return units;
}

std::string format_shown(int64_t micros, int digits) {
  const int64_t unit = unit_of(digits);
  const bool negative = micros < 0;
  const uint64_t units = (negative ? 0 - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros)) /
                         static_cast<uint64_t>(unit);
  uint64_t scale = 1;
  for (int i = 0; i < digits; ++i) scale *= 10;
  const std::string whole_digits = std::to_string(units / scale);
  std::string out = negative && units ? "-" : "";
  for (size_t i = 0; i < whole_digits.size(); ++i) {
    if (i > 0 && (whole_digits.size() - i) % 3 == 0) out += ',';
    out += whole_digits[i];
  }
  if (digits > 0) {
    std::string frac = std::to_string(units % scale);
    out += "." + std::string(static_cast<size_t>(digits) - frac.size(), '0') + frac;
  }
  return out;
}

std::string shown_amount(int64_t micros, const std::string& currency) {
  const int digits = minor_unit_digits(currency);
  return format_shown(round_parts({micros}, unit_of(digits))[0], digits);
}

ShownCosts shown_costs(const std::vector<Row>& rows, const std::string& currency) {
  ShownCosts s;
  s.digits = minor_unit_digits(currency);
  const int64_t unit = unit_of(s.digits);
  std::vector<int64_t> totals;
  for (const auto& r : rows) totals.push_back(r.cost_total_micros());
  const std::vector<int64_t> shown_totals = round_parts(totals, unit);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    // The kinds against the row's shown total: the exact kinds scaled by the rounding of the row.
    std::vector<int64_t> kinds = {r.cost_busy_micros, r.cost_idle_micros, r.cost_memory_micros};
    const int64_t shift = shown_totals[i] - r.cost_total_micros();  // |shift| < unit
    const auto largest = std::max_element(kinds.begin(), kinds.end()) - kinds.begin();
    kinds[static_cast<size_t>(largest)] += shift;  // the rows' rounding lands where it changes least
    std::vector<int64_t> k = round_parts(kinds, unit);
    s.rows.push_back({k[0], k[1], k[2], shown_totals[i]});
    for (int c = 0; c < 4; ++c) s.total[c] += s.rows.back()[c];
  }
  return s;
}

}  // namespace gpuledger::report
