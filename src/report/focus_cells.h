#pragma once
// A FOCUS row's cells appended straight into the row, byte for byte what
// csv_field, spreadsheet_text and nlohmann's ASCII dump make of them. A
// fleet's month is 720,000 rows of 56 cells and three JSON objects each:
// a string per cell and a JSON tree per object were most of the export's
// time (docs/performance.md). Names a tenant chose that are not plain
// printable ASCII take the full (slow) path, so nothing about them changes.
#include <string>
#include <string_view>

namespace gpuledger::report {

// csv_field(v): quoted when it holds a comma, quote or line break.
void append_csv_cell(std::string& out, std::string_view v);
// csv_field(spreadsheet_text(v)): a text cell no spreadsheet runs as a formula.
void append_text_cell(std::string& out, std::string_view v);
// nlohmann::json(v).dump(-1, ' ', true, replace): a JSON string, ASCII only.
void append_json_string(std::string& out, std::string_view v);
// nlohmann's dump of a double (its shortest round-trip form).
void append_json_number(std::string& out, double v);

}  // namespace gpuledger::report
