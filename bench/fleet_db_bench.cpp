// gpuledger-fleet-db-bench: the fleet ledger at scale (docs/performance.md,
// "The fleet ledger in PostgreSQL").
//   0. the client's CPU a window against what it replaced, in one run
//      (fleet_codec.h): a roll-up body's one-pass reader against the general
//      one, a window's digest alone against its row and digest
//   1. a real PostgreSQL server of its own (tests/fleet/pg_server.h), durable
//      (fsync on), migrated
//   2. --nodes nodes shipped for real: each a local store of --days of 60 s
//      windows on --gpus GPUs with --accounts holders each (charges, energy),
//      drained by the agent's own shipper (fleet_shipper.h: batches of 500,
//      one connection a node), roll-ups of every complete hour, day and month
//      included (fleet_rollups.h); --varied: every window's shares, splits
//      and efficiency change every minute, as a real node's
//   3. --fleet-nodes: the fleet grown to that many nodes by copying the
//      shipped nodes' roll-ups and window totals under new node and GPU names
//      (their windows are not copied: no report of whole periods reads them,
//      and 1,000 node-months of them would not fit this VM's disk; but the
//      last 30 minutes of the month to date timed below are, which no roll-up
//      covers: 240,000 windows at 1,000 nodes, as a real fleet's report reads)
//   4. reports: the ingest rate, table + index bytes per node-month, and the
//      time of a month's report by team and by namespace (`gpuledger report
//      --fleet-db`, a separate process), the JSON and FOCUS exports of that
//      month, with the plans PostgreSQL ran for the table (auto_explain)
//   5. checks the bill: the JSON total equals every charge of the fleet, exactly
//   6. --prune: `fleet-db prune` of the month, and the sizes after it
//   7. --pack: the shipped windows packed a GPU-hour to a row, as `fleet-db
//      pack` packs them (hour_packs.h), and the sizes again; the reports
//      then read the packed windows
// The full shape: --nodes 2 --fleet-nodes 1000 --days 30. At 10,000 nodes the
// roll-ups of every hour would not fit this VM's disk (132 GiB):
// --fleet-nodes 10000 --grow-periods month copies the months only, which is
// all the month's table report reads (JSON and the other formats need days
// and hours, so they are skipped).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet_periods.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_shipper.h"
#include "fleet/pg_connection.h"
#include "fleet_codec.h"
#include "hour_packs.h"
#include "ingest_replay.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store.h"
#include "pg_server.h"
#include "server_cpu.h"
#include "server_pages.h"

