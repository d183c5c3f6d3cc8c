#include "fleet/fleet_sink_postgres.h"

#include <map>
#include <tuple>

#include "common/error.h"
#include "fleet/fleet_schema.h"

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

void FleetSinkPostgres::ensure_months(const std::vector<const ledger::WindowRecord*>& windows) {
  // Outside the batch's transaction: a partition created by one agent is seen by all.
  for (const auto* w : windows) {
    const int64_t month = month_start(w->start);
    if (months_.count(month)) continue;
    db_.query("SELECT gpuledger.ensure_month($1)", {std::to_string(month)});
    months_.insert(month);
  }
}

std::vector<Delivery> FleetSinkPostgres::ship(const std::vector<const ledger::WindowRecord*>& windows) {
  std::vector<Delivery> out(windows.size(), Delivery::kStored);
  if (windows.empty()) return out;
  ensure_months(windows);
  std::vector<WindowRows> rows;
  rows.reserve(windows.size());
  for (const auto* w : windows) rows.push_back(to_rows(origin_, *w));
  db_.exec("BEGIN");
  try {
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
    insert_rows(db_, "accounts", kAccountColumns, accounts);
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
    db_.exec("COMMIT");
  } catch (...) {
    if (db_.ok()) {
      try {
        db_.exec("ROLLBACK");
      } catch (...) {
      }
    }
    throw;
  }
  return out;
}

}  // namespace gpuledger::fleet
