// The runtime probe plan against the simulator's runtime stand-in, shared and
// linked statically into a program (its .symtab), and a stripped copy.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/error.h"
#include "probes/runtime_entry_points.h"
#include "probes/static_symbols.h"
#include "probes/stripped_runtime.h"

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

// CUDA 13's static runtime binds cudaMalloc and friends locally (`t` in nm):
// a local cuda* function defined once is read; two locals of one name are
// ambiguous and neither is; other locals are not read at all.
TEST(StaticSymbols, LocalRuntimeEntryPointsDefinedOnceAreRead) {
  auto dir = std::filesystem::temp_directory_path() / ("gl-rt-local-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.c") << "__attribute__((noinline)) static int cudaMalloc(void **p, unsigned long n) "
                                "{ *p = 0; return (int)n; }\n"
                                "__attribute__((noinline)) static int cudaFree(void *p) { return p != 0; }\n"
                                "__attribute__((noinline)) static int helper(int x) { return x + 1; }\n"
                                "int cudaGetDeviceCount(int *n);\nint b(void);\n"
                                "int main(void) { void *p; int n; return cudaMalloc(&p, 4) + cudaFree(p) + "
                                "helper(1) + cudaGetDeviceCount(&n) + b(); }\n";
  std::ofstream(dir / "b.c") << "__attribute__((noinline)) static int cudaFree(void *p) { return p == 0; }\n"
                                "int cudaGetDeviceCount(int *n) { *n = 0; return 0; }\n"
                                "int b(void) { return cudaFree(0); }\n";
  const auto app = (dir / "app").string();
  const std::string cmd = "cc -O1 -o " + app + " " + (dir / "a.c").string() + " " + (dir / "b.c").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::map<std::string, int> seen;
  for (const auto& fn : read_static_functions(app)) ++seen[fn.name];
  EXPECT_EQ(seen["cudaMalloc"], 1) << "local, defined once";
  EXPECT_EQ(seen["cudaGetDeviceCount"], 1) << "global";
  EXPECT_EQ(seen.count("cudaFree"), 0u) << "two locals of one name: ambiguous";
  EXPECT_EQ(seen.count("helper"), 0u) << "locals are read only when named cuda*";
  std::filesystem::remove_all(dir);
}

// A stripped static runtime keeps its error names: found, even across the
// reader's chunks; a file without them is not taken for one.
TEST(StrippedRuntime, TheRuntimesErrorNamesAreFoundAnywhereInTheFile) {
  auto dir = std::filesystem::temp_directory_path() / ("gl-rt-marker-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string marker = "cudaError";
  marker += "InsufficientDriver";
  auto write = [&](const std::string& name, size_t at, bool with) {
    std::string body(3 << 20, 'x');
    if (with) body.replace(at, marker.size(), marker);
    std::ofstream((dir / name).string(), std::ios::binary) << body;
    return (dir / name).string();
  };
  auto found = [](const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    bool r = holds_cuda_runtime_strings(fd);
    ::close(fd);
    return r;
  };
  EXPECT_TRUE(found(write("across", (1 << 20) - 7, true))) << "across the first chunk's end";
  EXPECT_TRUE(found(write("late", (3 << 20) - marker.size(), true)));
  EXPECT_FALSE(found(write("none", 0, false)));
  // A file larger than the bound is read only up to it: a marker past it is not found.
  {
    int fd = ::open(write("past-the-bound", (3 << 20) - marker.size(), true).c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_FALSE(holds_cuda_runtime_strings(fd, size_t{2} << 20));
    EXPECT_TRUE(holds_cuda_runtime_strings(fd, size_t{3} << 20));
    ::close(fd);
  }
  EXPECT_FALSE(holds_cuda_runtime_strings(-1));
  std::filesystem::remove_all(dir);
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
