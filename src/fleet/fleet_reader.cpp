#include "fleet/fleet_reader.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "fleet/body_bounds.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_sql.h"
#include "fleet/page_parser.h"
#include "fleet/page_receiver.h"
#include "fleet/pg_connection.h"
#include "fleet/window_json.h"
#include "fleet/window_parts.h"
#include "fleet/windows_digest.h"
#include "report/report_text.h"

namespace gpuledger::fleet {

namespace {

constexpr int kFetchRows = 5000;

// A server-side cursor; where rows are compared by key (compare_key), the
// key is their first four columns.
class Cursor {
 public:
  // Any query whose rows are read in turn. `prefetch`: each page's successor
  // is asked for as soon as the page arrives and received meanwhile
  // (page_receiver.h), so the server makes and sends it while the caller
  // reads this one (nothing else may use the connection meanwhile).
  Cursor(PgConnection& db, std::string name, const std::string& sql, bool prefetch = false, int page_rows = kFetchRows)
      : db_(db), name_(std::move(name)), prefetch_(prefetch), page_rows_(page_rows) {
    db_.exec("DECLARE " + name_ + " NO SCROLL CURSOR FOR " + sql);
    fetch();
  }
  ~Cursor() {
    try {
      ahead_.reset();  // waits for a page still being received
    } catch (...) {  // the page is not wanted; the CLOSE below says what is wrong
    }
    try {
      if (db_.ok()) db_.exec("CLOSE " + name_);
    } catch (...) {  // a failed transaction: its rollback closes it
    }
  }
  bool valid() const { return row_ < rows_; }
  void next() {
    if (++row_ >= rows_ && rows_ == page_rows_) fetch();
  }
  // This row's key against another cursor's row's, without copying (<0, 0, >0).
  int compare_key(const Cursor& o) const {
    for (int c = 0; c < 3; ++c)
      if (const int k = r_->view(row_, c).compare(o.r_->view(o.row_, c)); k != 0) return k;
    const int64_t a = r_->i64(row_, 3), b = o.r_->i64(o.row_, 3);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const PgResult& r() const { return *r_; }
  std::shared_ptr<const PgResult> page_result() const { return r_; }  // kept alive while it is read elsewhere
  int row() const { return row_; }
  int64_t page() const { return page_; }  // how many pages were fetched: this row's page
  // Whether next() asks the server for a page (another cursor's page asked
  // for ahead must be settled first: one statement at a time a connection).
  bool will_fetch() const { return row_ + 1 >= rows_ && rows_ == page_rows_; }
  // The page asked for ahead, received now (kept for next()'s fetch).
  void settle() {
    if (ahead_ && ahead_->pending()) settled_ = std::make_shared<PgResult>(ahead_->take());
  }

 private:
  void fetch() {
    const std::string next = "FETCH FORWARD " + std::to_string(page_rows_) + " FROM " + name_;
    if (settled_)
      r_ = std::move(settled_);
    else
      r_ = std::make_shared<PgResult>(ahead_ && ahead_->pending() ? ahead_->take() : db_.query(next));
    rows_ = r_->rows();
    row_ = 0;
    ++page_;
    if (prefetch_ && rows_ == page_rows_) {
      if (!ahead_) ahead_ = std::make_unique<PageReceiver>(db_);
      ahead_->send(next);
    }
  }
  PgConnection& db_;
  std::string name_;
  bool prefetch_ = false;
  int page_rows_ = kFetchRows;
  std::shared_ptr<PgResult> r_, settled_;
  std::unique_ptr<PageReceiver> ahead_;  // receives the next page asked for (prefetch)
  int rows_ = 0, row_ = 0;
  int64_t page_ = 0;
};

// Rows that come in key order by their query's form (key_ordered_windows,
// lateral_windows, key_ordered_totals, key_ordered_rollups), checked as they are read: a row out of order fails the
// report rather than let it sum in another order (a bill's text is the same
// however it is read).
class KeyOrderCheck {
 public:
  // `strict`: each key once (windows); else a key may repeat (a GPU-period's
  // roll-ups of several counts).
  explicit KeyOrderCheck(bool strict = true) : strict_(strict) {}
  void next(const PgResult& r, int row) {
    const std::array<std::string_view, 3> key = {r.view(row, 0), r.view(row, 1), r.view(row, 2)};
    const int64_t start = r.i64(row, 3);
    const auto now = std::tie(key[0], key[1], key[2], start);
    const auto last = std::tie(last_[0], last_[1], last_[2], last_start_);
    if (any_ && (strict_ ? now <= last : now < last))
      throw Error("the fleet database sent the rows of " + std::string(key[0]) + "/" + std::string(key[1]) + " " +
                  std::string(key[2]) + " out of key order, in a plan gpuledger does not expect; no report was made");
    for (size_t i = 0; i < key.size(); ++i)
      if (last_[i] != key[i]) last_[i] = key[i];
    last_start_ = start;
    any_ = true;
  }

