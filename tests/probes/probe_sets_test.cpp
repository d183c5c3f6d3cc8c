// Tests for probes/probe_sets.h: every family is classified, the billing set
// plans no entry point called per unit of work (judged by an independent rule
// on the names) and keeps every rare one, on the simulator's driver and
// runtime. The same against NVIDIA's real libraries: real_driver_catalogue_test.cpp.
#include "probes/probe_sets.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "elf_function_fixture.h"
#include "probe_set_names.h"
#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"
#include "probes/runtime_entry_points.h"

#ifndef GPULEDGER_SIM_LIB
#error "GPULEDGER_SIM_LIB must name build/sim/lib/libcuda.so.1"
#endif

namespace gpuledger::probes {
namespace {

TEST(ProbeSetNames, ParseAndPrintRoundTripAndOnlyTheThreeNamesParse) {
  for (auto set : {ProbeSet::kAuto, ProbeSet::kBilling, ProbeSet::kFull})
    EXPECT_EQ(parse_probe_set(probe_set_name(set)), set);
  EXPECT_EQ(probe_set_name(ProbeSet::kBilling), "billing");
  for (const char* bad : {"", "Billing", "none", "full ", "billing\n", "all"})
    EXPECT_FALSE(parse_probe_set(bad).has_value()) << bad;
}

TEST(ProbeSetTable, EveryDriverAndRuntimeFamilyIsClassified) {
  for (const auto& f : entry_point_families()) EXPECT_TRUE(call_rate(f.kind).has_value()) << f.base;
  for (const auto& f : runtime_entry_point_families()) EXPECT_TRUE(call_rate(f.kind).has_value()) << f.base;
  EXPECT_FALSE(call_rate(static_cast<gl_call_kind>(200)).has_value()) << "an unknown kind is not guessed";
}

TEST(ProbeSetTable, TheBillingSetIsExactlyTheRareFamilies) {
  std::set<std::string> billing, expected_driver = {
      "cuMemAlloc", "cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemCreate",
      "cuMemAllocPitch", "cuArrayCreate", "cuArray3DCreate", "cuMipmappedArrayCreate", "cuMemFree",
      "cuMemFreeAsync", "cuMemRelease", "cuArrayDestroy", "cuMipmappedArrayDestroy", "cuCtxCreate",
      "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuCtxPushCurrent", "cuCtxPopCurrent", "cuCtxDestroy",
      "cuInit", "cuGetExportTable"};
  for (const auto& f : entry_point_families())
    if (in_billing_set(f)) billing.insert(std::string(f.base));
  EXPECT_EQ(billing, expected_driver);
  billing.clear();
  for (const auto& f : runtime_entry_point_families())
    if (in_billing_set(f)) billing.insert(std::string(f.base));
  EXPECT_EQ(billing, (std::set<std::string>{"cudaMalloc", "cudaMallocManaged", "cudaMallocAsync",
                                            "cudaMallocFromPoolAsync", "cudaMallocPitch", "cudaFree",
                                            "cudaFreeAsync", "cudaSetDevice"}));
  // And every family the rule calls hot is out of it, every other one in.
  for (const auto& f : entry_point_families())
    EXPECT_EQ(in_billing_set(f), !called_per_unit_of_work(std::string(f.base))) << f.base;
  for (const auto& f : runtime_entry_point_families())
    EXPECT_EQ(in_billing_set(f), !called_per_unit_of_work(std::string(f.base))) << f.base;
}

TEST(ProbeSetPlan, BillingOnTheSimulatorDriverIsTheFullPlanLessTheHotPath) {
  const auto functions = read_dynamic_functions(GPULEDGER_SIM_LIB);
  CallNames full_names, billing_names;
  std::set<std::string> full_rare, billing;
  size_t hot = 0;
  for (const auto& p : plan_probes(functions, full_names, {}))
    called_per_unit_of_work(p.name) ? ++hot : full_rare.insert(p.name).second;
  for (const auto& p : plan_probes(functions, billing_names, {.hot_path = false})) {
    EXPECT_FALSE(called_per_unit_of_work(p.name)) << p.name << " is on the hot path";
    billing.insert(p.name);
  }
  EXPECT_EQ(billing, full_rare);
  EXPECT_GE(hot, 40u) << "the simulator exports the launches, copies and waits";
  for (const char* n : {"cuInit", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemCreate", "cuMemRelease", "cuMemAllocAsync",
                        "cuMemFreeAsync", "cuMemAllocFromPoolAsync", "cuCtxCreate_v2", "cuDevicePrimaryCtxRetain",
                        "cuGetExportTable"})
    EXPECT_TRUE(billing.contains(n)) << n;
  // Launches stay out under --launch-returns too.
  CallNames again;
  for (const auto& p : plan_probes(functions, again, {.launch_returns = true, .hot_path = false}))
    EXPECT_FALSE(called_per_unit_of_work(p.name)) << p.name;
}

TEST(ProbeSetPlan, BillingOnTheSimulatorRuntimeKeepsAllocationsAndTheDevice) {
  const auto functions = read_dynamic_functions(GPULEDGER_CUDART_LIB);
  CallNames names(GL_RUNTIME_CALL_BASE, GL_MAX_CALLS);
  std::set<std::string> planned;
  for (const auto& p : plan_runtime_probes(functions, names, false)) {
    EXPECT_FALSE(called_per_unit_of_work(p.name)) << p.name;
    planned.insert(p.name);
  }
  EXPECT_EQ(planned, (std::set<std::string>{"cudaMalloc", "cudaFree", "cudaSetDevice"}));
}

// A driver copy is the tenant's file: a rare name at a launch's address (an
// alias) must not put a trap on the launch under billing. Billing is the full
// plan less the hot path, alias for alias.
TEST(ProbeSetPlan, ARareNameAliasingALaunchGetsNoProbeUnderBilling) {
  const std::vector<ElfFunction> fns = {function_at("cuLaunchKernel", 0x10), function_at("cuMemAlloc_v2", 0x10),
                                        function_at("cuStreamSynchronize", 0x40), function_at("cuMemFree_v2", 0x40),
                                        function_at("cuInit", 0x20), function_at("cuDriverGetVersion", 0x30)};
  CallNames full_names, billing_names;
  const auto full = plan_probes(fns, full_names, {});
  const auto billing = plan_probes(fns, billing_names, {.hot_path = false});
  ASSERT_EQ(full.size(), 3u);
  ASSERT_EQ(billing.size(), 1u);
  EXPECT_EQ(billing[0].name, "cuInit");
  EXPECT_EQ(billing[0].file_offset, 0x20u);
}

}  // namespace
}  // namespace gpuledger::probes
