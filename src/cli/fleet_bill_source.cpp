#include "cli/fleet_bill_source.h"

#include <future>
#include <memory>
#include <utility>

#include "common/handed_over.h"
#include "fleet/fleet_chart.h"
#include "fleet/fleet_schema.h"
#include "fleet/second_reader.h"
#include "fleet/windows_digest.h"
#include "ledger/store.h"
#include "report/chart_time.h"

namespace gpuledger::cli {

namespace {

ledger::BillInputs fleet_bill_inputs(const std::set<std::string>& origins) {
  ledger::BillInputs inputs;
  std::set<std::string> clusters, nodes;
  for (const auto& o : origins) {
    auto [cluster, node] = ledger::window_origin(o);
    clusters.insert(std::move(cluster));
    nodes.insert(std::move(node));
  }
  if (clusters.size() == 1) inputs.cluster = *clusters.begin();
  if (clusters.size() == 1 && nodes.size() == 1) inputs.node = *nodes.begin();
  return inputs;
}

// The fleet roll-ups (fleet/fleet_reader.h) of a charge period: CSV and FOCUS rows.
fleet::Period fleet_charge_period(report::Granularity g) {
  if (g == report::Granularity::kMonth) return fleet::Period::kMonth;
  return g == report::Granularity::kDay ? fleet::Period::kDay : fleet::Period::kHour;
}

// The period of the chart's bucket (cost over time) of a JSON or HTML report;
// nullopt: shorter than an hour, or no chart.
std::optional<fleet::Period> fleet_chart_period(const report::BillRequest& q) {
  if (q.format != report::Format::kJson && q.format != report::Format::kHtml) return std::nullopt;
  const int64_t bucket = report::chart_bucket_seconds(q.to - q.from, 60);
  if (bucket % 86400 == 0) return fleet::Period::kDay;
  if (bucket % 3600 == 0) return fleet::Period::kHour;
  return std::nullopt;
}

// FOCUS, and CSV by hour or day without a totals row: their rows read at
// their charge period (BillSource::for_each_window_in), apart from the whole
// bill's first pass by month (by month, one read serves both).
bool rows_read_apart(const report::BillRequest& q) {
  return q.format == report::Format::kFocus ||
         (q.format == report::Format::kCsv && !q.csv_totals && q.granularity != report::Granularity::kMonth);
}

// The coarsest fleet roll-ups a bill can be read from without showing less:
// the charge period of CSV rows read with the whole bill, the chart's bucket of JSON
// and HTML (cost over time) unless the server sums the chart
// (`chart_from_server`: fleet_chart.h), a whole month for the table and for
// the first pass of a FOCUS export or a CSV without totals (its audit; their
// rows are read period by period: for_each_window_in, rows_read_apart).
std::optional<fleet::Period> fleet_rollup_period(const report::BillRequest& q, bool chart_from_server) {
  using report::Format;
  if (q.format == Format::kCsv && !rows_read_apart(q)) return fleet_charge_period(q.granularity);
  if ((q.format == Format::kJson || q.format == Format::kHtml) && !chart_from_server) return fleet_chart_period(q);
  return fleet::Period::kMonth;
}

fleet::PgConnection& checked(fleet::PgConnection& db) {
  fleet::check_schema(db);
  return db;
}

fleet::FleetFilter filter_of(const ReportCommand& cmd) {
  fleet::FleetFilter filter;
  if (!cmd.cluster.empty()) filter.cluster = cmd.cluster;
  if (!cmd.node.empty()) filter.node = cmd.node;
  return filter;
}

}  // namespace

FleetBillSource::FleetBillSource(const ReportCommand& cmd, const report::BillRequest& q, const std::string& conninfo)
    : q_(q),
      conninfo_(conninfo),
      password_file_(cmd.fleet_db.password_file),
      filter_(filter_of(cmd)),
      db_(conninfo_, password_file_),
      snapshot_(checked(db_)) {
  using report::BillSource;
  // The same bill as a node's, from every node's windows: the builder, the
  // FOCUS rows and the audit are fed the fleet database's records.
  source_.for_each_window = [this](const std::function<void(ledger::WindowRecord &&)>& fn) { read_whole(fn); };
  source_.windows_digest = [this] { return windows_digest_; };
  source_.chart_costs = [this] { return chart_; };
  if (rows_read_apart(q))
    source_.for_each_window_in = [this](int64_t a, int64_t b, const std::function<void(ledger::WindowRecord &&)>& fn) {
      fleet::for_each_fleet_window(db_, a, b, filter_, fleet_charge_period(q_.granularity), fn, nullptr, nullptr,
                                   &notes_);
    };
  if (rows_read_apart(q) && q.format == report::Format::kCsv)
    source_.second_reader = [this]() -> BillSource::WindowsIn {
      std::shared_ptr<fleet::SecondReader> second =
          fleet::SecondReader::open(snapshot_, conninfo_, password_file_, notes_);
      if (!second) return nullptr;
      return [this, second](int64_t a, int64_t b, const std::function<void(ledger::WindowRecord &&)>& fn) {
        second->read(a, b, filter_, fleet_charge_period(q_.granularity), fn);
      };
    };
  // The bill names a node and a cluster when all its windows came from one;
  // the price lists stay with each node's store (not in the fleet database).
  source_.inputs = [this] { return fleet_bill_inputs(origins_); };
  source_.report_source = "fleet-db";
}

// The whole range. What names its windows (the bill id's digest) and what the
// reader should be told are read on a second connection in the snapshot while
// this one reads the windows: it was all the client and the server did before
// the first window came: at 1,000 nodes 4.95-5.69 s -> 4.27-4.42 s, the same
// text (docs/performance.md, "Two connections"). The digest's ragged ends (a
// month to date's last 30 minutes: 240,000 windows) are hashed here as this
// read meets them, not read a second time there (windows_digest.h). A CSV
// whose rows the second connection reads (second_reader) reads them here, as before.
//
// A JSON or HTML report's chart is summed by the server there too, and the
// windows read meanwhile at the coarsest roll-ups, as they are when it can
// be: a month to date's chart statements were 2.6-3.1 s of server time that
// the first connection waited for (docs/performance.md, "The chart aside").
// Where it cannot (a roll-up no longer matches its windows), the chart is
// read apart at its period (chart_read_at): the same chart, the same money
// and bill id as when the rows were read at that period too.
void FleetBillSource::read_whole(const std::function<void(ledger::WindowRecord&&)>& fn) {
  const int64_t from = q_.from, to = q_.to;
  const std::optional<fleet::Period> chart_period = fleet_chart_period(q_);
  std::unique_ptr<fleet::SecondReader> side;
  if (!source_.second_reader) side = fleet::SecondReader::open(snapshot_, conninfo_, password_file_, notes_);
  struct Aside {
    fleet::RangeNames names;
    std::optional<report::ChartCosts> chart;
  };
  std::future<Aside> aside;  // declared after `side`: ended (waited for) before it
  if (side)
    aside = std::async(std::launch::async, [&] {
      Aside a;
      if (chart_period) a.chart = side->chart(from, to, filter_, *chart_period);
      a.names = side->names(from, to, filter_, true);  // the ragged ends' windows hashed as read here
      return a;
    });
  else if (chart_period)
    chart_ = fleet::read_chart_costs(db_, from, to, filter_, *chart_period);
  fleet::FleetReadNotes unread;  // the bodies this read could not read, when the notes are read aside
  fleet::WindowsDigest ragged;   // the digest's ragged ends, when its totals are read aside
  const auto period = fleet_rollup_period(q_, side ? chart_period.has_value() : chart_.has_value());
  // Read on a thread of its own, billed on this one (common/handed_over.h).
  hand_over<ledger::WindowRecord>(
      [&](const std::function<void(ledger::WindowRecord &&)>& push) {
        fleet::for_each_fleet_window(db_, from, to, filter_, period, push, side ? nullptr : &windows_digest_,
                                     side ? nullptr : &notes_, side ? &unread : nullptr, side ? &ragged : nullptr);
      },
      [&](ledger::WindowRecord&& w) {
        origins_.insert(w.node);
        fn(std::move(w));
      });
  if (!side) return;
  Aside read = aside.get();
  chart_ = std::move(read.chart);
  if (chart_period && !chart_) chart_ = chart_read_at(*chart_period, unread);
  windows_digest_ = ragged.finish(read.names.totals);
  notes_ = std::move(read.names.notes);
  fleet::add_unreadable(notes_, unread.unreadable);
}

// The chart the server could not sum: the range read again at the chart's
// period, its costs counted as the report's builder counts them.
report::ChartCosts FleetBillSource::chart_read_at(fleet::Period period, fleet::FleetReadNotes& unread) {
  report::ReportBuilder chart(q_.from, q_.to, report::GroupBy::kTeam, std::nullopt);
  fleet::for_each_fleet_window(
      db_, q_.from, q_.to, filter_, period, [&](ledger::WindowRecord&& w) { chart.add(w); }, nullptr, nullptr, &unread);
  return chart.chart_costs();
}

}  // namespace gpuledger::cli