 private:
  std::array<std::string, 3> last_;
  int64_t last_start_ = 0;
  bool any_ = false, strict_ = true;
};

// A window row's body, read as the views read it or left to them (window_parts.h).
using PartsParser = PageParser<WindowChildren, window_children_from_canonical_json>;

// The windows `source` selects (it follows FROM and names them x), with
// their parts. Their bodies are read here on every core; those the reader
// leaves (and those over kPageBodyBytes, not in the page), from the views, up
// to kViewsBodyBytes of them a statement. The views gave a row a part, each
// in a cursor of its own with the window's key again, sorted by the server
// after it parsed every body three times: 6.9-8.3 s for a report of 80,640
// windows, against 1.4 s now (3.6-3.8 s with every window's parts sent as
// the views' readings, one row a window; docs/performance.md, "A window's
// parts read by the report").
// How their key order comes:
enum class WindowOrder {
  kSorted,      // sorted by the server, in the plan it picks (a report of windows only, its whole range)
  kAsSelected,  // `source` gives them in key order by its form (lateral_windows); checked here
};
// `digest`, when given, is added each row (the ragged ends' windows: WindowsDigest).
void read_windows(PgConnection& db, const std::string& source, WindowOrder order,
                  const std::function<void(ledger::WindowRecord&&)>& fn, WindowsDigest* digest = nullptr) {
  const std::string key = "x.cluster, x.node, x.gpu_uuid, x.start_time";
  std::string columns = key;
  for (const auto& c : kWindowColumns) columns += ", x." + c;
  // The body, unless it is over kPageBodyBytes (then read from the views), and its size.
  const std::string select =
      "SELECT " + columns + ", " + page_body("x.body") + ", octet_length(x.body::text) FROM " + source;
  Cursor w(db, "gl_windows", order == WindowOrder::kAsSelected ? select : select + " ORDER BY " + key,
           true);  // the next page made while this one is parsed
  const int body = 4 + static_cast<int>(kWindowColumns.size()), bytes = body + 1;
  std::unique_ptr<PartsParser> page;    // the bodies of the rows fetched, parsed on every core
  std::unique_ptr<ViewsReading> views;  // this page's bodies the reader left, as the views read them
  KeyOrderCheck in_order;
  for (; w.valid(); w.next()) {
    if (w.row() == 0) page.reset(), views.reset(), page = std::make_unique<PartsParser>(w.page_result(), body);
    if (order == WindowOrder::kAsSelected) in_order.next(w.r(), w.row());
    if (digest) digest->add_window(w.r(), w.row(), body - 1);  // the digest: kWindowColumns' last
    ledger::WindowRecord rec;
    read_window_columns(w.r(), w.row(), rec);
    if (auto& parts = page->at(w.row()); parts.value) {
      take_window_parts(std::move(*parts.value), rec);
    } else {
      if (!views || !views->asked(w.row())) {
        // This row's and the page's next ones left, asked for at once up to
        // kViewsBodyBytes of their bodies (a few at a time when a node wrote
        // large ones; the page's usual few, hand-written, in one statement).
        std::vector<int> left;
        int64_t asked = 0;
        for (int k = w.row(); k < w.r().rows(); ++k) {
          if (page->at(k).value) continue;
          asked += w.r().i64(k, bytes);
          if (!left.empty() && asked > static_cast<int64_t>(kViewsBodyBytes)) break;
          left.push_back(k);
        }
        views.reset();
        w.settle();  // the connection free: the next page asked for ahead received first
        views = std::make_unique<ViewsReading>(db, w.r(), left);
      }
      views->into(w.row(), rec);
    }
    fn(std::move(rec));
  }
}

// The windows with a <= start < b (and the filter), as read_windows' `from`
// (windows_source: the relation with them, their packs found by the hour).
std::string starting_in(PgConnection& db, int64_t a, int64_t b, const FleetFilter& filter) {
  const WindowsSource source = windows_source(db, a);
  return source.relation() + " x WHERE x.start_time >= " + std::to_string(a) + " AND x.start_time < " +
         std::to_string(b) + source.hours("x", std::to_string(a), std::to_string(b)) + filter_sql(db, filter, "x");
}

// Spans of one GPU's time still to read at a finer period, or as windows.
struct SlotSpan {
  std::string cluster, node, uuid;
  int64_t start = 0, end = 0;
};

// "unnest(...) AS k(c, n, g, a, b)" of the spans.
std::string spans_sql(PgConnection& db, const std::vector<SlotSpan>& spans) {
  std::vector<std::string> c, n, g, a, b;
  for (const auto& s : spans) {
    c.push_back(s.cluster);
    n.push_back(s.node);
    g.push_back(s.uuid);
    a.push_back(std::to_string(s.start));
    b.push_back(std::to_string(s.end));
  }
  return "unnest(" + array_literal(db, c) + "::text[], " + array_literal(db, n) + "::text[], " + array_literal(db, g) +
         "::text[], " + array_literal(db, a) + "::bigint[], " + array_literal(db, b) + "::bigint[]) AS k(c, n, g, a, b)";
}

// The verified roll-up (as r) of window_totals' row t, when there is one.
const std::string kVerifiedRollup = join_while_current("rollups", "r") + " AND r.verified";

// A roll-up's body, read (window_json.h); nullopt: unreadable.
std::optional<ledger::WindowRecord> rollup_body(std::string_view text) {
  try {
    return window_from_json(text);
  } catch (const Error&) {
    return std::nullopt;
  }
}
using BodyParser = PageParser<ledger::WindowRecord, rollup_body>;
using ParsedBody = BodyParser::Parsed;

// A GPU-period (row i of r: cluster, node, gpu_uuid, period_start) and its
// verified roll-up's body when it has one: the body emitted, else the period
// added to `finer` (contiguous periods of one GPU joined into one span); a body
// that cannot be read is named in `unreadable` and goes to `finer` too.
void take_period(const PgResult& r, int i, Period p, ParsedBody* body, std::vector<SlotSpan>& finer,
                 const std::function<void(ledger::WindowRecord&&)>& fn, std::set<std::string>& unreadable) {
  if (body && body->present) {
    if (body->value) {
      body->value->node = r.text(i, 0) + "/" + r.text(i, 1);
      fn(std::move(*body->value));
      return;
    }
    // Never fatal: its finer periods are read instead.
    unreadable.insert(std::string(report::to_string(p)) + " " + std::to_string(r.i64(i, 3)) + " " + r.text(i, 0) +
                      "/" + r.text(i, 1) + " " + r.text(i, 2));
  }
  const int64_t start = r.i64(i, 3);
  SlotSpan span{r.text(i, 0), r.text(i, 1), r.text(i, 2), start, report::period_end(start, p)};
  if (!finer.empty() && finer.back().cluster == span.cluster && finer.back().node == span.node &&
      finer.back().uuid == span.uuid && finer.back().end == span.start)
    finer.back().end = span.end;
  else
    finer.push_back(std::move(span));
}

// One period's GPUs (take_period each).
// `totals` names the window_totals rows as t (FROM items), `where` picks them.
void read_period(PgConnection& db, Period p, const std::string& totals, const std::string& where,
                 std::vector<SlotSpan>& finer, const std::function<void(ledger::WindowRecord&&)>& fn,
                 std::set<std::string>& unreadable) {
  const std::string sql = "SELECT t.cluster, t.node, t.gpu_uuid, t.period_start, " + page_body("r.body") + " FROM " +
                          totals + kVerifiedRollup + (where.empty() ? "" : " WHERE " + where) +
                          " ORDER BY t.cluster, t.node, t.gpu_uuid, t.period_start";
  Cursor cur(db, "gl_periods", sql, true);  // the next page made while this one is parsed
  std::unique_ptr<BodyParser> page;         // the bodies of the rows fetched, parsed on every core
  for (; cur.valid(); cur.next()) {
    // A page fetched: the last page's workers stopped before this one's start.
    if (cur.row() == 0) page.reset(), page = std::make_unique<BodyParser>(cur.page_result(), 4);
    take_period(cur.r(), cur.row(), p, &page->at(cur.row()), finer, fn, unreadable);
  }
}

// Whole periods: the same as read_period over the totals of `starts`,
// read as two scans in key order, the totals and the verified roll-ups,
// merged here on join_while_current's condition (their count, cost and digest
// sum equal; trim_scale: equal numbers, equal text). Joined, PostgreSQL
// probed the roll-ups' index once a totals row, or sorted every body on disk:
// 1.6-1.8 s of server time for the 240,000 days of a 1,000-node month,
// against 0.14 + 0.34 s for the two scans (docs/performance.md, "The fleet
// read"). One day too: the roll-ups' scan walks its month's day index entries
// (240,000 at 1,000 nodes) without their rows, where the join probed the
// index 8,000 times and fetched each body then; a FOCUS export reads its days
// one at a time (docs/performance.md, "A ragged end read a GPU at a time").
// Hours too, their roll-ups a GPU at a time (key_ordered_rollups): a month
// holds 24 times as many hour roll-ups to walk.
void merge_period(PgConnection& db, Period p, const std::vector<std::string>& starts, const FleetFilter& filter,
                  std::vector<SlotSpan>& finer, const std::function<void(ledger::WindowRecord&&)>& fn,
                  std::set<std::string>& unreadable) {
  const bool by_gpu = p == Period::kHour;
  const std::string where = by_gpu ? "" : whole_periods(db, p, starts, filter);
  // Pages ten times the roll-ups': each of its fetches waits for the roll-ups' page asked for ahead.
  Cursor totals(db, "gl_totals", by_gpu ? key_ordered_totals(db, p, starts, filter) : merged_totals_sql(where), false,
                10 * kFetchRows);
  // Days and months: the roll-ups' own index gives their order; the planner
  // would sort their bodies instead. For this cursor's plan only (made as it
  // is declared; a failure rolls the setting back with the snapshot). Hours
  // sort their GPUs. The next page is asked for while this one is parsed, and
  // settled before the totals fetch theirs.
  if (!by_gpu) db.exec("SET LOCAL enable_sort = off");
  Cursor rollups(db, "gl_rollups", by_gpu ? key_ordered_rollups(db, p, starts, filter) : merged_rollups_sql(where),
                 true);
  rollups.settle();
  if (!by_gpu) db.exec("RESET enable_sort");
  KeyOrderCheck in_order(false), totals_in_order;  // by_gpu: the order is the queries' form, not a sort
  std::unique_ptr<BodyParser> page;  // the roll-ups' page, parsed on every core
  int64_t parsed = 0;                // which page `page` is
  auto advance = [&] {
    rollups.next();
    if (by_gpu && rollups.valid()) in_order.next(rollups.r(), rollups.row());
  };
  if (by_gpu && rollups.valid()) in_order.next(rollups.r(), rollups.row());
  for (; totals.valid(); totals.next()) {
    if (by_gpu) totals_in_order.next(totals.r(), totals.row());
    for (; rollups.valid() && rollups.compare_key(totals) < 0; advance()) {
    }
    ParsedBody* body = nullptr;  // in `page`, used before the roll-ups' cursor moves on
    for (; rollups.valid() && rollups.compare_key(totals) == 0; advance()) {
      const PgResult &t = totals.r(), &r = rollups.r();
      const int i = totals.row(), j = rollups.row();
      if (r.view(j, 4) != t.view(i, 4) || r.view(j, 5) != t.view(i, 5) || r.view(j, 6) != t.view(i, 6)) continue;
      if (parsed != rollups.page())
        page.reset(), page = std::make_unique<BodyParser>(rollups.page_result(), 7), parsed = rollups.page();
      body = &page->at(j);
      break;
    }
    take_period(totals.r(), totals.row(), p, body, finer, fn, unreadable);
    if (totals.will_fetch()) rollups.settle();  // the connection free for the totals' next page
  }
}

// The ragged ends' windows of [from, to) added to `digest`, a read of their own.
void hash_ragged_windows(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter, WindowsDigest& digest) {
  for (const auto& [a, b] : digest_ragged_ends(from, to)) {  // at most two hours each: a GPU at a time
    KeyOrderCheck in_order;
    for (Cursor cur(db, "gl_digest",
                    "SELECT x.cluster, x.node, x.gpu_uuid, x.start_time, x.digest FROM " +
                        key_ordered_windows(db, a, b, filter));
         cur.valid(); cur.next()) {
      in_order.next(cur.r(), cur.row());
      digest.add_window(cur.r(), cur.row(), 4);
    }
  }
}

// The range's windows named (for_each_fleet_window's windows_digest), on one connection.
std::string digest_of_windows(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter) {
  WindowsDigest digest;
  hash_ragged_windows(db, from, to, filter, digest);
  return digest.finish(whole_periods_text(db, from, to, filter));
}

// What a report of the range should be told (FleetReadNotes), from the same snapshot.
FleetReadNotes read_notes(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter) {
  FleetReadNotes notes;
  auto in_range = [&](const std::string& column) {
    return " x." + column + " >= " + std::to_string(from) + " AND x." + column + " < " + std::to_string(to) +
           filter_sql(db, filter, "x");
  };
  notes.refused_rollups =
      db.query("SELECT count(*) FROM gpuledger.rollups x WHERE NOT x.verified AND" + in_range("period_start")).i64(0, 0);
  const std::string iso = "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'";
  PgResult o = db.query(
      "SELECT count(*) OVER (), x.gpu_uuid || ' of ' || x.cluster || '/' || x.node || ' at ' || "
      "to_char(to_timestamp(x.start_time) AT TIME ZONE 'UTC', " + iso + ") || ' over ' || x.other_cluster || '/' || "
      "x.other_node || '''s window from ' || to_char(to_timestamp(x.other_start) AT TIME ZONE 'UTC', " + iso + ") "
      "FROM gpuledger.overlaps x WHERE" + in_range("start_time") +
      " ORDER BY x.start_time, x.cluster, x.node, x.gpu_uuid LIMIT 1");
  if (o.rows() == 1) {
    notes.overlaps = o.i64(0, 0);
    notes.first_overlap = o.text(0, 1);
  }
  return notes;
}

// Months whose windows were pruned (schema 4): a read that needs windows there
// fails rather than bill less. Their whole hours all have verified roll-ups
// (gpuledger.prune_month), so only a range not cut at whole hours needs them.
class PrunedMonths {
 public:
  explicit PrunedMonths(PgConnection& db) {
    PgResult r = db.query("SELECT month_start FROM gpuledger.pruned_months ORDER BY 1");
    for (int i = 0; i < r.rows(); ++i) months_.push_back(r.i64(i, 0));
  }
  void refuse(int64_t a, int64_t b) const {
    for (int64_t m : months_)
      if (a < report::period_end(m, Period::kMonth) && m < b)
        throw Error("the windows of " + report::format_utc(m, "%Y-%m") +
                    " were pruned from the fleet database (gpuledger fleet-db prune): a report of that month reads "
                    "its roll-ups, which cover whole hours only; give --from and --to at whole UTC hours");
  }

