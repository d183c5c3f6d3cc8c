#pragma once
// Text helpers shared by the report's renderers (table, CSV, JSON, HTML).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::report {

std::string fixed(double value, int decimals);
// Exact: six decimals, the ledger's micro-units ("0.351428").
std::string money(int64_t micros);
// For people: rounded half away from zero to cents, thousands grouped ("1,234.57").
std::string money_cents(int64_t micros);
std::string pct(const std::optional<double>& ratio);  // "37.5%" or "unknown"
// Energy and carbon of a report row, or `unknown_text` when not measured.
std::string energy_kwh(const std::optional<int64_t>& millijoules, int decimals, const std::string& unknown_text);
std::string carbon_kg(const std::optional<double>& grams, int decimals, const std::string& unknown_text);
// Text for HTML: inert (common/inert_text.h), then &, <, >, " and ' escaped.
std::string html_escape(const std::string& text);
// A name a tenant chose (pod, team, ...) or a sentence holding one, safe to
// print for a person: inert_text (controls, bidi and invisible characters
// escaped). Applied once, where the text is written: the lines shared by
// several renderers (audit, coverage) stay raw until then.
std::string display_name(const std::string& name);
std::string format_utc(int64_t unix_seconds, const char* strftime_format);
std::string format_date_time(int64_t unix_seconds);  // "2026-11-30 14:05 UTC"
// Aligned columns: the first left-aligned, the others right-aligned; a rule
// before the last line when `rule_before_last`.
std::string aligned_columns(const std::vector<std::vector<std::string>>& lines, bool rule_before_last);
// One CSV field (RFC 4180): valid UTF-8, quoted when it holds a comma, quote
// or line break. Text cells are spreadsheet_text (common/inert_text.h) first.
std::string csv_field(const std::string& raw);
// csv_field's quoting of text already valid UTF-8, appended to `out`:
// `quote` (it holds a comma, quote or line break) wraps it, its quotes doubled.
void append_csv_field(std::string& out, std::string_view valid, bool quote);

}  // namespace gpuledger::report
