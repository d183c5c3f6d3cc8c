// A fleet report restarts itself with malloc's heap in huge pages
// (common/huge_page_malloc.h): the same process (the same id, so an exec,
// not a child), its environment then carrying glibc.malloc.hugetlb=1; a
// caller's own GLIBC_TUNABLES is kept and nothing restarts. The report is
// the same bytes either way. Each report is held on a lock in PostgreSQL
// while its environment is read: it has connected, so any restart is behind it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "cli_process.h"
#include "fleet_db_fixture.h"

namespace gpuledger::testing {
namespace {

using namespace std::string_literals;

struct HeldReport {
  std::string environment;  // /proc/PID/environ while it waited on the lock
  Proc ended;               // its shell's output: "rc=N"
  std::string text;         // the report it wrote
};

TEST_F(FleetDb, AFleetReportRestartsItselfWithMallocInHugePages) {
  fleet::PgConnection locker(pg_->conninfo(), pg_->admin_password_file());
  const std::string report = gpuledger() + " report --fleet-db '" + pg_->conninfo() + "' --fleet-db-password-file " +
                             pg_->admin_password_file() + " --month 2027-01 --format json";
  auto held = [&](const std::string& name, const std::string& environment) {
    const auto pid_file = scratch_ / (name + ".pid"), out = scratch_ / (name + ".json");
    locker.exec("BEGIN");
    locker.exec("LOCK TABLE gpuledger.schema_migrations IN ACCESS EXCLUSIVE MODE");
    HeldReport r;
    std::thread shell([&] {
      r.ended = run("SOURCE_DATE_EPOCH=1800000000 " + environment + " " + report + " -o " + out.string() +
                    " >/dev/null 2>&1 & echo $! > " + pid_file.string() + "; wait $!; echo rc=$?");
    });
    std::string pid;
    const bool waiting = eventually(
        [&] {
          pid = slurp(pid_file);
          return !pid.empty() && pid.back() == '\n' &&
                 admin_->query("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").i64(0, 0) == 1;
        },
        std::chrono::seconds(20));
    if (waiting) r.environment = slurp("/proc/" + pid.substr(0, pid.size() - 1) + "/environ");
    locker.exec("COMMIT");
    shell.join();
    EXPECT_TRUE(waiting) << "the report never waited on the lock";
    r.text = slurp(out);
    return r;
  };
  const auto has = [](const std::string& environ, const std::string& entry) {
    return ("\0"s + environ).find("\0"s + entry + '\0') != std::string::npos;
  };

  const HeldReport restarted = held("restarted", "");
  EXPECT_TRUE(has(restarted.environment, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1")) << restarted.environment;
  EXPECT_EQ(restarted.ended.out, "rc=0\n");

  const HeldReport kept = held("kept", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0");
  EXPECT_TRUE(has(kept.environment, "GLIBC_TUNABLES=glibc.malloc.hugetlb=0")) << kept.environment;
  EXPECT_FALSE(has(kept.environment, "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"));
  EXPECT_EQ(kept.ended.out, "rc=0\n");

  EXPECT_FALSE(restarted.text.empty());
  EXPECT_EQ(restarted.text, kept.text);
}

}  // namespace
}  // namespace gpuledger::testing
