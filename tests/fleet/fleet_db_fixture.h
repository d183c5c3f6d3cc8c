#pragma once
// Test support: a FleetDb test starts its own PostgreSQL (pg_server.h),
// migrates it as the owner and has a scratch folder for local stores.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_shipper.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/pg_connection.h"
#include "fleet_windows.h"
#include "ledger/store.h"
#include "metrics/prometheus_text.h"
#include "pg_server.h"
#include "report/bill.h"
#include "report/report.h"

namespace gpuledger::testing {

inline bool eventually(const std::function<bool()>& ok, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ok();
}

class FleetDb : public ::testing::Test {
 protected:
  void SetUp() override {
    pg_ = std::make_unique<PgServer>();
    admin_ = std::make_unique<fleet::PgConnection>(pg_->conninfo(), pg_->admin_password_file());
    ASSERT_EQ(fleet::migrate(*admin_, kFleetT0), fleet::kFleetSchemaVersion);
    char tmpl[] = "/tmp/gpuledger-fleet-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    scratch_ = tmpl;
  }
  void TearDown() override {
    admin_.reset();
    pg_.reset();
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
  }
  int64_t count(const std::string& table) { return std::stoll(pg_->psql("SELECT count(*) FROM gpuledger." + table)); }
  std::unique_ptr<PgServer> pg_;
  std::unique_ptr<fleet::PgConnection> admin_;
  std::filesystem::path scratch_;
};

inline std::vector<const ledger::WindowRecord*> pointers(const std::vector<ledger::WindowRecord>& ws) {
  std::vector<const ledger::WindowRecord*> out;
  for (const auto& w : ws) out.push_back(&w);
  return out;
}

// Every row a query returns, each value as the server prints it (NULL apart).
inline std::string rows_of(fleet::PgConnection& db, const std::string& sql) {
  fleet::PgResult r = db.query(sql);
  std::string out;
  for (int i = 0; i < r.rows(); ++i) {
    for (int c = 0; c < r.columns(); ++c) out += (c ? "|" : "") + (r.null(i, c) ? std::string("NULL") : r.text(i, c));
    out += "\n";
  }
  return out;
}

// The error a statement ends with ("" when it ran).
inline std::string refusal(fleet::PgConnection& db, const std::string& sql,
                           const std::vector<fleet::PgParam>& params = {}) {
  try {
    db.query(sql, params);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// node-a's window of GPU-a at $1 (its energy $2, NULL: unknown) with the body $3, as an agent could send it.
inline constexpr const char* kAgentWindowInsert =
    "INSERT INTO gpuledger.windows(cluster, node, gpu_uuid, start_time, end_time, parent_uuid, model, gpu_fraction, "
    "currency, cost_micros, busy_micros, idle_micros, memory_micros, cost_policy, allocated_total, busy_fraction, "
    "busy_source, exclusive, observed_seconds, source, split_source, digest, energy_millijoules, body) "
    "VALUES ('prod', 'node-a', 'GPU-a', $1::bigint, $1::bigint + 60, '', 'm', 1, 'USD', 60000, 36000, 24000, 0, "
    "'usage', 1, 1, 'device', true, 60, 'sim', '', 'd', $2::bigint, $3::json)";

constexpr int64_t kFleetDay0 = kFleetT0 / 86400 * 86400;  // 2027-01-15T00:00:00Z

// Two GPUs, a window a minute from day 0 22:00 to day 2 01:30: hours, days and ragged ends to roll up.
inline std::vector<ledger::WindowRecord> two_gpus() {
  std::vector<ledger::WindowRecord> ws;
  for (int64_t t = kFleetDay0 + 22 * 3600; t < kFleetDay0 + 2 * 86400 + 5400; t += 60)
    for (const char* gpu : {"GPU-a", "GPU-b"}) ws.push_back(fleet_window(t, gpu, (t / 60) % 97));
  return ws;
}

// A shipper of `store` to the database as `origin`, quick to look and to retry.
inline fleet::FleetShipperOptions shipper_options(const std::string& conninfo, const std::string& password_file,
                                                  const std::string& store, fleet::Origin origin) {
  fleet::FleetShipperOptions o;
  o.conninfo = conninfo;
  o.password_file = password_file;
  o.store_path = store;
  o.origin = std::move(origin);
  o.interval = std::chrono::milliseconds(50);
  o.first_retry = o.max_retry = std::chrono::milliseconds(100);
  return o;
}

// A shipper's /metrics page, a line of it, a sample's value (-1: absent).
inline std::string metrics(const fleet::FleetShipper& s) {
  metrics::ExpositionWriter out;
  s.write_metrics(out);
  return out.text();
}
inline bool has_line(const std::string& page, const std::string& line) {
  return ("\n" + page).find("\n" + line + "\n") != std::string::npos;
}
inline int64_t sample(const std::string& page, const std::string& series) {
  const size_t at = ("\n" + page).find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::stoll(page.substr(at + series.size() + 1));
}

// A fleet bill by team as a report reads it (roll-ups no coarser than `coarsest`).
struct Read {
  int records = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> cost_by_team;  // busy, idle micros
  int64_t energy = 0, total = 0;
  std::string windows_digest;  // names the windows, whatever was read
  fleet::FleetReadNotes notes;
};
inline Read read(fleet::PgConnection& db, int64_t from, int64_t to, std::optional<fleet::Period> coarsest) {
  Read out;
  report::ReportBuilder builder(from, to, report::GroupBy::kTeam);
  fleet::for_each_fleet_window(
      db, from, to, {}, coarsest,
      [&](ledger::WindowRecord&& w) {
        ++out.records;
        builder.add(w);
      },
      &out.windows_digest, &out.notes);
  const auto r = builder.finish();
  for (const auto& row : r.rows) out.cost_by_team[row.key] = {row.cost_busy_micros, row.cost_idle_micros};
  out.energy = r.total.energy_millijoules.value_or(0);
  out.total = r.total.cost_total_micros();
  return out;
}

// Two reads bill the same windows the same, to the micro-unit.
inline void expect_same_bill(const Read& a, const Read& b) {
  EXPECT_EQ(a.windows_digest, b.windows_digest);
  EXPECT_EQ(a.cost_by_team, b.cost_by_team);
  EXPECT_EQ(a.energy, b.energy);
  EXPECT_EQ(a.total, b.total);
}

// A bill's source as `report --fleet-db` makes it for prod/node-1's windows,
// read at `period` (no chart from the server); `digest` receives the windows'.
inline report::BillSource fleet_bill_source(fleet::PgConnection& db, int64_t from, int64_t to,
                                            std::optional<fleet::Period> period, std::string& digest) {
  report::BillSource source;
  source.for_each_window = [&db, from, to, period, &digest](const std::function<void(ledger::WindowRecord&&)>& fn) {
    fleet::for_each_fleet_window(db, from, to, {}, period, fn, &digest);
  };
  source.windows_digest = [&digest] { return digest; };
  source.inputs = [] {
    ledger::BillInputs in;
    in.cluster = "prod";
    in.node = "node-1";
    return in;
  };
  source.report_source = "fleet-db";
  return source;
}

// A CSV or FOCUS export of prod/node-1's windows as it was made before its
// rows were read apart: every window of the range read at the charge period
// in one pass on db, the rows built whole in memory (report/bill.cpp's scan).
inline std::string export_in_one_read(fleet::PgConnection& db, int64_t from, int64_t to, report::Format format,
                                      report::Granularity g, int64_t generated_at) {
  std::string digest;
  const report::BillSource source = fleet_bill_source(db, from, to, fleet::Period(g), digest);
  report::BillRequest q;
  q.from = from;
  q.to = to;
  q.format = format;
  q.granularity = g;
  q.generated_at = generated_at;
  return report::render_bill(source, q);
}

// prod/node-1's two GPUs (two_gpus) drained by the shipper with their
// roll-ups, then a late window into day 1's 05:00 of GPU-a whose hour's and
// day's roll-ups are not sent again (a report reads them as hours and
// windows; it overlaps GPU-a's window there). Callers: ASSERT_NO_FATAL_FAILURE.
inline void ship_two_gpus_and_a_late_window(PgServer& pg, fleet::PgConnection& admin,
                                            const std::filesystem::path& scratch) {
  const std::string path = (scratch / "ledger.db").string();
  ledger::Store store(path);
  store.insert_windows(two_gpus());
  fleet::FleetShipper shipper(shipper_options(pg.conninfo(), pg.admin_password_file(), path, {"prod", "node-1"}));
  shipper.start();
  ASSERT_TRUE(eventually(
      [&] { return shipper.status().pending == 0 && pg.psql("SELECT count(*) FROM gpuledger.rollups") == "58\n"; },
      std::chrono::seconds(60)))
      << shipper.status().reason;  // 2 GPUs' 27 hours and 2 days
  shipper.stop();
  const auto late = fleet_window(kFleetDay0 + 86400 + 5 * 3600 + 30, "GPU-a", 5);
  fleet::FleetSinkPostgres sink(admin, {"prod", "node-1"});
  ASSERT_EQ(sink.ship({&late}), std::vector<fleet::Delivery>{fleet::Delivery::kStored});
}

}  // namespace gpuledger::testing
