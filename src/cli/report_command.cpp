// `gpuledger report`: renders the chargeback from the ledger store or, with
// --prometheus, for the whole fleet; `gpuledger rightsize`: its recommendations alone.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "common/error.h"
#include "common/utf8.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"
#include "ledger/store.h"
#include "report/fleet.h"
#include "report/report.h"
#include "report/rightsizing_config.h"
#include "report/rightsizing_render.h"

namespace gpuledger::cli {

namespace {

// The generation time printed on the bill: now, or SOURCE_DATE_EPOCH when set
// (the reproducible-builds convention), so the same ledger renders the same file.
int64_t generation_time(int64_t now) {
  const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
  if (!epoch || !*epoch) return now;
  try {
    return std::stoll(epoch);
  } catch (...) {
    throw Error(std::string("SOURCE_DATE_EPOCH '") + epoch + "': expected Unix seconds");
  }
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
report::RightsizingOptions rightsizing_options(const std::string& config, const std::string& idle_after,
                                               const std::string& vram_headroom) {
  report::RightsizingOptions o = config.empty() ? report::RightsizingOptions{} : report::load_rightsizing_section(config);
  if (!idle_after.empty()) o.idle_after_seconds = report::parse_idle_after(idle_after);
  if (!vram_headroom.empty()) o.vram_headroom_micros = report::parse_vram_headroom(vram_headroom);
  return o;
}

void write_out(const std::string& output, const std::string& text) {
  if (output.empty()) {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  if (!out || !(out << text) || !out.flush()) throw Error("--output " + output + ": cannot write");
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
  const RightsizingOptions options = rightsizing_options(cmd.config, cmd.idle_after, cmd.vram_headroom);
  ledger::Store store(cmd.store, ledger::Store::Mode::kReadOnly);
  const Rightsizing r = rightsize(store, from, to, by, options);
  const std::string text = cmd.format == "json" ? render_rightsizing_json(r)
                           : cmd.format == "csv" ? valid_utf8(render_rightsizing_csv(r))
                                                 : valid_utf8(render_rightsizing_table(r));
  write_out(cmd.output, text);
  return 0;
}

int run_report(const ReportCommand& cmd) {
  using namespace report;
  const int64_t now = now_seconds();
  const auto [from, to] = report_range(cmd.month, cmd.from, cmd.to, now);
  const GroupBy by = parse_group_by(cmd.by);
  const Format format = parse_format(cmd.format);
  const RightsizingOptions options = rightsizing_options(cmd.config, cmd.idle_after, cmd.vram_headroom);
  Report r;
  const std::string fleet_db = cmd.fleet_db.resolve(false);
  if (fleet_db.empty() && (!cmd.cluster.empty() || !cmd.node.empty()))
    throw Error("--cluster and --node filter a fleet report: give --fleet-db");
  if (by == GroupBy::kNode && fleet_db.empty()) throw Error("--by node needs a fleet report: give --fleet-db");
  if (!fleet_db.empty() && !cmd.prometheus.empty()) throw Error("--fleet-db and --prometheus exclude each other");
  if (!fleet_db.empty()) {
    fleet::PgConnection db(fleet_db, cmd.fleet_db.password_file);
    fleet::check_schema(db);
    fleet::FleetFilter filter;
    if (!cmd.cluster.empty()) filter.cluster = cmd.cluster;
    if (!cmd.node.empty()) filter.node = cmd.node;
    ReportBuilder builder(from, to, by, options);
    fleet::for_each_fleet_window(db, from, to, filter, [&](ledger::WindowRecord&& w) { builder.add(w); });
    r = builder.finish();
    r.source = "fleet-db";
  } else if (!cmd.prometheus.empty()) {
    r = fleet_report(cmd.prometheus, from, to, by, cmd.timeout_ms);
  } else {
    ledger::Store store(cmd.store, ledger::Store::Mode::kReadOnly);
    r = build_report(store, from, to, by, options);
  }
  r.generated_at = generation_time(now);
  write_out(cmd.output, render(r, format, RenderOptions{cmd.csv_totals}));
  return 0;
}

}  // namespace gpuledger::cli