 private:
  std::vector<int64_t> months_;
};

}  // namespace

FleetSnapshot::FleetSnapshot(PgConnection& db) : db_(db) { begin_snapshot(db_); }

FleetSnapshot::FleetSnapshot(PgConnection& db, const std::string& shared) : db_(db) {
  begin_snapshot(db_, shared);
}

std::string FleetSnapshot::shared() {
  return db_.query("SELECT pg_catalog.pg_export_snapshot()").text(0, 0);
}

FleetSnapshot::~FleetSnapshot() {
  try {
    if (db_.ok() && db_.in_transaction()) db_.exec(std::uncaught_exceptions() ? "ROLLBACK" : "COMMIT");
  } catch (...) {  // a read-only snapshot: nothing to keep
  }
}

void for_each_fleet_window(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter,
                           const std::function<void(ledger::WindowRecord&&)>& fn) {
  for_each_fleet_window(db, from, to, filter, std::nullopt, fn);
}

void for_each_fleet_window(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter,
                           std::optional<Period> coarsest, const std::function<void(ledger::WindowRecord&&)>& fn,
                           std::string* windows_digest, FleetReadNotes* notes, FleetReadNotes* whole_range_notes,
                           WindowsDigest* ragged) {
  std::set<std::string> unreadable;  // the roll-ups whose bodies could not be read
  in_snapshot(db, [&] {
    const RangePlan plan = plan_range(from, to, coarsest);
    // The digest's ragged ends are this read's when it reads them a GPU at a
    // time (with roll-ups) and cuts them where the digest does.
    const bool ragged_read_here = coarsest && plan.ragged == digest_ragged_ends(from, to);
    std::optional<WindowsDigest> own;  // windows_digest's ragged ends
    std::string totals;                // and its whole periods
    if (windows_digest) {
      totals = whole_periods_text(db, from, to, filter);
      ragged = &own.emplace();
    }
    if (ragged && !ragged_read_here) hash_ragged_windows(db, from, to, filter, *ragged);
    if (notes) *notes = read_notes(db, from, to, filter);
    std::vector<SlotSpan> spans;  // from the coarser period: to read at this one
    for (Period p : {Period::kMonth, Period::kDay, Period::kHour}) {
      std::vector<SlotSpan> finer;
      if (auto it = plan.whole.find(p); it != plan.whole.end())
        merge_period(db, p, it->second, filter, finer, fn, unreadable);
      if (!spans.empty())
        read_period(db, p,
                    spans_sql(db, spans) + " JOIN gpuledger.window_totals t ON t.period = " +
                        db.literal(report::to_string(p)) +
                        " AND t.cluster = k.c AND t.node = k.n AND t.gpu_uuid = k.g AND t.period_start >= k.a"
                        " AND t.period_start < k.b",
                    "", finer, fn, unreadable);
      spans = std::move(finer);
    }
    const PrunedMonths pruned(db);
    for (const auto& [a, b] : plan.ragged) pruned.refuse(a, b);
    for (const auto& s : spans) pruned.refuse(s.start, s.end);
    // With roll-ups, a ragged end is an hour or two, read a GPU at a time.
    // Windows only, the whole range, sorted.
    for (const auto& [a, b] : plan.ragged) {
      if (coarsest)
        read_windows(db, key_ordered_windows(db, a, b, filter), WindowOrder::kAsSelected, fn,
                     ragged_read_here ? ragged : nullptr);
      else
        read_windows(db, starting_in(db, a, b, filter), WindowOrder::kSorted, fn);
    }
    // The spans' windows (their roll-ups stale, refused or never sent) a
    // span at a time, in key order as a ragged end's: no sort of their
    // bodies, however many a node's roll-ups leave to read.
    if (!spans.empty()) {
      std::sort(spans.begin(), spans.end(), [](const SlotSpan& x, const SlotSpan& y) {
        return std::tie(x.cluster, x.node, x.uuid, x.start) < std::tie(y.cluster, y.node, y.uuid, y.start);
      });
      const int64_t earliest = std::min_element(spans.begin(), spans.end(), [](const SlotSpan& x, const SlotSpan& y) {
                                 return x.start < y.start;
                               })->start;
      read_windows(db, spans_sql(db, spans) + lateral_windows(db, earliest, "k.c", "k.n", "k.g", "k.a", "k.b"),
                   WindowOrder::kAsSelected, fn);
    }
    if (windows_digest) *windows_digest = own->finish(totals);
  });
  // Each body once, however many reads of the range met it (a FOCUS or CSV
  // export reads the whole bill, then its rows' periods).
  for (FleetReadNotes* n : {notes, whole_range_notes})
    if (n) add_unreadable(*n, unreadable);
}

RangeNames read_range_names(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter,
                            bool ragged_read_elsewhere) {
  RangeNames names;
  in_snapshot(db, [&] {
    if (ragged_read_elsewhere)
      names.totals = whole_periods_text(db, from, to, filter);
    else
      names.windows_digest = digest_of_windows(db, from, to, filter);
    names.notes = read_notes(db, from, to, filter);
  });
  return names;
}

void add_unreadable(FleetReadNotes& notes, const std::set<std::string>& unreadable) {
  for (const auto& key : unreadable)
    if (notes.unreadable.insert(key).second) ++notes.refused_rollups;
}

std::vector<std::string> fleet_read_warnings(const FleetReadNotes& notes) {
  std::vector<std::string> out;
  if (notes.refused_rollups > 0)
    out.push_back(std::to_string(notes.refused_rollups) +
                  " roll-ups in the fleet database did not check out against their windows and were not read (the "
                  "bill is the windows'; see gpuledger.rollups.refusal)");
  if (notes.overlaps > 0)
    out.push_back(std::to_string(notes.overlaps) +
                  " windows overlap another window of the same GPU, so that GPU time is billed twice (the first: " +
                  notes.first_overlap + "; see gpuledger.overlaps)");
  return out;
}

}  // namespace gpuledger::fleet
