#include "fleet/fleet_sink_postgres.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/error.h"
#include "fleet/body_bounds.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_sql.h"
#include "fleet/window_json.h"
#include "report/charge_period.h"

namespace gpuledger::fleet {

namespace {

constexpr size_t kRowsPerStatement = 20000;  // bounds one statement's arrays
const std::vector<std::string> kKey = {"cluster", "node", "gpu_uuid", "start_time"};

// One column's values as an array's text: every element quoted, NULL bare.
std::string array_text(const std::vector<const std::vector<PgParam>*>& rows, size_t first, size_t last, size_t column) {
  size_t unescaped = 2;  // room for the rows as they are: a 4,000-window batch's bodies are ~5 MB
  for (size_t r = first; r < last; ++r) unescaped += 3 + ((*rows[r])[column] ? (*rows[r])[column]->size() : 4);
  std::string text;
  text.reserve(unescaped + unescaped / 4);
  text += '{';
  for (size_t r = first; r < last; ++r) {
    if (r > first) text += ',';
    const PgParam& v = (*rows[r])[column];
    if (v)
      append_array_element(text, *v);
    else
      text += "NULL";
  }
  text += '}';
  return text;
}

}  // namespace

// INSERT of many rows as one array per column, unnested by the server: the
// statement's text is the same whatever the rows, where a VALUES list of
// thousands of rows was parsed, analysed and planned each time (about 30 % of
// the server's CPU while agents ship: docs/performance.md). `tail` ends each
// statement (ON CONFLICT, RETURNING).
std::vector<PgResult> FleetSinkPostgres::insert_rows(const std::string& table, const std::vector<std::string>& columns,
                                                     const std::vector<const std::vector<PgParam>*>& rows,
                                                     const std::string& tail) {
  std::vector<PgResult> results;
  if (rows.empty()) return results;
  const std::map<std::string, std::string>& types = column_types(table);
  // Each array unnested in the select list (the arrays are as long as each
  // other: their rows in step), not by unnest(...) in FROM, which stored every
  // column's elements (a batch's bodies, ~5 MB) in a tuplestore before the
  // insert read them back.
  std::string into = "INSERT INTO gpuledger." + table + "(", from = ") SELECT ";
  for (size_t i = 0; i < kKey.size() + columns.size(); ++i) {
    const std::string& column = i < kKey.size() ? kKey[i] : columns[i - kKey.size()];
    const auto type = types.find(column);
    if (type == types.end()) throw Error("fleet database " + db_.name() + ": gpuledger." + table + " has no column " + column);
    into += (i ? "," : "") + column;
    from += (i ? ",unnest($" : "unnest($") + std::to_string(i + 1) + "::" + type->second + "[])";
  }
  const std::string sql = into + from + tail;
  for (size_t first = 0; first < rows.size(); first += kRowsPerStatement) {
    const size_t last = std::min(rows.size(), first + kRowsPerStatement);
    std::vector<PgParam> params;
    for (size_t c = 0; c < kKey.size() + columns.size(); ++c) params.push_back(array_text(rows, first, last, c));
    results.push_back(db_.query(sql, params));
  }
  return results;
}

// A table's columns and their types (format_type), asked once per connection.
const std::map<std::string, std::string>& FleetSinkPostgres::column_types(const std::string& table) {
  auto [it, fresh] = column_types_.try_emplace(table);
  if (!fresh) return it->second;
  try {
    PgResult r = db_.query(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = $1::regclass "
        "AND a.attnum > 0 AND NOT a.attisdropped",
        {"gpuledger." + table});
    for (int i = 0; i < r.rows(); ++i) it->second[r.text(i, 0)] = r.text(i, 1);
  } catch (...) {
    column_types_.erase(it);
    throw;
  }
  return it->second;
}

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
  // JIT off for the batch: the server compiled its statements (and the
  // roll-up checks its triggers run) each time, 13 % of its CPU while two
  // agents shipped, for statements of milliseconds (docs/performance.md).
  // LOCAL, in the one round trip: true behind a pooler in transaction mode too.
  db_.exec("BEGIN; SET LOCAL jit = off");
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
  std::vector<size_t> sent;  // the rollups' positions of `rows`
  for (size_t i = 0; i < rollups.size(); ++i) {
    const Rollup& r = rollups[i];
    std::string body = window_to_json(r.window);
    if (body.size() > kMaxRollupBodyBytes ||
        std::max({origin_.cluster.size(), origin_.node.size(), r.window.slot.uuid.size()}) > kMaxFieldBytes) {
      out[i] = Delivery::kTooLarge;
      continue;
    }
    ensure_month(r.period_start);
    sent.push_back(i);
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
        if (done.text(0, 0) != "t") out[sent[i]] = Delivery::kUnverified;
        continue;
      }
      PgResult stored = db_.query(
          "SELECT digest FROM gpuledger.rollups WHERE period = $1 AND period_start = $2 AND cluster = $3 AND node = $4 "
          "AND gpu_uuid = $5 AND windows = $6",
          {row[0], row[1], row[2], row[3], row[4], row[5]});
      out[sent[i]] = stored.rows() == 1 && stored.text(0, 0) == *row[8] ? Delivery::kDuplicate : Delivery::kConflict;
    }
  });
  return out;
}

