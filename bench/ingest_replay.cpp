#include "ingest_replay.h"

#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

#include "fleet/fleet_schema.h"
#include "server_cpu.h"

namespace gpuledger::bench {

namespace {

// What the ingest left, as text to compare: windows, totals and roll-ups per
// period (verified or not), with their counts and money.
std::string holdings(fleet::PgConnection& db) {
  std::string out;
  for (const char* sql :
       {"SELECT count(*), sum(cost_micros) FROM gpuledger.windows",
        "SELECT string_agg(period || ':' || n || ':' || w || ':' || c, ' ' ORDER BY period) FROM (SELECT period, "
        "count(*) n, sum(windows) w, sum(cost_micros) c FROM gpuledger.window_totals GROUP BY period) x",
        "SELECT string_agg(period || ':' || verified || ':' || n || ':' || c, ' ' ORDER BY period, verified) FROM "
        "(SELECT period, verified, count(*) n, sum(cost_micros) c FROM gpuledger.rollups GROUP BY 1, 2) x",
        "SELECT count(*) FROM gpuledger.overlaps"}) {
    fleet::PgResult r = db.query(sql);
    for (int c = 0; c < r.columns(); ++c) out += (r.null(0, c) ? "NULL" : r.text(0, c)) + " ";
    out += "| ";
  }
  return out;
}

}  // namespace

ReplayResult replay_ingest(testing::PgServer& pg, const std::string& dbname, int64_t start_time,
                           const std::vector<StatementStream>& streams) {
  const std::string pw = pg.admin_password_file();
  fleet::PgConnection admin(pg.conninfo(), pw);
  admin.exec("DROP DATABASE IF EXISTS " + dbname);
  admin.exec("CREATE DATABASE " + dbname);
  {
    fleet::PgConnection fresh(pg.conninfo("gpuledger_admin", dbname), pw);
    fleet::migrate(fresh, start_time);
  }
  ReplayResult result;
  // Connected before the clock starts; each function's time counted (track_functions).
  const std::string replaying = pg.conninfo("gpuledger_admin", dbname) + " options='-c track_functions=all'";
  std::vector<std::unique_ptr<fleet::PgConnection>> connections;
  for (size_t i = 0; i < streams.size(); ++i) {
    connections.push_back(std::make_unique<fleet::PgConnection>(replaying, pw));
    result.statements += streams[i].statements.size();
  }
  std::vector<std::string> failures(streams.size());
  const auto began = std::chrono::steady_clock::now();
  const double cpu0 = server_cpu_seconds(pg.dir() + "/data");
  std::vector<std::thread> threads;
  for (size_t i = 0; i < streams.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        for (const auto& s : streams[i].statements) {
          if (s.simple)
            connections[i]->exec(s.sql);
          else
            connections[i]->query(s.sql, s.params);
        }
      } catch (const std::exception& e) {
        failures[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  result.server_cpu_seconds = server_cpu_seconds(pg.dir() + "/data") - cpu0;
  connections.clear();
  for (const auto& f : failures)
    if (!f.empty()) throw std::runtime_error("replay: " + f);
  const std::string want = holdings(admin), got = [&] {
    fleet::PgConnection replayed(pg.conninfo("gpuledger_admin", dbname), pw);  // closed before the drop
    // The replay's backends report their counts as they exit: wait for them.
    for (int i = 0; i < 50 && replayed.query("SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> "
                                             "pg_backend_pid()", {dbname}).i64(0, 0) > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    fleet::PgResult f = replayed.query(
        "SELECT funcname, calls, round(total_time::numeric / 1000, 2), round(self_time::numeric / 1000, 2) "
        "FROM pg_stat_user_functions WHERE total_time >= 10 ORDER BY total_time DESC");
    for (int i = 0; i < f.rows(); ++i)
      result.functions.push_back({f.text(i, 0), f.i64(i, 1), f.f64(i, 2), f.f64(i, 3)});
    return holdings(replayed);
  }();
  admin.exec("DROP DATABASE " + dbname);
  if (want != got) throw std::runtime_error("replay: the replayed database holds " + got + "; the shipped one " + want);
  return result;
}

}  // namespace gpuledger::bench
