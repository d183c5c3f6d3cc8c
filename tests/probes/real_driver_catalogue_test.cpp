// The entry-point catalogue against NVIDIA's real driver library (driver 535
// from Debian's non-free packages, fetched by scripts/fetch-nvidia-libs.sh):
// every exported entry point that launches work, allocates or frees device
// memory, copies or sets it, synchronises or reports completion - found by a
// rule on the name, not from a list - is probed in every exported form, and
// the driver simulator exports every name the agent probes there. Where the
// CUDA toolkit's cuda.h is present, every such entry point it declares (the
// forms newer drivers add) belongs to a family the agent knows.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "probes/billable_entry_points.h"
#include "probes/cuda_entry_points.h"
#include "elf_function_fixture.h"
#include "probes/elf_symbols.h"
#include "probes/runtime_entry_points.h"
#include "probe_set_names.h"
#include "real_nvidia_requirement.h"

#ifndef GPULEDGER_SIM_LIB
#error "GPULEDGER_SIM_LIB must name build/sim/lib/libcuda.so.1"
#endif
#ifndef GPULEDGER_REAL_LIBCUDA
#define GPULEDGER_REAL_LIBCUDA ""
#endif
#ifndef GPULEDGER_REAL_LIBCUDART
#define GPULEDGER_REAL_LIBCUDART ""
#endif
#ifndef GPULEDGER_REAL_CUDA_H
#define GPULEDGER_REAL_CUDA_H ""
#endif

