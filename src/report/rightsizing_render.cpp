#include "common/not_probed.h"
#include "report/rightsizing_render.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/inert_text.h"
#include "ledger/prices.h"
#include "report/report_text.h"
#include "common/micros_text.h"

namespace gpuledger::report {

std::string confidence_text(int64_t hundredths) {
  const int64_t h = std::clamp<int64_t>(hundredths, 0, 100);
  return std::to_string(h / 100) + "." + (h % 100 < 10 ? "0" : "") + std::to_string(h % 100);
}

std::string duration_text(int64_t s) {
  if (s >= 2 * 86400 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

namespace {

std::string saving_text(const Recommendation& r) {
  return r.saving_per_month_micros ? money(*r.saving_per_month_micros) : "unknown";
}

// Held hours behind a row, to the thousandth of an hour (3.6 s).
double evidence_hours(const Recommendation& r) { return std::round(r.evidence.evidence_seconds / 3.6) / 1000.0; }

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json opt(const std::optional<uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string bytes_text(const std::optional<uint64_t>& v, const std::string& unknown) {
  return v ? fixed(static_cast<double>(*v) / 1e9, 2) : unknown;
}
std::string ratio_text(const std::optional<double>& v, const std::string& unknown) { return v ? fixed(*v, 4) : unknown; }

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::string headroom_text(int64_t micros) { return format_micros(micros).substr(0, 4); }

const std::vector<std::string> kColumns = {"recommendation", "target",         "saving_per_month", "confidence",
                                           "evidence_hours", "vram_peak_gb",   "vram_p95_gb",      "sm_active_p95",
                                           "busy_share",     "idle_longest",   "windows",          "sources",
                                           "limited"};

// Raw cells: the table shows them with display_name, the HTML with html_escape.
std::vector<std::vector<std::string>> table_lines(const Rightsizing& r) {
  std::vector<std::vector<std::string>> lines = {{r.by}};
  for (const auto& c : kColumns) lines[0].push_back(c);
  for (const auto& row : r.rows) {
    const auto& e = row.evidence;
    lines.push_back({row.key, std::string(to_string(row.advice)), row.target.empty() ? "-" : row.target,
                     saving_text(row), confidence_text(row.confidence_hundredths), fixed(evidence_hours(row), 1),
                     bytes_text(e.vram_peak_bytes, "unknown"), bytes_text(e.vram_p95_bytes, "unknown"),
                     e.sm_active_p95 ? pct(e.sm_active_p95) + (e.sm_source == "device" ? "" : " (" + e.sm_source + ")")
                                     : e.device_suspect_windows > 0 ? "suspect" : "unknown",
                     pct(e.busy_share), duration_text(static_cast<int64_t>(e.idle_seconds_longest)),
                     std::to_string(e.windows), e.sources.empty() ? "-" : joined(e.sources, "+"),
                     row.limited ? "yes" : "no"});
  }
  return lines;
}

// The pods a namespace's or team's row stands for: " (ns/a, ns/b)"; nothing when the row is one of them.
std::string members_text(const Recommendation& row) {
  if (row.members.size() == 1 && row.members.front() == row.key) return "";
  std::vector<std::string> names;
  for (size_t i = 0; i < row.members.size() && i < 5; ++i) names.push_back(display_name(row.members[i]));
  if (row.members.size() > 5) names.push_back(std::to_string(row.members.size() - 5) + " more");
  return " (" + joined(names, ", ") + ")";
}

std::string reasons(const Rightsizing& r) {
  std::ostringstream out;
  for (const auto& row : r.rows)
    out << "  " << display_name(row.key) << members_text(row) << ": " << to_string(row.advice) << (row.target.empty() ? "" : " " + row.target)
        << " - " << display_name(row.why) << "\n";
  return out.str();
}

// Where the idle runs came from, when not (only) from launches (probe_set_note.h).
std::string idle_source_text(const Rightsizing& r) {
  if (r.idle_source == "nvml")
    return "; idle runs from NVML's per-process samples, launches " + std::string(kNotProbedByBilling);
  if (r.idle_source == "mixed")
    return "; idle runs from launches, and from NVML's per-process samples where launches were " +
           std::string(kNotProbedByBilling);
  return "";
}

// Raw (the currency is configured text): each renderer escapes it.
std::string options_text(const Rightsizing& r) {
  return "idle_after " + duration_text(r.options.idle_after_seconds) + ", vram_headroom " +
         headroom_text(r.options.vram_headroom_micros) + ", min_evidence " +
         duration_text(r.options.min_evidence_seconds) + "; savings per month of " +
         std::to_string(kMonthSeconds / 3600) + " h, in " + r.currency + idle_source_text(r);
}

}  // namespace

nlohmann::json rightsizing_json(const Rightsizing& r) {
  nlohmann::json j;
  j["from"] = format_utc(r.from, "%Y-%m-%dT%H:%M:%SZ");
  j["to"] = format_utc(r.to, "%Y-%m-%dT%H:%M:%SZ");
  j["by"] = r.by;
  j["currency"] = r.currency;
  j["period_seconds"] = r.period_seconds;
  j["month_seconds"] = kMonthSeconds;
  j["idle_after_seconds"] = r.options.idle_after_seconds;
  j["vram_headroom"] = format_micros(r.options.vram_headroom_micros);
  j["min_evidence_seconds"] = r.options.min_evidence_seconds;
  if (r.idle_source != "launches") j["idle_source"] = r.idle_source;  // launches when absent
  if (r.launches_not_probed) j["launches_not_probed"] = std::string(kNotProbedByBilling);
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) {
    const auto& e = row.evidence;
    j["rows"].push_back(
        {{"key", row.key},
         {"recommendation", std::string(to_string(row.advice))},
         {"target", row.target},
         {"saving_per_month", row.saving_per_month_micros ? nlohmann::json(money(*row.saving_per_month_micros))
                                                          : nlohmann::json(nullptr)},
         {"saving_per_month_micros",
          row.saving_per_month_micros ? nlohmann::json(*row.saving_per_month_micros) : nlohmann::json(nullptr)},
         {"confidence", row.confidence_hundredths / 100.0},
         {"evidence_hours", evidence_hours(row)},
         {"limited", row.limited},
         {"why", row.why},
         {"cost_micros", row.cost_micros},
         {"members", row.members},
         {"evidence",
          {{"vram_peak_bytes", opt(e.vram_peak_bytes)},
           {"vram_p95_bytes", opt(e.vram_p95_bytes)},
           {"sm_active_p95", opt(e.sm_active_p95)},
           {"sm_occupancy_p95", opt(e.sm_occupancy_p95)},
           {"dram_active_p95", opt(e.dram_active_p95)},
           {"tensor_active_p95", opt(e.tensor_active_p95)},
           {"steadiness", e.steadiness_thousandths / 1000.0},
           {"sm_source", e.sm_source},
           {"busy_share", e.busy_share},
           {"idle_seconds_longest", e.idle_seconds_longest},
           {"windows", e.windows},
           {"launches", r.launches_not_probed ? nlohmann::json(nullptr) : nlohmann::json(e.launches)},
           {"sources", e.sources},
           {"models", e.models}}}});
    if (e.device_suspect_windows > 0) {  // only then: ranges with clean device data keep their JSON
      j["rows"].back()["device_data"] = "suspect";
      j["rows"].back()["evidence"]["device_suspect_windows"] = e.device_suspect_windows;
      j["rows"].back()["evidence"]["device_suspect_reasons"] = e.device_findings;
    }
  }
  return j;
}

std::string render_rightsizing_json(const Rightsizing& r) {
  return rightsizing_json(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string render_rightsizing_csv(const Rightsizing& r) {
  std::string out =
      "key,recommendation,target,saving_per_month,saving_per_month_micros,limited,why,vram_peak_bytes,vram_p95_bytes,"
      "sm_active_p95,sm_source,busy_share,idle_seconds_longest,windows,sources,currency,confidence,evidence_hours\r\n";
  for (const auto& row : r.rows) {
    const auto& e = row.evidence;
    // Text cells are spreadsheet_text (no formula, no control); amounts stay numbers.
    const std::vector<std::string> cells = {
        spreadsheet_text(row.key),
        std::string(to_string(row.advice)),
        spreadsheet_text(row.target),
        row.saving_per_month_micros ? money(*row.saving_per_month_micros) : "",
        row.saving_per_month_micros ? std::to_string(*row.saving_per_month_micros) : "",
        row.limited ? "true" : "false",
        spreadsheet_text(row.why),
        e.vram_peak_bytes ? std::to_string(*e.vram_peak_bytes) : "",
        e.vram_p95_bytes ? std::to_string(*e.vram_p95_bytes) : "",
        ratio_text(e.sm_active_p95, ""),
        spreadsheet_text(e.sm_source),
        fixed(e.busy_share, 6),
        fixed(e.idle_seconds_longest, 0),
        std::to_string(e.windows),
        spreadsheet_text(joined(e.sources, "+")),
        spreadsheet_text(r.currency),
        confidence_text(row.confidence_hundredths),
        fixed(evidence_hours(row), 3)};
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    out += "\r\n";
  }
  return out;
}

std::string rightsizing_table_section(const Rightsizing& r) {
  std::ostringstream out;
  out << "Recommendations (" << display_name(options_text(r)) << "; by saving)\n";
  if (r.rows.empty()) return out.str() + "  none\n";
  auto lines = table_lines(r);
  for (auto& line : lines)
    for (auto& cell : line) cell = display_name(cell);
  out << aligned_columns(lines, false);
  out << "Why\n" << reasons(r);
  return out.str();
}

std::string render_rightsizing_table(const Rightsizing& r) {
  std::ostringstream out;
  out << "GPU rightsizing " << format_utc(r.from, "%Y-%m-%dT%H:%M:%SZ") << " .. "
      << format_utc(r.to, "%Y-%m-%dT%H:%M:%SZ") << " by " << display_name(r.by) << "\n\n"
      << rightsizing_table_section(r);
  return out.str();
}

std::string rightsizing_html_section(const Rightsizing& r) {
  std::ostringstream h;
  h << "<h2>Recommendations</h2>\n<p class=\"note\">" << html_escape(options_text(r)) << ". Each line names the "
    << "evidence that decided it; a limited line rests on a number the device did not measure and states no saving."
    << " Its confidence (0 to 1) weighs the days of held time behind it (1 from a week) by how steady it was; with "
    << "less held time than min_evidence a line is limited too."
    << "</p>\n<table id=\"recommendations\"><thead><tr><th>" << html_escape(r.by) << "</th>";
  for (const auto& c : kColumns) h << "<th>" << html_escape(c) << "</th>";
  h << "<th>why</th></tr></thead><tbody>\n";
  const auto lines = table_lines(r);
  for (size_t i = 1; i < lines.size(); ++i) {
    h << "<tr" << (r.rows[i - 1].limited ? " class=\"limited\"" : "") << ">";
    for (const auto& cell : lines[i]) h << "<td>" << html_escape(cell) << "</td>";
    h << "<td>" << html_escape(r.rows[i - 1].why) << "</td></tr>\n";
  }
  if (r.rows.empty()) h << "<tr><td colspan=\"" << kColumns.size() + 2 << "\">none</td></tr>\n";
  h << "</tbody></table>\n";
  return h.str();
}

}  // namespace gpuledger::report
