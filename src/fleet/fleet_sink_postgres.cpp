#include "fleet/fleet_sink_postgres.h"

#include <map>
#include <tuple>

#include "common/error.h"
#include "fleet/fleet_schema.h"
#include "fleet/window_json.h"
#include "report/charge_period.h"

namespace gpuledger::fleet {

namespace {

constexpr size_t kMaxParams = 60000;  // PostgreSQL's limit is 65535 per statement
const std::vector<std::string> kKey = {"cluster", "node", "gpu_uuid", "start_time"};

// INSERT of many rows in as few statements as the parameter limit allows;
// `tail` ends each statement (ON CONFLICT, RETURNING).
std::vector<PgResult> insert_rows(PgConnection& db, const std::string& table, const std::vector<std::string>& columns,
                                  const std::vector<const std::vector<PgParam>*>& rows, const std::string& tail = "") {
  std::vector<PgResult> results;
  std::string head = "INSERT INTO gpuledger." + table + "(";
  for (size_t i = 0; i < kKey.size() + columns.size(); ++i)
    head += (i ? "," : "") + (i < kKey.size() ? kKey[i] : columns[i - kKey.size()]);
  head += ") VALUES ";
  const size_t width = kKey.size() + columns.size(), per = kMaxParams / width;
  for (size_t first = 0; first < rows.size(); first += per) {
    std::string sql = head;
    std::vector<PgParam> params;
    for (size_t r = first; r < rows.size() && r < first + per; ++r) {
      sql += r == first ? "(" : ",(";
      for (size_t c = 0; c < width; ++c) {
        params.push_back((*rows[r])[c]);
        sql += (c ? ",$" : "$") + std::to_string(params.size());
      }
      sql += ")";
    }
    results.push_back(db.query(sql + tail, params));
  }
  return results;
}

}  // namespace

FleetSinkPostgres::FleetSinkPostgres(PgConnection& db, Origin origin) : db_(db), origin_(std::move(origin)) {}

void FleetSinkPostgres::ensure_month(int64_t t) {
  // Outside the batch's transaction: a partition created by one agent is seen by all.
  const int64_t month = report::period_start(t, report::Granularity::kMonth);
  if (months_.count(month)) return;
  db_.query("SELECT gpuledger.ensure_month($1)", {std::to_string(month)});
  months_.insert(month);
}

void FleetSinkPostgres::in_transaction(const std::function<void()>& fn) {
  auto rollback = [&] {
    if (!db_.ok()) return;
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
  };
  db_.exec("BEGIN");
  try {
    fn();
    db_.exec("COMMIT");
  } catch (const Error& e) {
    rollback();
    if (std::string(e.what()).find("row-level security") == std::string::npos) throw;
    throw Error("fleet database " + db_.name() + ": " + kNotThisNode + ", not those of " + origin_.cluster + "/" +
                origin_.node + " (run `gpuledger fleet-db add-node " + origin_.node + " --cluster " + origin_.cluster +
                "` as the owner and give this node the role it prints); they stay pending in the store");
  } catch (...) {
    rollback();
    throw;
  }
}

std::vector<Delivery> FleetSinkPostgres::ship_rollups(const std::vector<Rollup>& rollups) {
  std::vector<Delivery> out(rollups.size(), Delivery::kStored);
  if (rollups.empty()) return out;
  std::vector<std::vector<PgParam>> rows;
  for (const auto& r : rollups) {
    ensure_month(r.period_start);
    std::string body = window_to_json(r.window);
    std::string digest = sha256_hex(body);
    rows.push_back({std::string(to_string(r.period)), std::to_string(r.period_start), origin_.cluster, origin_.node,
                    r.window.slot.uuid, std::to_string(r.windows), std::to_string(r.window.cost_micros),
                    decimal(r.digests), std::move(digest), std::move(body)});
  }
  in_transaction([&] {
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& row = rows[i];
      PgResult done = db_.query(
          "INSERT INTO gpuledger.rollups(period, period_start, cluster, node, gpu_uuid, windows, cost_micros, digests, "
          "digest, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::json) ON CONFLICT DO NOTHING RETURNING verified",
          row);
      if (done.rows() == 1) {
        if (done.text(0, 0) != "t") out[i] = Delivery::kUnverified;
        continue;
      }
      PgResult stored = db_.query(
          "SELECT digest FROM gpuledger.rollups WHERE period = $1 AND period_start = $2 AND cluster = $3 AND node = $4 "
          "AND gpu_uuid = $5 AND windows = $6",
          {row[0], row[1], row[2], row[3], row[4], row[5]});
      out[i] = stored.rows() == 1 && stored.text(0, 0) == *row[8] ? Delivery::kDuplicate : Delivery::kConflict;
    }
  });
  return out;
}

std::vector<Delivery> FleetSinkPostgres::ship(const std::vector<const ledger::WindowRecord*>& windows) {
  std::vector<Delivery> out(windows.size(), Delivery::kStored);
  if (windows.empty()) return out;
  for (const auto* w : windows) ensure_month(w->start);
  std::vector<WindowRows> rows;
  rows.reserve(windows.size());
  for (const auto* w : windows) rows.push_back(to_rows(origin_, *w));
  in_transaction([&] {
    // The windows first: those already there come back missing from RETURNING.
    std::vector<const std::vector<PgParam>*> window_rows;
    for (const auto& r : rows) window_rows.push_back(&r.window);
    std::map<std::pair<std::string, int64_t>, size_t> index;  // (gpu, start) -> batch position
    for (size_t i = 0; i < windows.size(); ++i) index[{windows[i]->slot.uuid, windows[i]->start}] = i;
    std::vector<bool> inserted(windows.size(), false);
    for (const PgResult& done :
         insert_rows(db_, "windows", kWindowColumns, window_rows,
                     " ON CONFLICT (cluster, node, gpu_uuid, start_time) DO NOTHING RETURNING gpu_uuid, start_time"))
      for (int i = 0; i < done.rows(); ++i) inserted[index.at({done.text(i, 0), done.i64(i, 1)})] = true;
    std::vector<const std::vector<PgParam>*> accounts, charges, energy;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!inserted[i]) continue;
      for (const auto& r : rows[i].accounts) accounts.push_back(&r);
      for (const auto& r : rows[i].charges) charges.push_back(&r);
      for (const auto& r : rows[i].energy_charges) energy.push_back(&r);
    }
    // Rows of one width per statement: those without Slurm names name neither column.
    std::vector<const std::vector<PgParam>*> named, plain;
    for (const auto* r : accounts) (account_width(*r) == r->size() ? named : plain).push_back(r);
    insert_rows(db_, "accounts", kAccountColumns, named);
    insert_rows(db_, "accounts", {kAccountColumns.begin(), kAccountColumns.end() - 2}, plain);
    insert_rows(db_, "charges", kChargeColumns, charges);
    insert_rows(db_, "energy_charges", kEnergyChargeColumns, energy);
    // The rest were there: a resend when the digests agree, else a conflict.
    for (size_t i = 0; i < rows.size(); ++i) {
      if (inserted[i]) continue;
      PgResult stored = db_.query(
          "SELECT digest FROM gpuledger.windows WHERE cluster = $1 AND node = $2 AND gpu_uuid = $3 AND start_time = $4",
          {rows[i].window[0], rows[i].window[1], rows[i].window[2], rows[i].window[3]});
      out[i] = stored.rows() == 1 && stored.text(0, 0) == rows[i].digest ? Delivery::kDuplicate : Delivery::kConflict;
    }
  });
  return out;
}

}  // namespace gpuledger::fleet
