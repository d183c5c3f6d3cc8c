// The window record's field table (ledger/window_fields.h, issue 27): every
// persisted field round-trips exactly through the store, the window JSON and
// the fleet database; an unknown optional stays unknown; and the JSON, the
// window digest and the hourly roll-up are byte for byte what they were before
// the table, and so is the bill id (the golden strings below were printed by
// the hand-written codecs of 021333f for the same windows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>

#include "fleet/fleet_rows.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/window_json.h"
#include "fleet_db_fixture.h"
#include "full_window.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store.h"
#include "ledger/window_fields.h"
#include "report/bill_audit.h"

namespace gpuledger::testing {
namespace {

constexpr const char* kFullJson =
    R"J({"accounts":[["k8s/pod-a","ml","pod-a","main","vision",0.5,0.625,false,27.25,0.75,27.0,1500000000000.0,600,[0.4125,0.3,0.2,0.1],8589934592,4294967303,8589934593,2147483648,0.7,0.35,0.45,2,[1.5,2.5,3.5],"alice","physics"]],"allocated_total":0.3333333333333333,"busy_fraction":0.30000000000000004,"busy_source":"device","charges":[["k8s/pod-a","busy",36001],["k8s/pod-a","idle",24003],["k8s/pod-a","memory",5007]],"cost_policy":"allocated","currency":"EUR","device":[0.55,0.1111111111111111,0.6666666666666666,1e-17],"end":1800000060,"energy":{"carbon":133.33333333333334,"mj":18000001,"parts":[["k8s/pod-a","busy",14000001],["k8s/pod-a","idle",4000000]],"source":"power_integrated"},"exclusive":true,"gpu_fraction":0.42857142857142855,"micros":[65011,36001,24003,5007],"observed_s":59.99999999999999,"slot":["MIG-full-0","NVIDIA A100-SXM4-80GB","3g.40gb","GPU-parent"],"source":"gap","split_source":"nvml","start":1800000000})J";
constexpr const char* kFullDigest = "56910a29368ae6f639e55018a7ecaa79bdfa0f593e89b95f496d5d204db5a1cf";
constexpr const char* kUnknownJson =
    R"J({"accounts":[["k8s/pod-a","ml","pod-a","main","vision",0.5,0.625,false,27.25,0.75,27.0,1500000000000.0,600,[null,null,null,null],null,null,null,null,null,null,null,null,null,"alice","physics"]],"allocated_total":0.3333333333333333,"busy_fraction":0.30000000000000004,"busy_source":"device","charges":[["k8s/pod-a","busy",36001],["k8s/pod-a","idle",24003],["k8s/pod-a","memory",5007]],"cost_policy":"allocated","currency":"EUR","device":[null,null,null,null],"end":1800000060,"exclusive":true,"gpu_fraction":0.42857142857142855,"micros":[65011,36001,24003,5007],"observed_s":59.99999999999999,"slot":["MIG-full-0","NVIDIA A100-SXM4-80GB",null,"GPU-parent"],"source":"gap","split_source":"nvml","start":1800000000})J";
constexpr const char* kUnknownDigest = "02527188d7001af9559bddc7e4eb0740f72fc574826b2b4d1d3974a3cfd0619f";
constexpr const char* kMergedJson =
    R"J({"accounts":[["k8s/pod-a","ml","pod-a","main","vision",0.5,0.625,false,81.75,0.75,81.0,4500000000000.0,1800,[0.4125,0.3,0.2,0.1],8589934592,4294967303,8589934593,2147483648,0.7,0.35,0.45416666666666666,5,[1.5,0.0,4.0],"alice","physics"]],"allocated_total":0.6666666666666666,"busy_fraction":0.3000000000000001,"busy_source":"mixed","charges":[["k8s/pod-a","busy",108004],["k8s/pod-a","idle",72009],["k8s/pod-a","memory",15021]],"cost_policy":"mixed","currency":"EUR","device":[0.5505,0.1111111111111111,0.6666666666666666,1e-17],"end":1800000180,"energy":{"carbon":133.33333333333334,"mj":36000003,"parts":[["k8s/pod-a","busy",28000003],["k8s/pod-a","idle",8000000]],"source":"mixed"},"exclusive":true,"gpu_fraction":0.42857142857142855,"micros":[195034,108004,72009,15021],"observed_s":179.99999999999997,"slot":["MIG-full-0","NVIDIA A100-SXM4-80GB","3g.40gb","GPU-parent"],"source":"mixed","split_source":"mixed","start":1800000000})J";
constexpr const char* kMergedDigest = "e575163e46b6654d07b7069b0971c1a01544c093fdff5369ae1a0259b4d0c194";

constexpr const char* kBillId = "sha256:d4d50831e780b7b3f991c82fcb11b51fa7dc107aa25b719cc97e2e3ebd9762d2";
constexpr const char* kUnknownBillId = "sha256:cebaf4a1d90e86c6e02bae300f16494e7cc270b2790a7e6a16d44873c50ba4e7";

// The fields a codec does not carry, as their defaults: what it reads back.
ledger::WindowRecord without_store_only(ledger::WindowRecord w) {
  w.device_quality = {};
  w.device_findings.clear();
  for (auto& a : w.accounts) a.used_unallocated_seconds = a.allocated_unused_seconds = std::nullopt;
  return w;
}

bool by_start_and_slot(const ledger::WindowRecord& x, const ledger::WindowRecord& y) {
  return std::tie(x.start, x.slot.uuid) < std::tie(y.start, y.slot.uuid);
}

std::vector<ledger::WindowRecord> hour_of_windows() {
  ledger::WindowRecord a = full_window(kFleetT0, 0), b = full_window(kFleetT0 + 60, 1),
                       c = unknown_window(kFleetT0 + 120);
  b.slot = c.slot = a.slot;
  return {a, b, c};
}

TEST(WindowFields, TheFullWindowSetsEveryFieldAndTheUnknownOneEveryOptional) {
  const ledger::WindowRecord full = full_window(kFleetT0), unknown = unknown_window(kFleetT0), none;
  std::set<std::string> names;
  int optionals = 0;
  ledger::for_each_window_field(
      [&](const ledger::WindowField& f, const auto& value, const auto& unset, const auto& unknown_value) {
        const std::string name = f.store ? f.store : "?";
        if constexpr (ledger::kIsPart<std::decay_t<decltype(value)>>) {
          EXPECT_NE((*value.whole).*value.member, ledger::WindowEnergyRecord{}.*value.member) << name;
          EXPECT_FALSE(unknown_value.whole) << name;
        } else {
          EXPECT_NE(value, unset) << name << ": full_window leaves it at its default";
          if constexpr (requires { value.has_value(); }) {
            EXPECT_FALSE(unknown_value.has_value()) << name;
            ++optionals;
          }
        }
        // One column per table, one fleet column, one place in the JSON.
        EXPECT_TRUE(names.insert((f.table == ledger::StoreTable::kWindows ? "w." : "e.") + name).second) << name;
        if (f.fleet) {
          EXPECT_TRUE(names.insert(std::string("fleet.") + f.fleet).second) << f.fleet;
        }
        if (f.json || f.json_group) {
          const std::string at = f.json ? f.json : std::to_string(f.json_at);
          EXPECT_TRUE(names.insert(std::string("json.") + (f.json_group ? f.json_group : "") + "." + at).second)
              << name;
        }
      },
      full, none, unknown);
  EXPECT_EQ(optionals, 5);  // mig_profile and the four device ratios
}

TEST(WindowFields, TheFullAccountSetsEveryFieldAndTheUnknownOneEveryOptional) {
  const ledger::AccountRecord full = full_window(kFleetT0).accounts.at(0),
                              unknown = unknown_window(kFleetT0).accounts.at(0), none;
  std::set<std::string> store, fleet, json;
  ledger::for_each_account_field(
      [&](const ledger::AccountField& f, const auto& value, const auto& unset, const auto& unknown_value) {
        if constexpr (ledger::kIsPart<std::decay_t<decltype(value)>>) {
          EXPECT_NE((*value.whole).*value.member, 0.0) << f.store;
          EXPECT_FALSE(unknown_value.whole) << f.store;
        } else {
          EXPECT_NE(value, unset) << f.store << ": full_window's account leaves it at its default";
          if constexpr (requires { value.has_value(); }) {
            EXPECT_FALSE(unknown_value.has_value()) << f.store;
          }
        }
        EXPECT_TRUE(store.insert(f.store).second) << f.store;
        if (f.fleet) {
          EXPECT_TRUE(fleet.insert(f.fleet).second) << f.fleet;
        }
        if (f.json_at >= 0) {
          EXPECT_TRUE(json.insert(std::to_string(f.json_at) + "." + std::to_string(f.json_sub)).second) << f.store;
        }
      },
      full, none, unknown);
}

TEST(WindowFields, TheFleetColumnsAreTheSchemasInItsOrder) {
  EXPECT_EQ(fleet::kWindowColumns,
            (std::vector<std::string>{"end_time", "parent_uuid", "model", "mig_profile", "gpu_fraction", "currency",
                                      "cost_micros", "busy_micros", "idle_micros", "memory_micros", "cost_policy",
                                      "allocated_total", "busy_fraction", "busy_source", "exclusive",
                                      "observed_seconds", "source", "sm_active", "sm_occupancy", "tensor_active",
                                      "dram_active", "energy_millijoules", "energy_source", "carbon_g_per_kwh",
                                      "split_source", "digest"}));
  EXPECT_EQ(fleet::kAccountColumns,
            (std::vector<std::string>{
                "account", "namespace", "pod", "container", "team", "held_share", "allocated_share",
                "allocated_share_known", "busy_seconds", "activity_share", "gpu_busy_seconds", "vram_byte_seconds",
                "launches", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "vram_peak_bytes",
                "vram_p95_bytes", "nvml_vram_peak_bytes", "nvml_vram_p95_bytes", "sm_active_p95", "sm_occupancy_p95",
                "busy_p95", "idle_lead_seconds", "idle_trail_seconds", "idle_longest_seconds", "window_count",
                "slurm_user", "slurm_account"}));
}

// A float's text in a fleet row (and so in every digest) is printf's
// "%.17g", now made by std::to_chars: the same bytes for any bit pattern.
TEST(WindowFields, AFloatsFleetTextIsPrintfsWhateverItsBits) {
  std::mt19937_64 random(20261205);
  std::vector<double> values = {0.0, -0.0, 1.0 / 3, 0.1, 1e-320, -4.9e-324, 1.7976931348623157e308,
                                std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::quiet_NaN(), 123456789012345678.0, 0.5, 27.25};
  for (int i = 0; i < 500000; ++i) {
    const uint64_t bits = random();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    values.push_back(v);
    values.push_back(std::ldexp(static_cast<double>(bits % 1000000007), static_cast<int>(bits % 64) - 40));
  }
  for (const double v : values) {
    char want[40];
    std::snprintf(want, sizeof want, "%.17g", v);
    ASSERT_EQ(fleet::exact(v), want);
  }
}

TEST(WindowFields, TheJsonAndTheDigestAreTheOnesFromBeforeTheTable) {
  EXPECT_EQ(fleet::window_to_json(full_window(kFleetT0)), kFullJson);
  EXPECT_EQ(fleet::to_rows({"prod", "node-1"}, full_window(kFleetT0)).digest, kFullDigest);
  EXPECT_EQ(fleet::window_to_json(unknown_window(kFleetT0)), kUnknownJson);
  EXPECT_EQ(fleet::to_rows({"prod", "node-1"}, unknown_window(kFleetT0)).digest, kUnknownDigest);
}

// The digest as its definition says (fleet_rows.cpp): SHA-256 over the
// window's row and its children's rows, each value length-prefixed (NULL
// apart from ""), each row ended by "|", an account's row without the Slurm
// names when both are "". Made here from to_rows' rows, apart from the code
// that streams the values into it.
std::string digest_by_definition(const fleet::WindowRows& rows) {
  fleet::Sha256 sha;
  auto row = [&](const std::vector<fleet::PgParam>& values, size_t n) {
    for (size_t i = 0; i < n; ++i)
      sha.add(values[i] ? std::to_string(values[i]->size()) + ":" + *values[i] : std::string("N;"));
    sha.add("|");
  };
  row(rows.window, rows.window.size() - 1);  // its digest last
  for (const auto& a : rows.accounts) row(a, fleet::account_width(a));
  for (const auto& c : rows.charges) row(c, c.size());
  for (const auto& e : rows.energy_charges) row(e, e.size());
  return sha.hex();
}

TEST(WindowFields, TheDigestAloneIsTheRowsDigestWhateverTheNames) {
  const fleet::Origin origin{"prod", "node-1"};
  std::vector<ledger::WindowRecord> ws = {full_window(kFleetT0), unknown_window(kFleetT0),
                                          fleet_window(kFleetT0, "GPU-plain")};
  ledger::WindowRecord odd = full_window(kFleetT0 + 60, 3);
  odd.accounts.push_back(odd.accounts[0]);
  odd.accounts[0].labels.slurm_user = "";  // one Slurm name: named
  odd.accounts[1].labels.slurm_user = odd.accounts[1].labels.slurm_account = "";  // none: the pre-Slurm row
  odd.accounts[1].account = std::string("k8s/p\0d", 7);  // a NUL: '?' in the row and the digest
  odd.charges.push_back({odd.accounts[1].account, ledger::ChargeKind::kIdle, 1});
  odd.slot.model = std::string("A") + '\0' + "100";
  ws.push_back(odd);
  for (const auto& w : ws) {
    const std::string want = digest_by_definition(fleet::to_rows(origin, w));
    EXPECT_EQ(fleet::to_window_row(origin, w).digest, want);
    EXPECT_EQ(fleet::window_digest(origin, w), want);
  }
  EXPECT_EQ(fleet::window_digest(origin, full_window(kFleetT0)), kFullDigest);
  EXPECT_EQ(fleet::window_digest(origin, unknown_window(kFleetT0)), kUnknownDigest);
}

TEST(WindowFields, TheBillIdHashesTheFieldsAsBefore) {
  report::BillHasher h;
  for (const auto& w : {full_window(kFleetT0, 0), full_window(kFleetT0, 1), unknown_window(kFleetT0 + 60)}) h.add(w);
  EXPECT_EQ(h.finish(kFleetT0, kFleetT0 + 3600, {"node-1", "prod", {}}), kBillId);
  report::BillHasher one;
  one.add(unknown_window(kFleetT0));
  EXPECT_EQ(one.finish(kFleetT0, kFleetT0 + 3600, {}), kUnknownBillId);
}

TEST(WindowFields, EveryFieldRoundTripsThroughTheJson) {
  for (const auto& w : {full_window(kFleetT0, 0), full_window(kFleetT0, 1), unknown_window(kFleetT0)})
    EXPECT_EQ(fleet::window_from_json(fleet::window_to_json(w)), without_store_only(w));
}

TEST(WindowFields, EveryFieldRoundTripsThroughTheStore) {
  char dir[] = "/tmp/gpuledger-fields-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::vector<ledger::WindowRecord> in = {full_window(kFleetT0, 0), full_window(kFleetT0, 1),
                                                unknown_window(kFleetT0 + 60)};
  {
    ledger::Store store(std::string(dir) + "/s.db");
    EXPECT_EQ(store.insert_windows(in), 3u);
  }
  ledger::Store store(std::string(dir) + "/s.db", ledger::Store::Mode::kReadOnly);
  auto back = store.windows(kFleetT0, kFleetT0 + 3600);
  std::sort(back.begin(), back.end(), by_start_and_slot);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0], in[0]);
  EXPECT_EQ(back[1], in[1]);
  EXPECT_EQ(back[2], in[2]);
  std::filesystem::remove_all(dir);
}

