// `gpuledger report`: renders the chargeback from the ledger store or, with
// --prometheus, for the whole fleet.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "common/error.h"
#include "ledger/store.h"
#include "report/fleet.h"
#include "report/report.h"

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

}  // namespace

int run_report(const ReportCommand& cmd) {
  using namespace report;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  int64_t from = 0, to = 0;
  if (!cmd.month.empty()) {
    std::tie(from, to) = parse_month(cmd.month);
  } else {
    from = parse_time(cmd.from, now);
    to = parse_time(cmd.to, now);
  }
  if (to <= from) throw Error("--to must be after --from");
  const GroupBy by = parse_group_by(cmd.by);
  const Format format = parse_format(cmd.format);
  Report r;
  if (!cmd.prometheus.empty()) {
    r = fleet_report(cmd.prometheus, from, to, by, cmd.timeout_ms);
  } else {
    ledger::Store store(cmd.store, ledger::Store::Mode::kReadOnly);
    r = build_report(store, from, to, by);
  }
  r.generated_at = generation_time(now);
  const std::string text = render(r, format, RenderOptions{cmd.csv_totals});
  if (cmd.output.empty()) {
    std::cout << text << std::flush;
  } else {
    std::ofstream out(cmd.output, std::ios::binary | std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) throw Error("--output " + cmd.output + ": cannot write");
  }
  return 0;
}

}  // namespace gpuledger::cli
