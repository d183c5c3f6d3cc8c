#include "fleet/window_parts.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_sql.h"
#include "fleet/pg_array_text.h"

namespace gpuledger::fleet {

namespace {

// A window's parts as arrays of their columns' text (pg_array_text.h): what
// the views read from its body (the same functions, the same order), each
// array row an account's, a charge's or an energy part's columns.
std::string parts_arrays_sql() {
  std::string accounts;
  for (const auto& c : kAccountColumns) accounts += (accounts.empty() ? "a." : ", a.") + c + "::text";
  auto parts = [](const char* fn, const char* amount) {
    return std::string("(SELECT array_agg(ARRAY[p.account, p.kind, p.") + amount +
           "::text] ORDER BY p.account COLLATE \"C\", p.kind COLLATE \"C\") FROM gpuledger." + fn + "(b.j) p)";
  };
  return "(SELECT array_agg(ARRAY[" + accounts +
         "] ORDER BY a.account COLLATE \"C\") FROM gpuledger.body_accounts(b.j) a), " +
         parts("body_charges", "micros") + ", " + parts("body_energy", "millijoules");
}

// Sorted stably, unless already in order (as an agent writes them): then no
// buffer is made and nothing moves, for each of a window's three lists.
template <class T, class Less>
void sort_stably(std::vector<T>& items, Less less) {
  if (!std::is_sorted(items.begin(), items.end(), less)) std::stable_sort(items.begin(), items.end(), less);
}
template <class Part>
void sort_parts(std::vector<Part>& parts) {
  sort_stably(parts, [](const Part& a, const Part& b) {
    if (const int c = a.account.compare(b.account); c != 0) return c < 0;
    return ledger::to_string(a.kind) < ledger::to_string(b.kind);
  });
}

template <class Part, class Amount>
void read_parts(const TextArrayRows& rows, std::vector<Part>& out, Amount Part::*amount) {
  for (int k = 0; k < rows.rows(); ++k) {
    Part p;
    p.account = rows.text(k, 0);
    p.kind = ledger::parse_charge_kind(rows.text(k, 1));
    p.*amount = rows.i64(k, 2);
    out.push_back(std::move(p));
  }
}

}  // namespace

void take_window_parts(WindowChildren&& parts, ledger::WindowRecord& window) {
  window.accounts = std::move(parts.accounts);
  sort_stably(window.accounts,
              [](const ledger::AccountRecord& a, const ledger::AccountRecord& b) { return a.account < b.account; });
  window.charges = std::move(parts.charges);
  sort_parts(window.charges);
  if (window.energy && parts.energy) {
    window.energy->charges = std::move(*parts.energy);
    sort_parts(window.energy->charges);
  }
}

ViewsReading::ViewsReading(PgConnection& db, const PgResult& page, const std::vector<int>& rows) : rows_(rows) {
  std::vector<std::string> at, c, n, g, s;
  int64_t earliest = INT64_MAX;
  for (const int row : rows) {
    at.push_back(std::to_string(row));
    c.push_back(page.text(row, 0));
    n.push_back(page.text(row, 1));
    g.push_back(page.text(row, 2));
    s.push_back(page.text(row, 3));
    earliest = std::min(earliest, page.i64(row, 3));
  }
  const WindowsSource source = windows_source(db, earliest);
  r_ = std::make_unique<PgResult>(
      db.query("SELECT k.i, " + parts_arrays_sql() + " FROM unnest(" + array_literal(db, at) + "::int[], " +
               array_literal(db, c) + "::text[], " + array_literal(db, n) + "::text[], " + array_literal(db, g) +
               "::text[], " + array_literal(db, s) + "::bigint[]) AS k(i, c, n, g, s) JOIN " + source.relation() +
               " x ON x.cluster = k.c AND "
               "x.node = k.n AND x.gpu_uuid = k.g AND x.start_time = k.s" +
               source.hours("x", "k.s", "k.s + 1") +
               " CROSS JOIN LATERAL (SELECT x.body::jsonb AS j "
               "OFFSET 0) b"));
  for (int i = 0; i < r_->rows(); ++i) at_.emplace_back(static_cast<int>(r_->i64(i, 0)), i);
  std::sort(at_.begin(), at_.end());
}

void ViewsReading::into(int row, ledger::WindowRecord& window) const {
  const auto it = std::lower_bound(at_.begin(), at_.end(), std::pair<int, int>(row, 0));
  if (it == at_.end() || it->first != row) throw Error("fleet: a window the report read was gone when read again");
  const int i = it->second;
  const TextArrayRows accounts(r_->view(i, 1)), charges(r_->view(i, 2)), energy(r_->view(i, 3));
  for (int k = 0; k < accounts.rows(); ++k) window.accounts.push_back(read_account_cells(accounts, k));
  read_parts(charges, window.charges, &ledger::Charge::micros);
  if (window.energy) read_parts(energy, window.energy->charges, &ledger::EnergyCharge::millijoules);
}

}  // namespace gpuledger::fleet
