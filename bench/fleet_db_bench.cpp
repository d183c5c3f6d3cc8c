// gpuledger-fleet-db-bench: the fleet ledger at scale (docs/performance.md,
// "The fleet ledger in PostgreSQL").
//   1. a real PostgreSQL server of its own (tests/fleet/pg_server.h), migrated
//   2. a synthetic fleet shipped through the agents' own sink
//      (fleet_sink_postgres.h) in batches of 500 windows, one connection per
//      --writers: --nodes x --gpus x --days of 60 s windows, --accounts per GPU
//      (teams and namespaces spread over them), with charges and energy
//   3. reports: the ingest rate, table + index bytes per node-month, and the
//      time of a month's report by team and by namespace (`gpuledger report
//      --fleet-db`, a separate process), with EXPLAIN (ANALYZE, BUFFERS) of its
//      scans and of a plain SQL aggregate by team
//   4. checks the bill: the report's total equals every charge written, exactly
// The full shape (1,000 nodes x 8 GPUs x 30 days) is 345.6 M windows: pass it
// explicitly; the default is a slice whose figures scale per node-month.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet_schema.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/pg_connection.h"
#include "pg_server.h"

namespace {

using namespace gpuledger;

struct Shape {
  int nodes = 10, gpus = 8, accounts = 3, writers = 2;
  double days = 3;
  int64_t start = 1'793'491'200;  // 2026-11-01T00:00:00Z
};

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
  w.observed_seconds = 60;
  w.allocated_total = 1;
  w.device = {0.55, 0.3, 0.1, 0.2};
  w.energy = ledger::WindowEnergyRecord{18'000'000, "dcgm", {}, 350.0};
  int64_t busy_left = w.busy_micros, idle_left = w.idle_micros, mj_busy = 12'000'000, mj_idle = 6'000'000;
  for (int a = 0; a < s.accounts; ++a) {
    const int k = (node * s.gpus + gpu) * s.accounts + a;
    ledger::AccountRecord r;
    r.account = "k8s/uid-" + std::to_string(k);
    r.labels = {"ns-" + std::to_string(k % 40), "pod-" + std::to_string(k), "main", "team-" + std::to_string(k % 12)};
    r.held_share = r.allocated_share = 1.0 / s.accounts;
    r.activity_share = 1.0 / s.accounts;
    r.busy_seconds = r.gpu_busy_seconds = 36.0 / s.accounts;
    r.vram_byte_seconds = 6e11;
    r.launches = 1000;
    r.efficiency = {0.55, 0.3, 0.1, 0.2};
    const bool last = a + 1 == s.accounts;
    const int64_t busy = last ? busy_left : w.busy_micros / s.accounts, idle = last ? idle_left : w.idle_micros / s.accounts;
    const int64_t eb = last ? mj_busy : 12'000'000 / s.accounts, ei = last ? mj_idle : 6'000'000 / s.accounts;
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
double run_report(const std::string& binary, const std::vector<std::string>& args, std::string& out) {
  std::string cmd = binary + " report";
  for (const auto& a : args) cmd += " '" + a + "'";
  const auto began = std::chrono::steady_clock::now();
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  out.clear();
  size_t n = 0;
  while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = p ? ::pclose(p) : -1;
  if (status != 0) throw std::runtime_error("gpuledger report failed: " + out);
  return seconds_since(began);
}

}  // namespace

int main(int argc, char** argv) {
  Shape s;
  std::string binary = GPULEDGER_BINARY, plans;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--quick") quick = true;
    else if (a == "--nodes") s.nodes = std::stoi(next());
    else if (a == "--gpus") s.gpus = std::stoi(next());
    else if (a == "--days") s.days = std::stod(next());
    else if (a == "--accounts") s.accounts = std::stoi(next());
    else if (a == "--writers") s.writers = std::stoi(next());
    else if (a == "--plans") plans = next();
    else if (a == "--gpuledger") binary = next();
    else {
      std::fprintf(stderr, "usage: %s [--quick] [--nodes N] [--gpus N] [--days D] [--accounts N] [--writers N] "
                   "[--plans FILE] [--gpuledger BINARY]\n", argv[0]);
      return 2;
    }
  }
  if (quick) s.nodes = 2, s.days = 0.05;
  try {
    testing::PgServer pg;
    const std::string admin = pg.conninfo(), pw = pg.admin_password_file();
    fleet::PgConnection db(admin, pw);
    fleet::migrate(db, s.start);
    const int64_t windows_per_gpu = static_cast<int64_t>(s.days * 1440);
    // Ingest: nodes spread over the writers, each node's windows in time order, 500 a batch.
    std::atomic<int64_t> written{0};
    const auto began = std::chrono::steady_clock::now();
    std::vector<std::thread> writers;
    for (int t = 0; t < s.writers; ++t)
      writers.emplace_back([&, t] {
        fleet::PgConnection conn(admin, pw);
        for (int node = t; node < s.nodes; node += s.writers) {
          fleet::FleetSinkPostgres sink(conn, {"bench", "node-" + std::to_string(node)});
          std::vector<ledger::WindowRecord> batch;
          auto flush = [&] {
            std::vector<const ledger::WindowRecord*> ptrs;
            for (const auto& w : batch) ptrs.push_back(&w);
            for (auto d : sink.ship(ptrs))
              if (d != fleet::Delivery::kStored) throw std::runtime_error("bench: a window was not stored");
            written += static_cast<int64_t>(batch.size());
            batch.clear();
          };
          for (int64_t i = 0; i < windows_per_gpu; ++i)
            for (int g = 0; g < s.gpus; ++g) {
              batch.push_back(window(node, g, s.start + 60 * i, s));
              if (batch.size() == 500) flush();
            }
          flush();
        }
      });
    for (auto& w : writers) w.join();
    const double ingest = seconds_since(began);
    db.exec("VACUUM ANALYZE");
    fleet::PgResult sizes = db.query(
        "SELECT p.relname, sum(pg_table_size(c.oid)), sum(pg_indexes_size(c.oid)) FROM pg_inherits i JOIN pg_class c "
        "ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace n ON n.oid = p.relnamespace "
        "WHERE n.nspname = 'gpuledger' AND c.relkind = 'r' GROUP BY 1 ORDER BY 1");
    const double node_months = s.nodes * s.days / 30.0;
    int64_t table_bytes = 0, index_bytes = 0;
    std::printf("fleet: %d nodes x %d GPUs x %.2f days, %d accounts per GPU: %lld windows\n", s.nodes, s.gpus, s.days,
                s.accounts, static_cast<long long>(written.load()));
    std::printf("ingest: %.1f s, %.0f windows/s (%d writers)\n", ingest, written / ingest, s.writers);
    for (int r = 0; r < sizes.rows(); ++r) {
      table_bytes += sizes.i64(r, 1), index_bytes += sizes.i64(r, 2);
      std::printf("  %-15s table %8.1f MiB  index %8.1f MiB\n", sizes.text(r, 0).c_str(), sizes.i64(r, 1) / 1048576.0,
                  sizes.i64(r, 2) / 1048576.0);
    }
    std::printf("per node-month: table %.1f MiB + index %.1f MiB = %.1f MiB\n", table_bytes / node_months / 1048576.0,
                index_bytes / node_months / 1048576.0, (table_bytes + index_bytes) / node_months / 1048576.0);
    // Reports over the month, as finance runs them (a separate process).
    const std::string from = std::to_string(s.start), to = std::to_string(s.start + 30 * 86400);
    int64_t expected = written * 60'000, failures = 0;
    for (const char* by : {"team", "namespace"}) {
      std::string out;
      const double t = run_report(binary, {"--fleet-db", admin, "--fleet-db-password-file", pw, "--from", from, "--to",
                                           to, "--by", by, "--format", "json"},
                                  out);
      const auto j = nlohmann::json::parse(out);
      std::string total = j["total"]["cost_total"];
      total.erase(total.find('.'), 1);
      const bool exact = std::stoll(total) == expected;
      failures += exact ? 0 : 1;
      std::printf("report --by %-9s %.2f s, %zu rows, total %s micro-units (%s)\n", by, t, j["rows"].size(),
                  total.c_str(), exact ? "exact" : "WRONG");
    }
    // The plans behind those numbers.
    std::string text;
    const std::string where = " WHERE start_time >= " + from + " AND start_time < " + to;
    for (const std::string sql :
         {"SELECT cluster, node, gpu_uuid, start_time, account, team FROM gpuledger.accounts" + where +
              " ORDER BY cluster, node, gpu_uuid, start_time, account",
          "SELECT a.team, sum(c.micros) FROM gpuledger.charges c JOIN gpuledger.accounts a USING (cluster, node, "
          "gpu_uuid, start_time, account)" + where + " GROUP BY a.team"}) {
      fleet::PgResult plan = db.query("EXPLAIN (ANALYZE, BUFFERS) " + sql);
      text += "-- " + sql + "\n";
      for (int r = 0; r < plan.rows(); ++r) text += plan.text(r, 0) + "\n";
      text += "\n";
    }
    if (!plans.empty()) std::ofstream(plans) << text;
    else std::fputs(text.c_str(), stdout);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuledger-fleet-db-bench: %s\n", e.what());
    return 1;
  }
}