// The accounts, charges and energy parts of the windows inserted, as rows of
// their tables (schemas 1 to 6).
void FleetSinkPostgres::insert_children(const std::vector<WindowRows>& rows, const std::vector<bool>& inserted) {
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
  insert_rows("accounts", kAccountColumns, named);
  insert_rows("accounts", {kAccountColumns.begin(), kAccountColumns.end() - 2}, plain);
  insert_rows("charges", kChargeColumns, charges);
  insert_rows("energy_charges", kEnergyChargeColumns, energy);
}

// A window is one row (schema 7): its fields as columns, its accounts,
// charges and energy parts as its JSON body, which the database checks as it
// stores the row and reads as the views gpuledger.accounts, charges and
// energy_charges (fleet_schema.cpp).
std::vector<Delivery> FleetSinkPostgres::ship(const std::vector<const ledger::WindowRecord*>& windows,
                                              std::vector<uint64_t>* digest_parts) {
  std::vector<Delivery> out(windows.size(), Delivery::kStored);
  if (windows.empty()) return out;
  for (const auto* w : windows) ensure_month(w->start);
  // A database before schema 7 (only ever written to by tests of its
  // upgrade: an agent ships to the schema it knows) takes the four tables.
  const bool bodies = column_types("windows").count("body") > 0;
  std::vector<WindowRow> rows;
  std::vector<WindowRows> legacy;
  rows.reserve(windows.size());
  for (const auto* w : windows) {
    if (bodies) {
      rows.push_back(to_window_row(origin_, *w));
      if (std::any_of(rows.back().row.begin(), rows.back().row.end(),
                      [](const PgParam& v) { return v && v->size() > kMaxFieldBytes; }))
        out[rows.size() - 1] = Delivery::kTooLarge;
      rows.back().row.push_back(window_children_to_json(*w));
      if (rows.back().row.back()->size() > kMaxWindowBodyBytes) out[rows.size() - 1] = Delivery::kTooLarge;
    } else {
      legacy.push_back(to_rows(origin_, *w));
      rows.push_back({legacy.back().window, legacy.back().digest});
    }
  }
  if (digest_parts) {
    digest_parts->clear();
    for (const auto& r : rows) digest_parts->push_back(digest_part(r.digest));
  }
  static const std::vector<std::string> with_body = [] {
    std::vector<std::string> out = kWindowColumns;
    out.emplace_back("body");
    return out;
  }();
  in_transaction([&] {
    // Those already there come back missing from RETURNING.
    std::vector<const std::vector<PgParam>*> window_rows;
    for (size_t i = 0; i < rows.size(); ++i)
      if (out[i] != Delivery::kTooLarge) window_rows.push_back(&rows[i].row);
    std::map<std::pair<std::string, int64_t>, size_t> index;  // (gpu, start) -> batch position
    for (size_t i = 0; i < windows.size(); ++i) index[{windows[i]->slot.uuid, windows[i]->start}] = i;
    std::vector<bool> inserted(windows.size(), false);
    for (const PgResult& done :
         insert_rows("windows", bodies ? with_body : kWindowColumns, window_rows,
                     " ON CONFLICT (cluster, node, gpu_uuid, start_time) DO NOTHING RETURNING gpu_uuid, start_time"))
      for (int i = 0; i < done.rows(); ++i) inserted[index.at({done.text(i, 0), done.i64(i, 1)})] = true;
    if (!bodies) insert_children(legacy, inserted);
    // The rest were there: a resend when the digests agree, else a conflict.
    for (size_t i = 0; i < rows.size(); ++i) {
      if (inserted[i] || out[i] == Delivery::kTooLarge) continue;
      const auto& row = rows[i].row;
      PgResult stored = db_.query(
          "SELECT digest FROM gpuledger.windows WHERE cluster = $1 AND node = $2 AND gpu_uuid = $3 AND start_time = $4",
          {row[0], row[1], row[2], row[3]});
      out[i] = stored.rows() == 1 && stored.text(0, 0) == rows[i].digest ? Delivery::kDuplicate : Delivery::kConflict;
    }
  });
  return out;
}

}  // namespace gpuledger::fleet
