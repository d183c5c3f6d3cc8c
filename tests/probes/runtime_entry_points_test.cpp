// The runtime probe plan against the simulator's runtime stand-in, shared and
// linked statically into a program (its .symtab), and a stripped copy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "common/error.h"
#include "probes/runtime_entry_points.h"
#include "probes/static_symbols.h"

namespace gpuledger::probes {
namespace {

std::map<std::string, ProbeSpec> plan_for(const std::vector<ElfFunction>& functions) {
  CallNames names(GL_RUNTIME_CALL_BASE, GL_MAX_CALLS);
  std::map<std::string, ProbeSpec> by_name;
  for (const auto& spec : plan_runtime_probes(functions, names)) by_name[spec.name] = spec;
  return by_name;
}

void expect_runtime_plan(const std::map<std::string, ProbeSpec>& plan) {
  const std::map<std::string, gl_call_kind> expected = {
      {"cudaLaunchKernel", GL_KIND_RT_LAUNCH},      {"cudaLaunchKernel_ptsz", GL_KIND_RT_LAUNCH},
      {"cudaGraphLaunch", GL_KIND_GRAPH},           {"cudaGraphLaunch_ptsz", GL_KIND_GRAPH},
      {"cudaMalloc", GL_KIND_ALLOC},                {"cudaFree", GL_KIND_FREE},
      {"cudaMemcpy", GL_KIND_RT_MEMCPY},            {"cudaMemcpyAsync", GL_KIND_RT_MEMCPY},
      {"cudaStreamSynchronize", GL_KIND_SYNC},      {"cudaStreamSynchronize_ptsz", GL_KIND_SYNC},
      {"cudaDeviceSynchronize", GL_KIND_SYNC},      {"cudaSetDevice", GL_KIND_RT_SET_DEVICE},
  };
  EXPECT_EQ(plan.size(), expected.size());
  for (const auto& [name, kind] : expected) {
    auto it = plan.find(name);
    ASSERT_NE(it, plan.end()) << name;
    EXPECT_EQ(GL_COOKIE_KIND(it->second.cookie), static_cast<uint32_t>(kind)) << name;
    EXPECT_GE(GL_COOKIE_CALL(it->second.cookie), uint32_t{GL_RUNTIME_CALL_BASE}) << name;
    EXPECT_EQ(it->second.program, ProbeProgram::kRuntime);
    EXPECT_TRUE(it->second.with_return) << name << ": the return decides who counts";
  }
  // Not probed: calls that count nothing.
  EXPECT_FALSE(plan.contains("cudaGetDeviceCount"));
  EXPECT_FALSE(plan.contains("cudaRuntimeGetVersion"));
}

TEST(RuntimeProbePlan, SharedRuntimeFromItsDynamicSymbols) {
  auto plan = plan_for(read_dynamic_functions(GPULEDGER_CUDART_LIB));
  expect_runtime_plan(plan);
}

TEST(RuntimeProbePlan, StaticallyLinkedRuntimeFromTheProgramsSymbolTable) {
  auto statics = read_static_functions(GPULEDGER_CUDARTSIM_STATIC);
  auto plan = plan_for(statics);
  expect_runtime_plan(plan);
  // The offsets are the program's own: where the uprobe on that file lands.
  for (const auto& [name, spec] : plan) EXPECT_GT(spec.file_offset, 0u) << name;
}

TEST(RuntimeProbePlan, AStrippedProgramHasNothingToProbe) {
  auto dir = std::filesystem::temp_directory_path() / ("gl-rt-strip-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto stripped = (dir / "app").string();
  std::string cmd = std::string(GPULEDGER_STRIP) + " -o " + stripped + " " + GPULEDGER_CUDARTSIM_STATIC;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(read_static_functions(stripped).empty());
  EXPECT_TRUE(plan_for(read_static_functions(stripped)).empty());
  std::filesystem::remove_all(dir);
}

TEST(RuntimeProbePlan, TheDriverHoldsNoRuntime) {
  EXPECT_TRUE(plan_for(read_dynamic_functions(GPULEDGER_SIM_LIB)).empty());
}

TEST(StaticSymbols, NotAnElfFileIsAnError) {
  EXPECT_THROW(read_static_functions("/proc/self/status"), Error);
  EXPECT_THROW(read_static_functions("/nonexistent/gpuledger"), Error);
}

TEST(RuntimeProbesMode, ParsesTheFlagsValuesOnly) {
  EXPECT_EQ(parse_runtime_probes("off"), RuntimeProbes::kOff);
  EXPECT_EQ(parse_runtime_probes("auto"), RuntimeProbes::kAuto);
  EXPECT_EQ(parse_runtime_probes("on"), RuntimeProbes::kOn);
  EXPECT_EQ(parse_runtime_probes("ON"), std::nullopt);
  EXPECT_EQ(to_bpf_mode(RuntimeProbes::kAuto), GL_RUNTIME_AUTO);
}

}  // namespace
}  // namespace gpuledger::probes
