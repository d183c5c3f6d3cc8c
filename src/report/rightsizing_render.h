#pragma once
// Rightsizing as text: `gpuledger rightsize` (table, CSV, JSON) and the
// recommendations section of `gpuledger report` (table, JSON, HTML).
#include <nlohmann/json.hpp>

#include <string>

#include "report/rightsizing.h"

namespace gpuledger::report {

// The JSON document `gpuledger rightsize --format json` prints: range, options,
// and `rows` (key, recommendation, target, saving_per_month,
// saving_per_month_micros, limited, why, evidence {...}, members).
nlohmann::json rightsizing_json(const Rightsizing& r);
std::string render_rightsizing_json(const Rightsizing& r);
std::string render_rightsizing_csv(const Rightsizing& r);
// The whole table (a title line, the rows, then why for each).
std::string render_rightsizing_table(const Rightsizing& r);
// The report's section: its rows and reasons, under a heading.
std::string rightsizing_table_section(const Rightsizing& r);
std::string rightsizing_html_section(const Rightsizing& r);
// A confidence in hundredths as text: 30 -> "0.30", 100 -> "1.00".
std::string confidence_text(int64_t hundredths);
// "24h" / "2d" / "90m" / "45s": how idle_after is written back (days from two on).
std::string duration_text(int64_t seconds);

}  // namespace gpuledger::report
