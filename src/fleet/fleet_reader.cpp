#include "fleet/fleet_reader.h"

#include <memory>
#include <tuple>
#include <vector>

#include "fleet/fleet_rows.h"
#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

namespace {

constexpr int kFetchRows = 5000;

// A server-side cursor over one table, in key order; the key is its first four columns.
class Cursor {
 public:
  Cursor(PgConnection& db, std::string name, const std::string& table, const std::vector<std::string>& columns,
         const std::string& where, const std::string& order = "")
      : db_(db), name_(std::move(name)) {
    std::string sql = "DECLARE " + name_ + " NO SCROLL CURSOR FOR SELECT cluster, node, gpu_uuid, start_time";
    for (const auto& c : columns) sql += ", " + c;
    sql += " FROM gpuledger." + table + where + " ORDER BY cluster, node, gpu_uuid, start_time" + order;
    db_.exec(sql);
    fetch();
  }
  bool valid() const { return row_ < rows_; }
  void next() {
    if (++row_ >= rows_ && rows_ == kFetchRows) fetch();
  }
  using Key = std::tuple<std::string, std::string, std::string, int64_t>;
  Key key() const { return {r_->text(row_, 0), r_->text(row_, 1), r_->text(row_, 2), r_->i64(row_, 3)}; }
  const PgResult& r() const { return *r_; }
  int row() const { return row_; }

 private:
  void fetch() {
    r_ = std::make_unique<PgResult>(db_.query("FETCH FORWARD " + std::to_string(kFetchRows) + " FROM " + name_));
    rows_ = r_->rows();
    row_ = 0;
  }
  PgConnection& db_;
  std::string name_;
  std::unique_ptr<PgResult> r_;
  int rows_ = 0, row_ = 0;
};

ledger::ChargeKind kind_of(const std::string& text) { return ledger::parse_charge_kind(text); }

void read_window(const PgResult& r, int i, ledger::WindowRecord& w) {
  // Columns: 4 key columns, then kWindowColumns.
  w.node = r.text(i, 0) + "/" + r.text(i, 1);
  w.slot.uuid = r.text(i, 2);
  w.start = r.i64(i, 3);
  w.end = r.i64(i, 4);
  w.slot.parent_uuid = r.text(i, 5);
  w.slot.model = r.text(i, 6);
  if (!r.null(i, 7)) w.slot.mig_profile = r.text(i, 7);
  w.gpu_fraction = r.f64(i, 8);
  w.currency = r.text(i, 9);
  w.cost_micros = r.i64(i, 10);
  w.busy_micros = r.i64(i, 11);
  w.idle_micros = r.i64(i, 12);
  w.memory_micros = r.i64(i, 13);
  w.cost_policy = r.text(i, 14);
  w.allocated_total = r.f64(i, 15);
  w.busy_fraction = r.f64(i, 16);
  w.busy_source = r.text(i, 17);
  w.exclusive = r.text(i, 18) == "t";
  w.observed_seconds = r.f64(i, 19);
  w.source = r.text(i, 20);
  w.device = {r.opt_f64(i, 21), r.opt_f64(i, 22), r.opt_f64(i, 23), r.opt_f64(i, 24)};
  if (!r.null(i, 25)) w.energy = ledger::WindowEnergyRecord{r.i64(i, 25), r.text(i, 26), {}, r.opt_f64(i, 27)};
  w.split_source = r.text(i, 28);
}

ledger::AccountRecord read_account(const PgResult& r, int i) {
  ledger::AccountRecord a;
  a.account = r.text(i, 4);
  a.labels = {r.text(i, 5), r.text(i, 6), r.text(i, 7), r.text(i, 8)};
  a.held_share = r.f64(i, 9);
  a.allocated_share = r.f64(i, 10);
  a.allocated_share_known = r.text(i, 11) == "t";
  a.busy_seconds = r.f64(i, 12);
  a.activity_share = r.f64(i, 13);
  a.gpu_busy_seconds = r.f64(i, 14);
  a.vram_byte_seconds = r.f64(i, 15);
  a.launches = static_cast<uint64_t>(r.i64(i, 16));
  a.efficiency = {r.opt_f64(i, 17), r.opt_f64(i, 18), r.opt_f64(i, 19), r.opt_f64(i, 20)};
  auto bytes = [&](int c) {
    return r.null(i, c) ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(r.i64(i, c)));
  };
  auto& ev = a.evidence;
  ev.vram_peak_bytes = bytes(21);
  ev.vram_p95_bytes = bytes(22);
  ev.nvml_vram_peak_bytes = bytes(23);
  ev.nvml_vram_p95_bytes = bytes(24);
  ev.sm_active_p95 = r.opt_f64(i, 25);
  ev.sm_occupancy_p95 = r.opt_f64(i, 26);
  ev.busy_p95 = r.opt_f64(i, 27);
  if (!r.null(i, 30)) ev.idle = ledger::IdleRun{r.f64(i, 28), r.f64(i, 29), r.f64(i, 30)};
  ev.windows = r.opt_i64(i, 31);
  return a;
}

}  // namespace

void for_each_fleet_window(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter,
                           const std::function<void(ledger::WindowRecord&&)>& fn) {
  std::string where = " WHERE start_time >= " + std::to_string(from) + " AND start_time < " + std::to_string(to);
  if (filter.cluster) where += " AND cluster = " + db.literal(*filter.cluster);
  if (filter.node) where += " AND node = " + db.literal(*filter.node);
  db.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  try {
    Cursor w(db, "gl_windows", "windows", kWindowColumns, where);
    Cursor a(db, "gl_accounts", "accounts", kAccountColumns, where, ", account");
    Cursor c(db, "gl_charges", "charges", kChargeColumns, where, ", account, kind");
    Cursor e(db, "gl_energy", "energy_charges", kEnergyChargeColumns, where, ", account, kind");
    for (; w.valid(); w.next()) {
      ledger::WindowRecord rec;
      read_window(w.r(), w.row(), rec);
      const auto key = w.key();
      // Children of a window are written with it (one transaction): none precede it.
      for (; a.valid() && a.key() < key; a.next()) {
      }
      for (; a.valid() && a.key() == key; a.next()) rec.accounts.push_back(read_account(a.r(), a.row()));
      for (; c.valid() && c.key() < key; c.next()) {
      }
      for (; c.valid() && c.key() == key; c.next())
        rec.charges.push_back({c.r().text(c.row(), 4), kind_of(c.r().text(c.row(), 5)), c.r().i64(c.row(), 6)});
      for (; e.valid() && e.key() < key; e.next()) {
      }
      for (; e.valid() && e.key() == key; e.next())
        if (rec.energy)
          rec.energy->charges.push_back(
              {e.r().text(e.row(), 4), kind_of(e.r().text(e.row(), 5)), e.r().i64(e.row(), 6)});
      fn(std::move(rec));
    }
    db.exec("COMMIT");
  } catch (...) {
    if (db.ok()) db.exec("ROLLBACK");
    throw;
  }
}

}  // namespace gpuledger::fleet