namespace {

using namespace gpuledger;
namespace fs = std::filesystem;

// The month to date the reports are timed at: 14 days, 12 hours and 30 minutes.
constexpr int64_t kMonthToDate = 14 * 86400 + 12 * 3600 + 1800;

struct Shape {
  int nodes = 2, fleet_nodes = 0, gpus = 8, accounts = 3;
  std::string grow_periods = "hour,day,month";  // the roll-ups copied to grown nodes
  double days = 30;
  int64_t start = 1'793'491'200;  // 2026-11-01T00:00:00Z
  // --varied: the holders' shares, busy split, energy split, efficiency and
  // VRAM change every minute, as a real node's do (full-precision doubles).
  // Without it a GPU's windows carry the same accounts and charges every
  // minute, which PostgreSQL's Memoize turns into one parse an hour's check
  // (docs/performance.md, "Schema 9").
  bool varied = false;
  // --replay: the shippers' statements sent again to a fresh database, the
  // server's share of ingest alone (ingest_replay.h).
  bool replay = false;
};

// A number in [0, 1) from (a, b, c, d), the same every run (splitmix64).
double unit(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t z = a * 0x9E3779B97F4A7C15ull ^ b * 0xBF58476D1CE4E5B9ull ^ c * 0x94D049BB133111EBull ^ d;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 9007199254740992.0;
}

// One window of one GPU: `accounts` holders sharing it, busy split by activity.
ledger::WindowRecord window(int node, int gpu, int64_t start, const Shape& s) {
  ledger::WindowRecord w;
  w.start = start;
  w.end = start + 60;
  w.slot = {"GPU-" + std::to_string(node) + "-" + std::to_string(gpu), "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  w.cost_micros = 60'000;
  w.busy_micros = 36'000;
  w.idle_micros = 24'000;
  w.busy_fraction = 0.6;
  w.busy_source = "device";
  w.split_source = "nvml";
  w.observed_seconds = 60;
  w.allocated_total = 1;
  w.device = {0.55, 0.3, 0.1, 0.2};
  w.energy = ledger::WindowEnergyRecord{18'000'000, "dcgm", {}, 350.0};
  int64_t busy_left = w.busy_micros, idle_left = w.idle_micros, mj_busy = 12'000'000, mj_idle = 6'000'000;
  // Each holder's share of the activity: equal, or this minute's (--varied).
  std::vector<double> share(static_cast<size_t>(s.accounts), 1.0 / s.accounts);
  auto u = [&](int a, int what) {
    return unit(static_cast<uint64_t>(node), static_cast<uint64_t>(gpu), static_cast<uint64_t>(start),
                static_cast<uint64_t>(a * 16 + what));
  };
  if (s.varied) {
    double sum = 0;
    for (int a = 0; a < s.accounts; ++a) sum += share[static_cast<size_t>(a)] = 0.5 + u(a, 0);
    for (auto& x : share) x /= sum;
    w.device = {0.4 + 0.3 * u(-1, 1), 0.2 + 0.2 * u(-1, 2), 0.1 * u(-1, 3), 0.1 + 0.2 * u(-1, 4)};
  }
  for (int a = 0; a < s.accounts; ++a) {
    const int k = (node * s.gpus + gpu) * s.accounts + a;
    const double mine = share[static_cast<size_t>(a)];
    ledger::AccountRecord r;
    r.account = "k8s/uid-" + std::to_string(k);
    r.labels = {"ns-" + std::to_string(k % 40), "pod-" + std::to_string(k), "main", "team-" + std::to_string(k % 12), "", ""};
    r.held_share = r.allocated_share = 1.0 / s.accounts;
    r.activity_share = mine;
    r.busy_seconds = r.gpu_busy_seconds = 36.0 * mine;
    r.vram_byte_seconds = s.varied ? 6e11 * (0.9 + 0.2 * u(a, 5)) : 6e11;
    r.launches = s.varied ? 800 + static_cast<int64_t>(400 * u(a, 6)) : 1000;
    r.efficiency = {0.55, 0.3, 0.1, 0.2};
    if (s.varied) r.efficiency = {0.4 + 0.3 * u(a, 7), 0.2 + 0.2 * u(a, 8), 0.1 * u(a, 9), 0.1 + 0.2 * u(a, 10)};
    r.evidence.vram_peak_bytes = uint64_t{20} << 30;
    const bool last = a + 1 == s.accounts;
    const int64_t busy = last ? busy_left : static_cast<int64_t>(w.busy_micros * mine),
                  idle = last ? idle_left : w.idle_micros / s.accounts;
    const int64_t eb = last ? mj_busy : static_cast<int64_t>(12'000'000 * mine),
                  ei = last ? mj_idle : 6'000'000 / s.accounts;
    busy_left -= busy, idle_left -= idle, mj_busy -= eb, mj_idle -= ei;
    w.charges.push_back({r.account, ledger::ChargeKind::kBusy, busy});
    w.charges.push_back({r.account, ledger::ChargeKind::kIdle, idle});
    w.energy->charges.push_back({r.account, ledger::ChargeKind::kBusy, eb});
    w.energy->charges.push_back({r.account, ledger::ChargeKind::kIdle, ei});
    w.accounts.push_back(std::move(r));
  }
  return w;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// `gpuledger report ...` as a separate process: wall seconds, stdout in `out`.
// The largest resident set of any report so far (KiB, /usr/bin/time's).
long g_peak_report_kib = 0;
long g_last_report_kib = 0;  // of the latest report
double last_mib() { return g_last_report_kib / 1024.0; }

double run_report(const std::string& binary, const std::vector<std::string>& args, std::string& out) {
  const std::string rss_file = (fs::temp_directory_path() / ("gl-fleet-bench-rss-" + std::to_string(::getpid()))).string();
  std::string cmd = "/usr/bin/time -f %M -o " + rss_file + " " + binary + " report";
  for (const auto& a : args) {
    cmd += " '";
    for (char c : a) cmd += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += "'";
  }
  const auto began = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  out.clear();
  size_t n = 0;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = p ? ::pclose(p) : -1;
  const double took = seconds_since(began);
  if (status != 0) throw std::runtime_error("gpuledger report failed: " + out);
  long kib = 0;
  std::ifstream(rss_file) >> kib;
  g_peak_report_kib = std::max(g_peak_report_kib, kib);
  g_last_report_kib = kib;
  return took;
}

// Table and index bytes of the gpuledger tables' partitions, by table (the
// root of each: a month of roll-ups is three partitions from schema 12).
int64_t print_sizes(fleet::PgConnection& db, double node_months, const char* what) {
  fleet::PgResult sizes = db.query(
      "SELECT p.relname, sum(pg_table_size(c.oid)), sum(pg_indexes_size(c.oid)) FROM pg_class c "
      "JOIN pg_class p ON p.oid = pg_partition_root(c.oid) JOIN pg_namespace n ON n.oid = p.relnamespace "
      "WHERE n.nspname = 'gpuledger' AND c.relkind = 'r' AND c.relispartition GROUP BY 1 ORDER BY 1");
  int64_t table_bytes = 0, index_bytes = 0;
  std::printf("%s:\n", what);
  for (int r = 0; r < sizes.rows(); ++r) {
    table_bytes += sizes.i64(r, 1), index_bytes += sizes.i64(r, 2);
    std::printf("  %-15s table %9.1f MiB  index %9.1f MiB\n", sizes.text(r, 0).c_str(), sizes.i64(r, 1) / 1048576.0,
                sizes.i64(r, 2) / 1048576.0);
  }
  std::printf("  per node-month: table %.1f MiB + index %.1f MiB = %.1f MiB\n", table_bytes / node_months / 1048576.0,
              index_bytes / node_months / 1048576.0, (table_bytes + index_bytes) / node_months / 1048576.0);
  return table_bytes + index_bytes;
}

// Nodes [from_node, to_node] grown from shipped node k mod n (SQL text).
struct Grown {
  explicit Grown(const Shape& s)
      : from_node(std::to_string(s.nodes)),
        to_node(std::to_string(s.fleet_nodes - 1)),
        n(std::to_string(s.nodes)),
        // GPU-<src>-<g> becomes GPU-<k>-<g>; src = k mod the shipped nodes.
        uuid("'GPU-' || k || substr(x.gpu_uuid, length('GPU-' || (k % " + n + ")) + 1)") {}
  std::string from_node, to_node, n, uuid;
};

// The shipped nodes' roll-ups and totals under the names of nodes [from, to).
void grow_fleet(fleet::PgConnection& db, const Shape& s) {
  const Grown g(s);
  const std::string &n = g.n, &uuid = g.uuid;
  const std::string pick = " FROM generate_series(" + g.from_node + ", " + g.to_node + ") k JOIN gpuledger.";
  const std::string same = " x ON x.node = 'node-' || (k % " + n + ") AND x.period = ANY(string_to_array('" +
                           s.grow_periods + "', ','))";
  db.exec("INSERT INTO gpuledger.window_totals SELECT x.period, x.period_start, x.cluster, 'node-' || k, " + uuid +
          ", x.windows, x.cost_micros, x.digests" + pick + "window_totals" + same);
  // The copies are of roll-ups the server verified against the shipped
  // nodes' windows; the grown nodes have no windows (they would not fit on
  // the disk), so the insert check that reads them (schema 3) is off for the
  // copy, run as the owner, and each copy keeps its source's verdict.
  db.exec("ALTER TABLE gpuledger.rollups DISABLE TRIGGER verify_rollup");
  db.exec("INSERT INTO gpuledger.rollups SELECT x.period, x.period_start, x.cluster, 'node-' || k, " + uuid +
          ", x.windows, x.cost_micros, x.digests, x.digest, replace(x.body::text, '\"slot\":[\"GPU-' || (k % " + n + ") || '-', '\"slot\":[\"GPU-' || k || '-')::json, "
          "x.shipped_at, x.verified, x.refusal" +
          pick + "rollups" + same);
  db.exec("ALTER TABLE gpuledger.rollups ENABLE TRIGGER verify_rollup");
}

// The month to date's ragged end (its last 30 minutes, which no roll-up
// covers) in windows under the grown nodes' names too: a real fleet's month
// to date reads them, 240,000 at 1,000 nodes. Copied as the roll-ups are (the
// insert's checks off: their totals are the hour's roll-up's); after the
// sizes are taken, which are of the shipped nodes' windows.
void grow_ragged_end(fleet::PgConnection& db, const Shape& s) {
  if (s.grow_periods.find("hour") == std::string::npos || s.days < 15) return;
  const Grown g(s);
  const std::string to = std::to_string(s.start + kMonthToDate), from = std::to_string(s.start + kMonthToDate - 1800);
  std::string columns, values;
  for (const auto& c : fleet::kWindowColumns) columns += ", " + c, values += ", x." + c;
  db.exec("ALTER TABLE gpuledger.windows DISABLE TRIGGER USER");
  db.exec("INSERT INTO gpuledger.windows(cluster, node, gpu_uuid, start_time" + columns +
          ", shipped_at, body) SELECT x.cluster, 'node-' || k, " + g.uuid + ", x.start_time" + values +
          ", x.shipped_at, x.body FROM generate_series(" + g.from_node + ", " + g.to_node +
          ") k JOIN gpuledger.windows x ON x.node = 'node-' || (k % " + g.n + ") AND x.start_time >= " + from +
          " AND x.start_time < " + to);
  db.exec("ALTER TABLE gpuledger.windows ENABLE TRIGGER USER");
  db.exec("ANALYZE gpuledger.windows");
  std::printf("month to date's last 30 minutes: %s windows (the grown nodes' copied from the shipped ones')\n",
              db.query("SELECT count(*) FROM gpuledger.windows WHERE start_time >= " + from + " AND start_time < " + to)
                  .text(0, 0)
                  .c_str());
}

// The formats other than the table and JSON, timed: line counts as the rows written.
template <typename Report>
void other_formats(Report& report, const Shape& s, std::string& out) {
  auto lines = [&] { return static_cast<size_t>(std::count(out.begin(), out.end(), '\n')); };
  double t = report({"--format", "focus"}, out);
  std::printf("report --format focus (daily)   %6.2f s, %zu rows, %.0f MiB\n", t, lines() - 1, last_mib());
  t = report({"--format", "focus", "--granularity", "hour", "--node", "node-0"}, out);
  std::printf("report --format focus --granularity hour --node node-0   %6.2f s, %zu rows (one node), %.0f MiB\n", t,
              lines() - 1, last_mib());
  t = report({"--by", "team", "--format", "html"}, out);
  std::printf("report --by team --format html  %6.2f s, %zu bytes, %.0f MiB\n", t, out.size(), last_mib());
  t = report({"--by", "team", "--format", "csv", "--granularity", "month"}, out);
  std::printf("report --by team --format csv --granularity month  %6.2f s, %zu lines\n", t, lines());
  t = report({"--by", "team", "--format", "csv", "--granularity", "day"}, out);
  std::printf("report --by team --format csv --granularity day    %6.2f s, %zu lines, %.0f MiB\n", t, lines(), last_mib());
  if (s.days >= 15) {  // month to date: 14 days, 12 hours and 30 minutes
    std::vector<std::string> mtd = {"--by", "team", "--to", std::to_string(s.start + kMonthToDate)};
    t = report(mtd, out);
    std::printf("report --by team, month to date (14 d 12 h 30 min)  %6.2f s, %zu lines, %.0f MiB\n", t, lines(), last_mib());
    // The same range cut at its whole days and at its whole hours: what each
    // part of it costs (day roll-ups, hour roll-ups, the last 30 minutes' windows).
    for (const auto& [cut, words] : {std::pair{int64_t{14 * 86400}, "14 d, day roll-ups only"},
                                     std::pair{int64_t{14 * 86400 + 12 * 3600}, "14 d 12 h, no window"}}) {
      t = report({"--by", "team", "--to", std::to_string(s.start + cut)}, out);
      std::printf("report --by team, month to date cut at %-24s %6.2f s\n", words, t);
    }
    mtd.insert(mtd.end(), {"--format", "json"});  // charted by the hour: 14 days of rows a GPU-day (schema 13)
    t = report(mtd, out);
    std::printf("report --by team --format json, month to date       %6.2f s, %zu bytes, %.0f MiB\n", t, out.size(),
                last_mib());
  }
}

// fleet-db prune of the bench's month (complete: its roll-ups shipped), then the sizes.
void prune_month(fleet::PgConnection& db, const Shape& s) {
  const int64_t next = report::period_end(s.start, report::Granularity::kMonth);
  const auto began = std::chrono::steady_clock::now();
  const int64_t now = std::max<int64_t>(next, ::time(nullptr));
  for (const auto& r : fleet::prune_before(db, next, now))
    std::printf("prune %lld: %s (%lld windows)\n", static_cast<long long>(r.month_start),
                r.kept_because ? r.kept_because->c_str() : "pruned", static_cast<long long>(r.windows));
  std::printf("prune: %.1f s\n", seconds_since(began));
  db.exec("VACUUM ANALYZE");
  print_sizes(db, s.fleet_nodes * s.days / 30.0, "after prune (the month's roll-ups and totals; the hour after it "
                                                  "still as windows)");
}

// --server-malloc keep: glibc keeps a backend's freed heap (up to 32 MiB)
// instead of handing it back to the kernel, so each FETCH's store of rows
// does not fault its pages in again (docs/fleet-db.md, "The server's memory").
const std::vector<std::string> kServerMallocKeep = {"MALLOC_MMAP_THRESHOLD_=16777216",
                                                    "MALLOC_TRIM_THRESHOLD_=33554432"};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress as it comes, also into a file
  Shape s;
  std::string binary = GPULEDGER_BINARY, plans, huge_pages;
  bool quick = false, prune = false, keep_freed = false, pack = false;
  int repeat = 1, hold_seconds = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--quick") quick = true;
    else if (a == "--nodes") s.nodes = std::stoi(next());
    else if (a == "--fleet-nodes") s.fleet_nodes = std::stoi(next());
    else if (a == "--gpus") s.gpus = std::stoi(next());
    else if (a == "--days") s.days = std::stod(next());
    else if (a == "--accounts") s.accounts = std::stoi(next());
    else if (a == "--plans") plans = next();
    else if (a == "--repeat") repeat = std::max(1, std::stoi(next()));
    else if (a == "--hold-seconds") hold_seconds = std::stoi(next());
    else if (a == "--gpuledger") binary = next();
    else if (a == "--grow-periods") s.grow_periods = next();
    else if (a == "--prune") prune = true;
    else if (a == "--huge-pages") huge_pages = next();
    else if (a == "--server-malloc" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "keep" || std::string(argv[i + 1]) == "default"))
      keep_freed = next() == "keep";
    else if (a == "--varied") s.varied = true;
    else if (a == "--replay") s.replay = true;
    else if (a == "--pack")
      pack = true;
    else {
      std::fprintf(
          stderr,
          "usage: %s [--quick] [--nodes N] [--fleet-nodes N] [--gpus N] [--days D] [--accounts N] "
          "[--plans FILE] [--repeat N] [--hold-seconds S] [--gpuledger BINARY] [--grow-periods hour,day,month] "
          "[--prune] [--varied] [--replay] [--pack] [--huge-pages on|off|try] [--server-malloc keep|default]\n",
          argv[0]);
      return 2;
    }
  }
  if (quick) s.nodes = 2, s.fleet_nodes = 4, s.days = 2;  // two days: the JSON reads hours, which the grown nodes have
  if (s.fleet_nodes < s.nodes) s.fleet_nodes = s.nodes;
  {  // an hour roll-up of GPU 0, as reports read them by the hundred thousand
    std::vector<ledger::WindowRecord> hour;
    for (int i = 0; i < 60; ++i) hour.push_back(window(0, 0, s.start + 60 * i, s));
    bench::print_codec_costs(ledger::merge_windows(hour), quick ? 2000 : 20000);
  }
  try {
    // Huge pages as PostgreSQL's own default (try): used where vm.nr_hugepages has room for them.
    testing::PgServer pg("-c shared_buffers=2GB -c work_mem=64MB -c max_wal_size=8GB -c checkpoint_timeout=30min" +
                             (huge_pages.empty() ? std::string() : " -c huge_pages=" + huge_pages),
                         keep_freed ? kServerMallocKeep : std::vector<std::string>{});
    std::printf("PostgreSQL's shared memory: %s\n", bench::describe_server_pages(pg.dir() + "/data").c_str());
    if (keep_freed) std::printf("PostgreSQL's malloc: a backend keeps up to 32 MiB it freed (--server-malloc keep)\n");
    const std::string admin = pg.conninfo(), pw = pg.admin_password_file();
    fleet::PgConnection db(admin, pw);
    fleet::migrate(db, s.start);
    const int64_t windows_per_gpu = static_cast<int64_t>(s.days * 1440);
    // The nodes' stores: the windows, then an hour more (so the last day is complete).
    const fs::path dir = fs::path(pg.dir()) / "stores";
    fs::create_directories(dir);
    const auto wrote = std::chrono::steady_clock::now();
    int64_t written = 0;
    int64_t last_start = 0;
    for (int node = 0; node < s.nodes; ++node) {
      ledger::Store store((dir / ("node-" + std::to_string(node) + ".db")).string());
      std::vector<ledger::WindowRecord> batch;
      for (int64_t i = 0; i < windows_per_gpu + 60; ++i) {
        for (int g = 0; g < s.gpus; ++g) batch.push_back(window(node, g, s.start + 60 * i, s));
        last_start = s.start + 60 * i;
        if (batch.size() >= 4000) store.insert_windows(batch), written += batch.size(), batch.clear();
      }
      store.insert_windows(batch);
      written += static_cast<int64_t>(batch.size());
    }
    std::printf("fleet: %d nodes shipped x %d GPUs x %.2f days (+1 h), %d accounts per GPU%s: %lld windows "
                "(local stores written in %.1f s)\n",
                s.nodes, s.gpus, s.days, s.accounts, s.varied ? " (varied every minute)" : "",
                static_cast<long long>(written), seconds_since(wrote));
    // Ingest: every node's shipper at once, until its windows are shipped and its periods rolled up.
    const auto began = std::chrono::steady_clock::now();
    const double server_cpu0 = bench::server_cpu_seconds(pg.dir() + "/data"), own_cpu0 = bench::own_cpu_seconds();
    std::vector<std::unique_ptr<fleet::FleetShipper>> shippers;
    std::vector<bench::StatementStream> streams(static_cast<size_t>(s.nodes));
    for (int node = 0; node < s.nodes; ++node) {
      fleet::FleetShipperOptions o;
      o.conninfo = admin;
      o.password_file = pw;
      o.store_path = (dir / ("node-" + std::to_string(node) + ".db")).string();
      o.origin = {"bench", "node-" + std::to_string(node)};
      o.interval = std::chrono::milliseconds(20);
      if (s.replay) o.statement_log = streams[static_cast<size_t>(node)].recorder();
      shippers.push_back(std::make_unique<fleet::FleetShipper>(o));
      shippers.back()->start();
    }
    auto rolled_up = [&](int node) {
      ledger::Store store((dir / ("node-" + std::to_string(node) + ".db")).string(), ledger::Store::Mode::kReadOnly);
      const auto meta = store.meta_with_prefix("fleet/rolled/");
      for (fleet::Period p : fleet::kPeriods) {
        int64_t next = report::period_start(s.start, p);  // nothing rolled up yet
        for (const auto& [key, value] : meta)
          if (key == std::string("fleet/rolled/") + report::to_string(p)) next = std::stoll(value);
        if (next != report::period_start(last_start, p)) return false;  // the period of the latest window never completes
      }
      return true;
    };
    const auto deadline = began + std::chrono::hours(3);
    for (int node = 0; node < s.nodes; ++node)
      while (shippers[node]->status().pending > 0 || shippers[node]->status().shipped == 0 || !rolled_up(node)) {
        if (std::chrono::steady_clock::now() > deadline)
          throw std::runtime_error("node-" + std::to_string(node) + " did not finish shipping: " +
                                   shippers[node]->status().reason);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    const double ingest = seconds_since(began);
    const double server_cpu = bench::server_cpu_seconds(pg.dir() + "/data") - server_cpu0;
    const double own_cpu = bench::own_cpu_seconds() - own_cpu0;
    for (auto& sh : shippers) sh->stop();
    std::printf("ingest: %.1f s, %.0f windows/s with their roll-ups (%d shippers)\n", ingest, written / ingest, s.nodes);
    // What a window costs each side: a server whose cores are its own (the
    // shippers on the nodes) takes a core-second's worth of windows per core.
    std::printf("ingest CPU: PostgreSQL %.1f s (%.0f us a window: %.0f windows/s a core), shippers %.1f s "
                "(%.0f us a window), %u cores\n",
                server_cpu, 1e6 * server_cpu / written, written / server_cpu, own_cpu, 1e6 * own_cpu / written,
                std::thread::hardware_concurrency());
    db.exec("VACUUM ANALYZE");
    print_sizes(db, s.nodes * s.days / 30.0, "shipped nodes");
    if (pack) {
      bench::pack_shipped_windows(db, s.start + static_cast<int64_t>(s.days * 86400) + 3600);
      print_sizes(db, s.nodes * s.days / 30.0, "shipped nodes, their verified hours packed");
    }
    if (s.replay) {  // after the shipped database's VACUUM: its autovacuum is not the replay's cost
      shippers.clear();  // their threads done with the streams
      const bench::ReplayResult r = bench::replay_ingest(pg, "gl_replay", s.start, streams);
      std::printf("replay: the shippers' %zu statements sent again to a fresh database: %.1f s, %.0f windows/s "
                  "(PostgreSQL alone, %u cores); PostgreSQL %.1f s (%.0f us a window); the same windows, totals and "
                  "roll-ups as shipped\n",
                  r.statements, r.seconds, written / r.seconds, std::thread::hardware_concurrency(),
                  r.server_cpu_seconds, 1e6 * r.server_cpu_seconds / written);
      for (const auto& f : r.functions)
        std::printf("  %-26s %8lld calls  %6.2f s (%5.1f us a window), of it its own %6.2f s\n", f.name.c_str(),
                    static_cast<long long>(f.calls), f.total_seconds, 1e6 * f.total_seconds / written,
                    f.self_seconds);
    }
    if (s.fleet_nodes > s.nodes) {
      const auto grew = std::chrono::steady_clock::now();
      grow_fleet(db, s);
      db.exec("VACUUM ANALYZE");
      std::printf("fleet grown to %d nodes in %.1f s\n", s.fleet_nodes, seconds_since(grew));
      print_sizes(db, s.fleet_nodes * s.days / 30.0, "whole fleet (windows of the shipped nodes only)");
      grow_ragged_end(db, s);
    }
    std::printf("%s", db.query("SELECT string_agg(period || ' ' || n, ', ' ORDER BY period) FROM (SELECT period, "
                               "count(*) n FROM gpuledger.rollups GROUP BY 1) x").text(0, 0).c_str());
    std::printf(" roll-ups\n");
    // Reports over the month, as finance runs them (a separate process).
    // A month, or the whole days shipped when fewer (the grown nodes have roll-ups of complete periods only).
    const int64_t days = std::min<int64_t>(30, static_cast<int64_t>(s.days));
    const std::string from = std::to_string(s.start), to = std::to_string(s.start + days * 86400);
    const std::vector<std::string> range = {"--fleet-db", admin, "--fleet-db-password-file", pw, "--from", from, "--to", to};
    auto report = [&](std::vector<std::string> extra, std::string& out) {
      std::vector<std::string> args = range;
      for (size_t i = 0; i < extra.size(); ++i) {  // --to given again: replaces the range's
        auto at = std::find(args.begin(), args.end(), extra[i]);
        if (extra[i] == "--to" && at != args.end() && i + 1 < extra.size()) *(at + 1) = extra[++i];
        else args.push_back(extra[i]);
      }
      return run_report(binary, args, out);
    };
    const int64_t expected = int64_t{s.fleet_nodes} * s.gpus * days * 1440 * 60'000;
    int failures = 0;
    std::string out;
    for (const char* by : {"team", "namespace"}) {
      std::string times;
      for (int r = 0; r < repeat; ++r) times += (r ? ", " : "") + std::to_string(report({"--by", by}, out)).substr(0, 4) + " s";
      std::printf("report --by %-9s (table)  %s, %zu lines\n", by, times.c_str(),
                  static_cast<size_t>(std::count(out.begin(), out.end(), '\n')));
    }
    const bool days_grown = s.grow_periods.find("day") != std::string::npos;
    if (days_grown) {  // the JSON reads days, which grown nodes have only with --grow-periods ...,day
      const double t = report({"--by", "team", "--format", "json"}, out);
      const auto j = nlohmann::json::parse(out);
      std::string total = j["total"]["cost_total"];
      total.erase(total.find('.'), 1);
      const bool exact = std::stoll(total) == expected;
      failures += exact ? 0 : 1;
      std::printf("report --by team --format json  %6.2f s, %zu rows, total %s micro-units (%s)\n", t, j["rows"].size(),
                  total.c_str(), exact ? "exact" : "WRONG");
    }
    // The other formats read days or hours, which grown nodes have only with --grow-periods hour,day,...
    if (days_grown && s.grow_periods.find("hour") != std::string::npos) other_formats(report, s, out);
    std::printf("peak memory of the largest report: %.0f MiB (maximum resident set)\n", g_peak_report_kib / 1024.0);
    if (prune) prune_month(db, s);
    // The plans PostgreSQL ran for the table report by team (auto_explain, in the server's log).
    const size_t log_before = pg.log().size();
    std::vector<std::string> traced = range;
    traced[1] += " options='-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 "
                 "-c auto_explain.log_analyze=on -c auto_explain.log_buffers=on'";
    run_report(binary, [&] { auto a = traced; a.insert(a.end(), {"--by", "team"}); return a; }(), out);
    const std::string text = pg.log().substr(log_before);
    if (!plans.empty()) std::ofstream(plans) << text;
    else std::fputs(text.c_str(), stdout);
    if (hold_seconds > 0) {  // to look at it: psql, EXPLAIN, more reports
      std::printf("holding the server for %d s: %s (password file %s)\n", hold_seconds, admin.c_str(), pw.c_str());
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::seconds(hold_seconds));
    }
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuledger-fleet-db-bench: %s\n", e.what());
    return 1;
  }
}
