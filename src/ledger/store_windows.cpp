// The store's windows: written once with their accounts, charges and energy, read back streamed, summed, deleted.
#include "ledger/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/device_quality.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store_sqlite.h"

namespace gpuledger::ledger {

using detail::Stmt;

namespace {

constexpr const char* kEvidenceColumns =
    "vram_peak_bytes,vram_p95_bytes,nvml_vram_peak_bytes,nvml_vram_p95_bytes,sm_active_p95,sm_occupancy_p95,"
    "busy_p95,idle_lead_seconds,idle_trail_seconds,idle_longest_seconds,window_count";
constexpr const char* kNoEvidence = "NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL";

}  // namespace

void Store::check_charges(const WindowRecord& w) const {
  int64_t sum = 0;
  for (const auto& c : w.charges) {
    if (c.micros < 0) fail("negative charge for " + c.account);
    sum += c.micros;
  }
  if (w.busy_micros + w.idle_micros + w.memory_micros != w.cost_micros)
    fail("window " + std::to_string(w.start) + " " + w.slot.uuid + ": busy, idle and memory parts do not add up to " +
         "the cost " + std::to_string(w.cost_micros));
  if (sum != w.cost_micros)
    fail("window " + std::to_string(w.start) + " " + w.slot.uuid + ": charges add up to " + std::to_string(sum) +
         ", not the cost " + std::to_string(w.cost_micros));
  if (!w.energy) return;
  int64_t mj = 0;
  for (const auto& c : w.energy->charges) {
    if (c.millijoules < 0) fail("negative energy for " + c.account);
    mj += c.millijoules;
  }
  if (w.energy->millijoules < 0 || mj != w.energy->millijoules)
    fail("window " + std::to_string(w.start) + " " + w.slot.uuid + ": energy parts add up to " + std::to_string(mj) +
         " mJ, not the GPU's " + std::to_string(w.energy->millijoules));
}

bool Store::insert_window(const WindowRecord& w) {
  check_charges(w);
  exec("BEGIN IMMEDIATE");
  try {
    if (!insert_window_in_transaction(w)) {
      exec("ROLLBACK");
      return false;
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return true;
}

size_t Store::insert_windows(const std::vector<WindowRecord>& windows) {
  for (const auto& w : windows) check_charges(w);
  size_t inserted = 0;
  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& w : windows) inserted += insert_window_in_transaction(w) ? 1 : 0;
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return inserted;
}

std::vector<bool> Store::store_windows(const std::vector<WindowRecord>& windows, const CounterBaseline& baseline,
                                       const std::map<std::string, std::string>& meta) {
  for (const auto& w : windows) check_charges(w);
  std::vector<bool> inserted;
  exec("BEGIN IMMEDIATE");
  try {
    for (const auto& w : windows) inserted.push_back(insert_window_in_transaction(w));
    write_baseline(baseline);
    for (const auto& [key, value] : meta) set_meta(key, value);
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return inserted;
}

void Store::write_baseline(const CounterBaseline& baseline) {
  exec("DELETE FROM counter_baseline");
  Stmt set(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES('counter_set', ?)", *this);
  set.bind(1, baseline.counter_set);
  set.step();
  Stmt ins(db_, "INSERT INTO counter_baseline(account, busy_seconds, launches) VALUES(?,?,?)", *this);
  for (const auto& [account, c] : baseline.accounts) {
    ins.bind(1, account).bind(2, c.busy_seconds).bind(3, static_cast<int64_t>(c.launches));
    ins.step();
    ins.reset();
  }
}

std::optional<CounterBaseline> Store::counter_baseline() const {
  if (schema_version() < 4) return std::nullopt;
  Stmt set(db_, "SELECT value FROM meta WHERE key = 'counter_set'", *this);
  if (!set.step()) return std::nullopt;
  CounterBaseline b;
  b.counter_set = set.text(0);
  Stmt q(db_, "SELECT account, busy_seconds, launches FROM counter_baseline", *this);
  while (q.step()) b.accounts[q.text(0)] = {q.f64(1), static_cast<uint64_t>(q.i64(2))};
  return b;
}

bool Store::insert_window_in_transaction(const WindowRecord& w) {
  Stmt ins(db_,
           "INSERT OR IGNORE INTO windows(start,end,gpu_uuid,parent_uuid,model,mig_profile,gpu_fraction,currency,"
           "cost_micros,busy_micros,idle_micros,busy_fraction,busy_source,exclusive,observed_seconds,source,"
           "sm_active,sm_occupancy,tensor_active,dram_active,memory_micros,cost_policy,allocated_total,split_source,"
           "device_ok,device_suspect,device_absent,device_findings) "
           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
           *this);
  ins.bind(1, w.start).bind(2, w.end).bind(3, w.slot.uuid).bind(4, w.slot.parent_uuid).bind(5, w.slot.model);
  ins.bind(6, w.slot.mig_profile).bind(7, w.gpu_fraction).bind(8, w.currency).bind(9, w.cost_micros);
  ins.bind(10, w.busy_micros).bind(11, w.idle_micros).bind(12, w.busy_fraction).bind(13, w.busy_source);
  ins.bind(14, int64_t{w.exclusive}).bind(15, w.observed_seconds).bind(16, w.source);
  ins.bind(17, w.device.sm_active).bind(18, w.device.sm_occupancy).bind(19, w.device.tensor_active);
  ins.bind(20, w.device.dram_active).bind(21, w.memory_micros).bind(22, w.cost_policy).bind(23, w.allocated_total);
  ins.bind(24, w.split_source);
  ins.bind(25, w.device_quality.ok).bind(26, w.device_quality.suspect).bind(27, w.device_quality.absent);
  ins.bind(28, encode_findings(w.device_findings));
  ins.step();
  if (sqlite3_changes(db_) == 0) return false;
  int64_t id = sqlite3_last_insert_rowid(db_);
  Stmt acc(db_,
           (std::string("INSERT INTO accounts(window_id,account,namespace,pod,container,team,held_share,busy_seconds,"
           "activity_share,gpu_busy_seconds,vram_byte_seconds,launches,sm_active,sm_occupancy,tensor_active,"
           "dram_active,allocated_share,allocated_share_known,") +
               kEvidenceColumns + ",used_unallocated_seconds,allocated_unused_seconds,slurm_user,slurm_account) "
               "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
               .c_str(),
           *this);
  for (const auto& a : w.accounts) {
    acc.bind(1, id).bind(2, a.account).bind(3, a.labels.namespace_name).bind(4, a.labels.pod);
    acc.bind(5, a.labels.container).bind(6, a.labels.team).bind(7, a.held_share).bind(8, a.busy_seconds);
    acc.bind(9, a.activity_share).bind(10, a.gpu_busy_seconds).bind(11, a.vram_byte_seconds);
    acc.bind(12, static_cast<int64_t>(a.launches)).bind(13, a.efficiency.sm_active);
    acc.bind(14, a.efficiency.sm_occupancy).bind(15, a.efficiency.tensor_active).bind(16, a.efficiency.dram_active);
    acc.bind(17, a.allocated_share).bind(18, int64_t{a.allocated_share_known});
    const AccountEvidence& ev = a.evidence;
    acc.bind(19, ev.vram_peak_bytes).bind(20, ev.vram_p95_bytes).bind(21, ev.nvml_vram_peak_bytes);
    acc.bind(22, ev.nvml_vram_p95_bytes).bind(23, ev.sm_active_p95).bind(24, ev.sm_occupancy_p95).bind(25, ev.busy_p95);
    const auto idle = [&](double IdleRun::*field) {
      return ev.idle ? std::optional<double>((*ev.idle).*field) : std::nullopt;
    };
    acc.bind(26, idle(&IdleRun::lead)).bind(27, idle(&IdleRun::trail)).bind(28, idle(&IdleRun::longest));
    acc.bind(29, ev.windows);
    acc.bind(30, a.used_unallocated_seconds).bind(31, a.allocated_unused_seconds);
    acc.bind(32, a.labels.slurm_user).bind(33, a.labels.slurm_account);
    acc.step();
    acc.reset();
  }
  Stmt ch(db_, "INSERT INTO charges(window_id,account,kind,micros) VALUES(?,?,?,?)", *this);
  for (const auto& c : w.charges) {
    ch.bind(1, id).bind(2, c.account).bind(3, std::string(to_string(c.kind))).bind(4, c.micros);
    ch.step();
    ch.reset();
  }
  insert_energy(id, w);
  return true;
}

void Store::insert_energy(int64_t id, const WindowRecord& w) {
  if (!w.energy) return;
  Stmt e(db_, "INSERT INTO window_energy(window_id,millijoules,source,carbon_g_per_kwh) VALUES(?,?,?,?)", *this);
  e.bind(1, id).bind(2, w.energy->millijoules).bind(3, w.energy->source).bind(4, w.energy->carbon_g_per_kwh);
  e.step();
  Stmt ch(db_, "INSERT INTO energy_charges(window_id,account,kind,millijoules) VALUES(?,?,?,?)", *this);
  for (const auto& c : w.energy->charges) {
    ch.bind(1, id).bind(2, c.account).bind(3, std::string(to_string(c.kind))).bind(4, c.millijoules);
    ch.step();
    ch.reset();
  }
}

std::optional<int64_t> Store::last_window_end() const {
  Stmt s(db_, "SELECT max(end) FROM windows", *this);
  if (s.step() && !s.null(0)) return s.i64(0);
  return std::nullopt;
}

void Store::for_each_window(int64_t from, int64_t to, const std::function<void(WindowRecord&&)>& fn) const {
  for_each_window_with_id(from, to, [&](int64_t, WindowRecord&& w) { fn(std::move(w)); });
}

// Three cursors in window-id order, merged: one window (with its accounts and
// charges) in memory at a time, no sort, whatever the range's size.
void Store::for_each_window_with_id(int64_t from, int64_t to,
                                    const std::function<void(int64_t, WindowRecord&&)>& fn) const {
  Stmt range(db_, "SELECT min(id), max(id) FROM windows WHERE start >= ? AND start < ?", *this);
  range.bind(1, from).bind(2, to);
  if (!range.step() || range.null(0)) return;
  const int64_t first_id = range.i64(0), last_id = range.i64(1);
  // A schema 2 store read without migrating: no memory part, billed by usage, allocated = held.
  Stmt s(db_,
         (std::string("SELECT id,start,end,gpu_uuid,parent_uuid,model,mig_profile,gpu_fraction,currency,cost_micros,"
                      "busy_micros,idle_micros,busy_fraction,busy_source,exclusive,observed_seconds,source,sm_active,"
                      "sm_occupancy,tensor_active,dram_active,") +
          (has_allocation_ ? "memory_micros,cost_policy,allocated_total" : 
                           "0,'usage',(SELECT total(held_share) FROM accounts a WHERE a.window_id = windows.id)") +
          (has_split_source_ ? ",split_source" : ",''") +
          (has_quality_ ? ",device_ok,device_suspect,device_absent,device_findings" : ",0,0,0,''") + " FROM windows WHERE id BETWEEN ? AND ? AND start >= ? AND start < ? ORDER BY id")
             .c_str(),
         *this);
  s.bind(1, first_id).bind(2, last_id).bind(3, from).bind(4, to);
  Stmt a(db_,
         (std::string("SELECT window_id,account,namespace,pod,container,team,held_share,busy_seconds,activity_share,"
                      "gpu_busy_seconds,vram_byte_seconds,launches,sm_active,sm_occupancy,tensor_active,dram_active,") +
          (has_allocation_ ? "allocated_share" : "held_share") + (has_share_known_ ? ",allocated_share_known" : ",1") +
          "," + (has_evidence_ ? kEvidenceColumns : kNoEvidence) +
          (has_quality_ ? ",used_unallocated_seconds,allocated_unused_seconds" : ",NULL,NULL") +
          (has_slurm_ ? ",slurm_user,slurm_account" : ",'',''") + " FROM accounts WHERE window_id BETWEEN ? AND ? ORDER BY window_id, account")
             .c_str(),
         *this);
  a.bind(1, first_id).bind(2, last_id);
  Stmt c(db_,
         "SELECT window_id,account,kind,micros FROM charges WHERE window_id BETWEEN ? AND ? "
         "ORDER BY window_id, account, kind",
         *this);
  c.bind(1, first_id).bind(2, last_id);
  // A schema 1 store read without migrating has no energy tables: the same
  // cursors over no rows (energy unknown).
  const char* no_rows = "SELECT 0,0,'',NULL WHERE 0";
  Stmt e(db_,
         has_energy_ ? "SELECT window_id,millijoules,source,carbon_g_per_kwh FROM window_energy "
                       "WHERE window_id BETWEEN ? AND ? ORDER BY window_id"
                     : no_rows,
         *this);
  Stmt ec(db_,
          has_energy_ ? "SELECT window_id,account,kind,millijoules FROM energy_charges WHERE window_id BETWEEN ? AND ? "
                        "ORDER BY window_id, account, kind"
                      : no_rows,
          *this);
  if (has_energy_) {
    e.bind(1, first_id).bind(2, last_id);
    ec.bind(1, first_id).bind(2, last_id);
  }
  bool a_row = a.step(), c_row = c.step(), e_row = e.step(), ec_row = ec.step();
  while (s.step()) {
    const int64_t id = s.i64(0);
    WindowRecord w;
    w.start = s.i64(1);
    w.end = s.i64(2);
    w.slot.uuid = s.text(3);
    w.slot.parent_uuid = s.text(4);
    w.slot.model = s.text(5);
    if (!s.null(6)) w.slot.mig_profile = s.text(6);
    w.gpu_fraction = s.f64(7);
    w.currency = s.text(8);
    w.cost_micros = s.i64(9);
    w.busy_micros = s.i64(10);
    w.idle_micros = s.i64(11);
    w.busy_fraction = s.f64(12);
    w.busy_source = s.text(13);
    w.exclusive = s.i64(14) != 0;
    w.observed_seconds = s.f64(15);
    w.source = s.text(16);
    w.device = {s.opt(17), s.opt(18), s.opt(19), s.opt(20)};
    w.memory_micros = s.i64(21);
    w.cost_policy = s.text(22);
    w.allocated_total = s.f64(23);
    w.split_source = s.text(24);
    w.device_quality = {s.i64(25), s.i64(26), s.i64(27)};
    w.device_findings = decode_findings(s.text(28));
    while (a_row && a.i64(0) < id) a_row = a.step();  // a window outside [from, to)
    for (; a_row && a.i64(0) == id; a_row = a.step()) {
      AccountRecord r;
      r.account = a.text(1);
      r.labels = {a.text(2), a.text(3), a.text(4), a.text(5), a.text(31), a.text(32)};
      r.held_share = a.f64(6);
      r.busy_seconds = a.f64(7);
      r.activity_share = a.f64(8);
      r.gpu_busy_seconds = a.f64(9);
      r.vram_byte_seconds = a.f64(10);
      r.launches = static_cast<uint64_t>(a.i64(11));
      r.efficiency = {a.opt(12), a.opt(13), a.opt(14), a.opt(15)};
      r.allocated_share = a.f64(16);
      r.allocated_share_known = a.i64(17) != 0;
      AccountEvidence& ev = r.evidence;
      ev.vram_peak_bytes = a.opt_bytes(18);
      ev.vram_p95_bytes = a.opt_bytes(19);
      ev.nvml_vram_peak_bytes = a.opt_bytes(20);
      ev.nvml_vram_p95_bytes = a.opt_bytes(21);
      ev.sm_active_p95 = a.opt(22);
      ev.sm_occupancy_p95 = a.opt(23);
      ev.busy_p95 = a.opt(24);
      if (!a.null(27)) ev.idle = IdleRun{a.f64(25), a.f64(26), a.f64(27)};
      ev.windows = a.opt_i64(28);
      r.used_unallocated_seconds = a.opt(29);
      r.allocated_unused_seconds = a.opt(30);
      w.accounts.push_back(std::move(r));
    }
    while (c_row && c.i64(0) < id) c_row = c.step();
    for (; c_row && c.i64(0) == id; c_row = c.step())
      w.charges.push_back({c.text(1), parse_charge_kind(c.text(2)), c.i64(3)});
    while (e_row && e.i64(0) < id) e_row = e.step();
    if (e_row && e.i64(0) == id) {
      w.energy = WindowEnergyRecord{e.i64(1), e.text(2), {}, e.opt(3)};
      e_row = e.step();
    }
    while (ec_row && ec.i64(0) < id) ec_row = ec.step();
    for (; ec_row && ec.i64(0) == id; ec_row = ec.step())
      if (w.energy)
        w.energy->charges.push_back(
            {ec.text(1), ec.text(2) == "busy" ? ChargeKind::kBusy : ChargeKind::kIdle, ec.i64(3)});
    fn(id, std::move(w));
  }
}

std::optional<int64_t> Store::first_window_start() const {
  Stmt s(db_, "SELECT min(start) FROM windows", *this);
  if (s.step() && !s.null(0)) return s.i64(0);
  return std::nullopt;
}

std::vector<WindowRecord> Store::windows(int64_t from, int64_t to) const {
  std::vector<WindowRecord> out;
  for_each_window(from, to, [&](WindowRecord&& w) { out.push_back(std::move(w)); });
  std::sort(out.begin(), out.end(), [](const WindowRecord& x, const WindowRecord& y) {
    return std::tie(x.start, x.slot.uuid) < std::tie(y.start, y.slot.uuid);
  });
  return out;
}

LedgerTotals Store::totals() const {
  LedgerTotals t;
  Stmt c(db_,
         "SELECT c.account, coalesce(a.namespace,''), coalesce(a.pod,''), coalesce(a.container,''), "
         "coalesce(a.team,''), w.gpu_uuid, c.kind, sum(c.micros) FROM charges c JOIN windows w ON w.id = c.window_id "
         "LEFT JOIN accounts a ON a.window_id = c.window_id AND a.account = c.account "
         "GROUP BY 1,2,3,4,5,6,7 ORDER BY 1,2,3,4,5,6,7",
         *this);
  while (c.step())
    t.cost.push_back({c.text(0), {c.text(1), c.text(2), c.text(3), c.text(4), "", ""}, c.text(5),
                      parse_charge_kind(c.text(6)), c.i64(7)});
  Stmt e(db_,
         has_energy_ ? "SELECT c.account, coalesce(a.namespace,''), coalesce(a.pod,''), coalesce(a.container,''), "
         "coalesce(a.team,''), w.gpu_uuid, c.kind, we.source, sum(c.millijoules) FROM energy_charges c "
         "JOIN windows w ON w.id = c.window_id JOIN window_energy we ON we.window_id = c.window_id "
         "LEFT JOIN accounts a ON a.window_id = c.window_id AND a.account = c.account "
         "GROUP BY 1,2,3,4,5,6,7,8 ORDER BY 1,2,3,4,5,6,7,8"
                     : "SELECT '','','','','','','','',0 WHERE 0",
         *this);
  while (e.step())
    t.energy.push_back({e.text(0), {e.text(1), e.text(2), e.text(3), e.text(4), "", ""}, e.text(5),
                        e.text(6) == "busy" ? ChargeKind::kBusy : ChargeKind::kIdle, e.text(7), e.i64(8)});
  std::string efficiency;
  for (const char* ratio : {"sm_active", "sm_occupancy", "tensor_active", "dram_active"})
    efficiency += std::string(", total(a.") + ratio + " * (w.end - w.start) * w.gpu_fraction), total(CASE WHEN a." +
                  ratio + " IS NULL THEN 0 ELSE (w.end - w.start) * w.gpu_fraction END)";
  Stmt a(db_,
         ("SELECT a.account, a.namespace, a.pod, a.container, a.team, w.gpu_uuid, "
          "sum(a.held_share * (w.end - w.start) * w.gpu_fraction), sum(a.gpu_busy_seconds * w.gpu_fraction), "
          "total(a.vram_byte_seconds), sum(a.launches)" +
          efficiency +
          (has_quality_ ? ", total(a.used_unallocated_seconds), total(a.allocated_unused_seconds)" : ", 0, 0") +
          " FROM accounts a JOIN windows w ON w.id = a.window_id GROUP BY 1,2,3,4,5,6 ORDER BY 1,2,3,4,5,6")
             .c_str(),
         *this);
  while (a.step()) {
    LedgerTotals::Seconds s{a.text(0), {a.text(1), a.text(2), a.text(3), a.text(4), "", ""}, a.text(5), a.f64(6), a.f64(7)};
    s.vram_byte_seconds = a.f64(8);
    s.launches = static_cast<uint64_t>(a.i64(9));
    for (int i = 0; i < 4; ++i) {
      s.efficiency_weighted[i] = a.f64(10 + 2 * i);
      s.efficiency_known[i] = a.f64(11 + 2 * i);
    }
    s.used_unallocated_seconds = a.f64(18);
    s.allocated_unused_seconds = a.f64(19);
    t.seconds.push_back(std::move(s));
  }
  Stmt g(db_, "SELECT gpu_uuid, sum(busy_fraction * (end - start)) FROM windows GROUP BY 1 ORDER BY 1", *this);
  while (g.step()) t.gpu_busy_seconds.emplace_back(g.text(0), g.f64(1));
  if (has_quality_) {
    Stmt f(db_, "SELECT gpu_uuid, device_findings FROM windows WHERE device_findings != ''", *this);
    while (f.step())
      for (const auto& [key, n] : decode_findings(f.text(1))) t.device_findings[{f.text(0), key}] += n;
  }
  return t;
}

int64_t Store::delete_before(int64_t cutoff) {
  // A store that ships to a fleet database (ledger/outbox.h) keeps what has not been shipped.
  Stmt s(db_,
         "DELETE FROM windows WHERE end <= ? AND (shipped != 0 OR NOT EXISTS(SELECT 1 FROM meta WHERE key = "
         "'fleet_outbox'))",
         *this);
  s.bind(1, cutoff);
  s.step();
  return sqlite3_changes(db_);
}

}  // namespace gpuledger::ledger