TEST(WindowFields, TheRollUpMergesEachFieldByItsRuleAsBefore) {
  const ledger::WindowRecord m = ledger::merge_windows(hour_of_windows());
  EXPECT_EQ(fleet::window_to_json(m), kMergedJson);
  EXPECT_EQ(fleet::to_rows({"prod", "node-1"}, m).digest, kMergedDigest);
  EXPECT_EQ(m.device_quality, (ledger::WindowRecord::DeviceQualityCounts{4, 6, 9}));
  EXPECT_EQ(m.device_findings, (std::map<std::string, int64_t>{{"dram_active:range", 3}, {"sm_active:stuck", 13}}));
  // What neither the JSON nor the digest carries: summed where known.
  ASSERT_EQ(m.accounts.size(), 1u);
  EXPECT_EQ(m.accounts[0].used_unallocated_seconds, 2.5);
  EXPECT_EQ(m.accounts[0].allocated_unused_seconds, 2.0);
}

TEST(WindowFields, ARolledUpWindowRoundTripsThroughTheStoreAndTheJson) {
  const ledger::WindowRecord m = ledger::merge_windows(hour_of_windows());
  EXPECT_EQ(fleet::window_from_json(fleet::window_to_json(m)), without_store_only(m));
  char dir[] = "/tmp/gpuledger-fields-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    ledger::Store store(std::string(dir) + "/s.db");
    EXPECT_TRUE(store.insert_window(m));
  }
  EXPECT_EQ(ledger::Store(std::string(dir) + "/s.db").windows(kFleetT0, kFleetT0 + 3600),
            std::vector<ledger::WindowRecord>{m});
  std::filesystem::remove_all(dir);
}

TEST_F(FleetDb, EveryWindowFieldRoundTripsThroughTheDatabase) {
  const std::vector<ledger::WindowRecord> in = {full_window(kFleetT0, 0), full_window(kFleetT0, 1),
                                                unknown_window(kFleetT0 + 60)};
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  EXPECT_EQ(sink.ship(pointers(in)), std::vector<fleet::Delivery>(3, fleet::Delivery::kStored));
  std::vector<ledger::WindowRecord> back;
  fleet::for_each_fleet_window(*admin_, kFleetT0, kFleetT0 + 3600, {},
                               [&](ledger::WindowRecord&& w) { back.push_back(std::move(w)); });
  std::sort(back.begin(), back.end(), by_start_and_slot);
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].node, "prod/node-1");
    back[i].node.clear();
    EXPECT_EQ(back[i], without_store_only(in[i])) << i;
  }
}

}  // namespace
}  // namespace gpuledger::testing
