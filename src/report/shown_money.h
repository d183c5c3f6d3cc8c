#pragma once
// Money as people read it: to the currency's minor unit (cents for USD, none
// for JPY, three places for KWD), rounded so that the rows shown add up to the
// total shown. The ledger's amounts stay exact (micro-units) in CSV, JSON and
// FOCUS; only the table and the HTML round, and both round through here.
//
// Largest remainder: the total is rounded half up to the minor unit; each part
// gets the floor of its amount in minor units, and the units left over go one
// each to the parts with the largest remainders (ties: the earlier part).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuledger::report {

struct Row;

// Decimal places of the currency's minor unit (ISO 4217); 2 for a code it does not know.
int minor_unit_digits(const std::string& currency);

// `parts` in micro-units rounded to multiples of `unit_micros` (10'000 for
// cents) whose sum is the sum of `parts` rounded half up to that unit.
std::vector<int64_t> round_parts(const std::vector<int64_t>& parts, int64_t unit_micros);

// "1,234.57" for 1'234'570'000 micro-units at 2 digits (the amount must be a
// multiple of the unit; thousands grouped).
std::string format_shown(int64_t micros, int digits);

// One amount on its own (not a part of a sum shown beside it), rounded half
// up to the currency's minor unit: "0.08" for 75'428 micro-units in USD.
std::string shown_amount(int64_t micros, const std::string& currency);

// The cost columns of a table as shown: per row busy, idle, memory and total
// (the rows' totals by largest remainder against the shown total; each row's
// kinds by largest remainder against its shown total), and the TOTAL line as
// the sum of the rows shown, so every row and every column adds up.
struct ShownCosts {
  enum Column { kBusy, kIdle, kMemory, kTotal };
  int digits = 2;
  std::vector<std::array<int64_t, 4>> rows;  // micro-units, multiples of the minor unit
  std::array<int64_t, 4> total{};
  std::string cell(size_t row, Column c) const { return format_shown(rows[row][c], digits); }
  std::string total_cell(Column c) const { return format_shown(total[c], digits); }
};
ShownCosts shown_costs(const std::vector<Row>& rows, const std::string& currency);

}  // namespace gpuledger::report