namespace gpuledger::probes {
namespace {

std::string real_lib() {
  std::string path = GPULEDGER_REAL_LIBCUDA;
  if (path.empty() || !std::ifstream(path)) return "";
  return path;
}

#define REQUIRE_REAL_LIB(path)      \
  const std::string path = real_lib(); \
  GL_REQUIRE_REAL_NVIDIA(!path.empty())

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

// The rule finds a family the catalogue has never heard of.
TEST(BillableRule, AnUnknownFamilyIsReportedAndHostWorkIsNot) {
  const std::vector<ElfFunction> fns = {function_at("cuMemcpy4DAsync_v9_ptsz", 0x10), function_at("cuLaunchKernel", 0x20),
                                        function_at("cuDeviceGetName", 0x30), function_at("cuLaunchHostFunc", 0x40),
                                        function_at("cuLaunchKernel_ptsz", 0x20), function_at("cuMemsetD64_v2", 0x50),
                                        function_at("cuMemAllocHost_v2", 0x60), function_at("cuFooSynchronize", 0x70)};
  CallNames names;
  const auto plan = plan_probes(fns, names, {});
  EXPECT_EQ(unprobed_billable(fns, plan),
            (std::vector<std::string>{"cuFooSynchronize", "cuMemcpy4DAsync_v9_ptsz", "cuMemsetD64_v2"}));
  EXPECT_EQ(entry_point_base("cuMemcpy2DAsync_v2_ptsz"), "cuMemcpy2DAsync");
  EXPECT_EQ(entry_point_base("cuCtxCreate_v4"), "cuCtxCreate");
  EXPECT_TRUE(changes_a_bill("cuStreamQuery"));
  EXPECT_FALSE(changes_a_bill("cuStreamWaitEvent"));
  EXPECT_FALSE(changes_a_bill("cuMemFreeHost"));
}

TEST(RealDriverCatalogue, EveryBillableEntryPointOfDriver535IsProbed) {
  REQUIRE_REAL_LIB(lib);
  const auto functions = read_dynamic_functions(lib);
  CallNames names;
  const auto plan = plan_probes(functions, names, {});
  std::set<std::string> billable;
  for (const auto& f : functions)
    if (f.name.starts_with("cu") && changes_a_bill(entry_point_base(f.name))) billable.insert(f.name);
  const auto unprobed = unprobed_billable(functions, plan);
  const std::set<std::string> missing(unprobed.begin(), unprobed.end());
  EXPECT_TRUE(missing.empty()) << "billable entry points of " << lib << " the plan lacks: " << join(missing);
  // Driver 535.261.03: 149 billable exported names, and the plan's 151 probes
  // cover them, plus cuInit, cuGetExportTable and the contexts' bookkeeping.
  EXPECT_GE(billable.size(), 140u) << "the rule found too few entry points: " << join(billable);
  std::cout << "real driver: " << billable.size() << " billable exported names, " << plan.size()
            << " probes planned\n";
}

TEST(RealDriverCatalogue, TheRuleFindsTheFamiliesAPlanOnceLacked) {
  REQUIRE_REAL_LIB(lib);
  const auto functions = read_dynamic_functions(lib);
  CallNames names;
  std::set<std::string> planned;
  for (const auto& p : plan_probes(functions, names, {})) planned.insert(p.name);
  for (const char* n : {"cuMemcpy2D_v2", "cuMemcpy2DAsync_v2_ptsz", "cuMemcpy3D_v2_ptds", "cuMemcpy3DPeerAsync_ptsz",
                        "cuMemcpy2DUnaligned_v2", "cuMemcpyAtoH_v2", "cuMemcpyHtoAAsync_v2_ptsz", "cuMemcpyAtoA_v2_ptds",
                        "cuLaunch", "cuLaunchGrid", "cuLaunchGridAsync", "cuLaunchCooperativeKernelMultiDevice",
                        "cuStreamQuery", "cuStreamQuery_ptsz", "cuEventQuery", "cuMemsetD32Async_ptsz",
                        "cuMemsetD2D8_v2", "cuArray3DCreate_v2", "cuArrayDestroy", "cuGetExportTable",
                        "cuFuncSetBlockShape", "cuMemcpy2D", "cuMemsetD8"})
    EXPECT_TRUE(planned.contains(n)) << n;
  // Not billed, by the rule's exclusions.
  for (const char* n : {"cuLaunchHostFunc", "cuMemAllocHost_v2", "cuMemFreeHost", "cuStreamWaitEvent"})
    EXPECT_FALSE(planned.contains(n)) << n;
}

TEST(RealDriverCatalogue, TheSimulatorExportsEveryNameTheAgentProbesOnTheRealDriver) {
  REQUIRE_REAL_LIB(lib);
  CallNames real_names, sim_names;
  std::set<std::string> sim_planned, missing;
  for (const auto& p : plan_probes(read_dynamic_functions(GPULEDGER_SIM_LIB), sim_names, {})) sim_planned.insert(p.name);
  for (const auto& p : plan_probes(read_dynamic_functions(lib), real_names, {}))
    if (!sim_planned.contains(p.name)) missing.insert(p.name);
  EXPECT_TRUE(missing.empty()) << "names probed on the real driver the simulator does not export: " << join(missing);
}

// The billing probe set on driver 535: no probe at the address of any entry
// point called per unit of work (by the name rule, in any form, aliases
// included), and every rare entry point of the full plan still probed.
TEST(RealDriverCatalogue, TheBillingSetOfDriver535ProbesNoHotEntryPoint) {
  REQUIRE_REAL_LIB(lib);
  const auto functions = read_dynamic_functions(lib);
  std::set<uint64_t> hot_addresses;
  for (const auto& f : functions)
    if (called_per_unit_of_work(f.name)) hot_addresses.insert(f.file_offset);
  CallNames full_names, billing_names;
  std::set<std::string> full_rare, billing, trapped;
  for (const auto& p : plan_probes(functions, full_names, {}))
    if (!hot_addresses.contains(p.file_offset)) full_rare.insert(p.name);
  const auto plan = plan_probes(functions, billing_names, {.hot_path = false});
  for (const auto& p : plan) {
    billing.insert(p.name);
    if (hot_addresses.contains(p.file_offset) || p.program == ProbeProgram::kLaunch) trapped.insert(p.name);
  }
  EXPECT_TRUE(trapped.empty()) << "billing probes on the hot path of " << lib << ": " << join(trapped);
  EXPECT_EQ(billing, full_rare);
  for (const char* n : {"cuInit", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemCreate", "cuMemRelease", "cuMemAllocAsync",
                        "cuMemFreeAsync_ptsz", "cuMemAllocFromPoolAsync", "cuMemAllocManaged", "cuMemAllocPitch_v2",
                        "cuArray3DCreate_v2", "cuArrayDestroy", "cuCtxCreate_v2", "cuCtxDestroy_v2",
                        "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuCtxPushCurrent_v2", "cuGetExportTable"})
    EXPECT_TRUE(billing.contains(n)) << n;
  // Driver 535.261.03: 35 of the full plan's 155 probes (sites, aliases shared).
  EXPECT_EQ(plan.size(), 35u) << join(billing);
  std::cout << "real driver, probe set billing: " << plan.size() << " probes, " << hot_addresses.size()
            << " hot-path addresses left alone\n";
}

// The same for NVIDIA's real runtime (libcudart 11.8) under --runtime-probes.
TEST(RealDriverCatalogue, TheBillingSetOfTheRealRuntimeProbesNoHotEntryPoint) {
  const std::string lib = GPULEDGER_REAL_LIBCUDART;
  GL_REQUIRE_REAL_NVIDIA(!lib.empty() && std::ifstream(lib));
  const auto functions = read_dynamic_functions(lib);
  std::set<uint64_t> hot_addresses;
  for (const auto& f : functions)
    if (called_per_unit_of_work(f.name)) hot_addresses.insert(f.file_offset);
  CallNames names(GL_RUNTIME_CALL_BASE, GL_MAX_CALLS), full_names(GL_RUNTIME_CALL_BASE, GL_MAX_CALLS);
  std::set<std::string> billing, trapped;
  for (const auto& p : plan_runtime_probes(functions, names, false)) {
    billing.insert(p.name);
    if (hot_addresses.contains(p.file_offset)) trapped.insert(p.name);
  }
  EXPECT_TRUE(trapped.empty()) << join(trapped);
  for (const char* n : {"cudaMalloc", "cudaFree", "cudaSetDevice", "cudaMallocManaged", "cudaMallocPitch"})
    EXPECT_TRUE(billing.contains(n)) << n << " in " << join(billing);
  const size_t full = plan_runtime_probes(functions, full_names).size();
  EXPECT_EQ(billing.size(), 11u);  // libcudart 11.8.89: cudaMalloc*, cudaFree*, cudaSetDevice, with _ptsz forms
  EXPECT_EQ(full, 29u);
  std::cout << "real runtime " << lib << ": " << billing.size() << " of " << full << " probes under billing: "
            << join(billing) << "\n";
}

// The toolkit's cuda.h (CUDA 13 on the development and CI machines; absent on a
// fresh Debian box) declares the forms newer drivers add: each billable one
// must be a form of a known family, so a driver that exports it is probed.
TEST(RealDriverCatalogue, EveryBillableEntryPointTheToolkitDeclaresHasAFamily) {
  const std::string header = GPULEDGER_REAL_CUDA_H;
  if (header.empty() || !std::ifstream(header)) GTEST_SKIP() << "no CUDA toolkit cuda.h on this machine";
  std::ifstream in(header);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::set<std::string> declared;
  static const std::regex decl("CUresult CUDAAPI (cu[A-Za-z0-9_]+)\\(");
  static const std::regex macro("#define (cu[A-Za-z0-9_]+)\\s+(__CUDA_API_PT[SD][ZS]\\()?(cu[A-Za-z0-9_]+)");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), decl); it != std::sregex_iterator(); ++it)
    declared.insert((*it)[1]);
  for (auto it = std::sregex_iterator(s.begin(), s.end(), macro); it != std::sregex_iterator(); ++it)
    declared.insert((*it)[3]);  // the versioned name a macro stands for
  std::set<std::string> unknown;
  size_t billable = 0;
  for (const auto& name : declared) {
    if (!changes_a_bill(entry_point_base(name))) continue;
    ++billable;
    bool known = false;
    for (const auto& family : entry_point_families())
      if (parse_entry_point_form(name, family.base)) known = true;
    if (!known) unknown.insert(name);
  }
  EXPECT_TRUE(unknown.empty()) << "billable entry points of " << header << " no family covers: " << join(unknown);
  EXPECT_GE(billable, 80u);
}

}  // namespace
}  // namespace gpuledger::probes
