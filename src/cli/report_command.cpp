// `gpuledger report`: renders the chargeback from the ledger store or, with
// --prometheus, for the whole fleet; `gpuledger rightsize`: its recommendations alone.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <tuple>

#include "cli/commands.h"
#include "cli/fleet_bill_source.h"
#include "cli/report_output.h"
#include "common/error.h"
#include "common/short_process_malloc.h"
#include "common/utf8.h"
#include "fleet/fleet_reader.h"
#include "ledger/store.h"
#include "report/bill.h"
#include "report/bill_words.h"
#include "report/fleet.h"
#include "report/report.h"
#include "report/report_text.h"
#include "report/report_time.h"
#include "report/rightsizing_config.h"
#include "report/rightsizing_render.h"

namespace gpuledger::cli {

namespace {

// The generation time printed on the bill: now, or SOURCE_DATE_EPOCH when set
// (the reproducible-builds convention), so the same ledger renders the same file.
int64_t generation_time(int64_t now) {
  const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
  if (!epoch || !*epoch) return now;
  const std::string text = epoch;
  if (text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    throw Error("SOURCE_DATE_EPOCH '" + text + "': expected Unix seconds");
  return std::stoll(text);
}

// The range of --month, or of --from and --to.
std::pair<int64_t, int64_t> report_range(const std::string& month, const std::string& from_text,
                                         const std::string& to_text, int64_t now) {
  int64_t from = 0, to = 0;
  if (!month.empty()) {
    std::tie(from, to) = report::parse_month(month);
  } else {
    from = report::parse_time(from_text, now);
    to = report::parse_time(to_text, now);
  }
  if (to <= from) throw Error("--to must be after --from");
  return {from, to};
}

// The rightsizing options: --config's `rightsizing:` section, then the flags.
template <typename Command>
report::RightsizingOptions rightsizing_options(const Command& cmd) {
  report::RightsizingOptions o =
      cmd.config.empty() ? report::RightsizingOptions{} : report::load_rightsizing_section(cmd.config);
  if (!cmd.idle_after.empty()) o.idle_after_seconds = report::parse_idle_after(cmd.idle_after);
  if (!cmd.vram_headroom.empty()) o.vram_headroom_micros = report::parse_vram_headroom(cmd.vram_headroom);
  if (!cmd.min_evidence.empty()) o.min_evidence_seconds = report::parse_idle_after(cmd.min_evidence, "--min-evidence");
  return o;
}

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_rightsize(const RightsizeCommand& cmd) {
  using namespace report;
  const auto [from, to] = report_range(cmd.month, cmd.from, cmd.to, now_seconds());
  const GroupBy by = parse_rightsizing_by(cmd.by);
  if (cmd.format != "table" && cmd.format != "json" && cmd.format != "csv")
    throw Error("--format: unknown format '" + cmd.format + "' (table, json or csv)");
  const RightsizingOptions options = rightsizing_options(cmd);
  ledger::Store store(cmd.store, ledger::Store::Mode::kReadOnly);
  const Rightsizing r = rightsize(store, from, to, by, options);
  const std::string text = cmd.format == "json" ? render_rightsizing_json(r)
                           : cmd.format == "csv" ? valid_utf8(render_rightsizing_csv(r))
                                                 : valid_utf8(render_rightsizing_table(r));
  write_output(cmd.output, text, cmd.store);
  return 0;
}

namespace {

// An option given for a format it does not apply to is an error, not ignored.
void check_options_apply(const ReportCommand& cmd, report::Format format) {
  using report::Format;
  auto refuse = [&](const std::string& option, const std::string& formats) {
    throw Error(option + " applies to --format " + formats + " only, not " + cmd.format);
  };
  if (cmd.csv_totals && format != Format::kCsv) refuse("--csv-totals", "csv");
  if (cmd.wide && format != Format::kTable) refuse("--wide", "table");
  if (!cmd.granularity.empty() && format != Format::kCsv && format != Format::kFocus) refuse("--granularity", "csv and focus");
  if (format == Format::kFocus && cmd.by_given)
    throw Error("--by does not apply to --format focus, which has one row per account and GPU (with their team, "
                "namespace and pod in Tags)");
  // The recommendations' options: CSV and FOCUS carry no recommendations.
  if (format == Format::kCsv || format == Format::kFocus)
    for (const auto& [option, value] :
         {std::pair{"--config", &cmd.config}, {"--idle-after", &cmd.idle_after}, {"--vram-headroom", &cmd.vram_headroom},
          {"--min-evidence", &cmd.min_evidence}})
      if (!value->empty()) refuse(option, "table, json and html (the recommendations)");
  if (!cmd.prometheus.empty()) {
    if (format == Format::kFocus)
      throw Error("--format focus needs the ledger's windows: it is made from a --store, not from --prometheus");
    if (!cmd.granularity.empty()) throw Error("--granularity needs the ledger's windows: it is not available with --prometheus");
  } else if (cmd.timeout_ms_given) {
    throw Error("--timeout-ms applies to --prometheus only");
  }
}

// CSV and FOCUS stay loadable (a header, no rows): the reader is told beside them.
void tell_no_windows(const report::Report& whole, report::Format format) {
  if (whole.coverage.windows == 0 && (format == report::Format::kCsv || format == report::Format::kFocus))
    std::cerr << "gpuledger report: " << report::display_name(report::no_windows_sentence(whole)) << "\n";
}

}  // namespace

int run_report(const ReportCommand& cmd) {
  using namespace report;
  const int64_t now = now_seconds();
  const auto [from, to] = report_range(cmd.month, cmd.from, cmd.to, now);
  BillRequest q;
  q.from = from;
  q.to = to;
  q.by = parse_group_by(cmd.by);
  q.format = parse_format(cmd.format);
  check_options_apply(cmd, q.format);
  q.granularity = cmd.granularity.empty() ? Granularity::kDay : parse_granularity(cmd.granularity);
  q.rightsizing = rightsizing_options(cmd);
  q.generated_at = generation_time(now);
  q.csv_totals = cmd.csv_totals;
  q.wide = cmd.wide;
  const std::string fleet_db = cmd.fleet_db.resolve(false);
  if (fleet_db.empty() && (!cmd.cluster.empty() || !cmd.node.empty()))
    throw Error("--cluster and --node filter a fleet report: give --fleet-db");
  if (q.by == GroupBy::kNode && fleet_db.empty()) throw Error("--by node needs a fleet report: give --fleet-db");
  if (!fleet_db.empty() && !cmd.prometheus.empty()) throw Error("--fleet-db and --prometheus exclude each other");
  if ((q.by == GroupBy::kUser || q.by == GroupBy::kAccount) && !cmd.prometheus.empty())
    throw Error("--by " + cmd.by + ": Prometheus' series carry no Slurm user or account; give --store or --fleet-db");
  std::string text;
  Report whole;
  if (!fleet_db.empty()) {
    // Hundreds of thousands of bodies received, parsed and freed: malloc set
    // for a short process, its heap in huge pages (common/short_process_malloc.h).
    tune_malloc_for_a_short_process(256 << 20);
    const FleetBillSource fleet_source(cmd, q, fleet_db);
    const fleet::FleetReadNotes& notes = fleet_source.notes();
    // The text written as it is made (a FOCUS export, period by period).
    // What the reader should be told goes to stderr before it, as for the
    // other sources (notes of a FOCUS export's periods, read after, at its end).
    int64_t told_refused = -1;
    auto tell = [&](const fleet::FleetReadNotes& n) {
      for (const auto& warning : fleet::fleet_read_warnings(n)) std::cerr << "gpuledger report: " << warning << "\n";
    };
    write_output(cmd.output, cmd.store, [&](const OutputSink& sink) {
      write_bill(fleet_source.source(), q, &whole, [&](std::string_view piece) {
        if (told_refused < 0) {
          tell(notes);
          tell_no_windows(whole, q.format);
          told_refused = notes.refused_rollups;
        }
        sink(piece);
      });
    });
    if (notes.refused_rollups > told_refused) {
      fleet::FleetReadNotes more;
      more.refused_rollups = notes.refused_rollups - std::max<int64_t>(0, told_refused);
      tell(more);
    }
    return 0;
  } else if (!cmd.prometheus.empty()) {
    Report r = fleet_report(cmd.prometheus, from, to, q.by, cmd.timeout_ms);
    r.generated_at = q.generated_at;
    r.audit.partial_period = to > q.generated_at;
    text = render(r, q.format, RenderOptions{cmd.csv_totals, cmd.wide});
  } else {
    ledger::Store store(cmd.store, ledger::Store::Mode::kReadOnly);
    text = render_bill(store, q, &whole);
  }
  if (cmd.prometheus.empty()) tell_no_windows(whole, q.format);
  write_output(cmd.output, text, cmd.prometheus.empty() ? cmd.store : "");
  return 0;
}

}  // namespace gpuledger::cli
