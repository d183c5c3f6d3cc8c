// Tests for probes/cuda_entry_points.h: the probe plan for the project's CUDA
// driver simulator library and for hand-made symbol lists.
#include "probes/cuda_entry_points.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "cuda_probes.h"
#include "elf_function_fixture.h"
#include "probes/elf_symbols.h"

#ifndef GPULEDGER_SIM_LIB
#error "GPULEDGER_SIM_LIB must name build/sim/lib/libcuda.so.1"
#endif

namespace gpuledger::probes {
namespace {

struct Expect {
  gl_call_kind kind;
  unsigned dir = GL_DIR_UNKNOWN;  // gl_direction, or gl_context_op for GL_KIND_CONTEXT
  uint32_t size_arg = 0;
  uint32_t legacy = 0;
};

bool is_launch_kind(uint32_t kind) {
  return kind == GL_KIND_LAUNCH || kind == GL_KIND_LAUNCH_EX || kind == GL_KIND_GRAPH ||
         kind == GL_KIND_LAUNCH_LEGACY || kind == GL_KIND_LAUNCH_MULTI;
}

// Every entry point the simulator exports that gpuledger probes.
const std::map<std::string, Expect>& sim_expected() {
  static const std::map<std::string, Expect> e = {
      {"cuLaunchKernel", {GL_KIND_LAUNCH}},
      {"cuLaunchKernel_ptsz", {GL_KIND_LAUNCH}},
      {"cuLaunchKernelEx", {GL_KIND_LAUNCH_EX}},
      {"cuLaunchKernelEx_ptsz", {GL_KIND_LAUNCH_EX}},
      {"cuGraphLaunch", {GL_KIND_GRAPH}},
      {"cuGraphLaunch_ptsz", {GL_KIND_GRAPH}},
      {"cuMemAlloc", {GL_KIND_ALLOC, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemAlloc_v2", {GL_KIND_ALLOC}},
      {"cuMemAllocManaged", {GL_KIND_ALLOC}},
      {"cuMemAllocAsync", {GL_KIND_ALLOC}},
      {"cuMemAllocAsync_ptsz", {GL_KIND_ALLOC}},
      {"cuMemAllocFromPoolAsync", {GL_KIND_ALLOC}},
      {"cuMemCreate", {GL_KIND_ALLOC}},
      {"cuMemAllocPitch_v2", {GL_KIND_ALLOC_PITCH}},
      {"cuMemFree", {GL_KIND_FREE, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemFree_v2", {GL_KIND_FREE}},
      {"cuMemFreeAsync", {GL_KIND_FREE}},
      {"cuMemFreeAsync_ptsz", {GL_KIND_FREE}},
      {"cuMemRelease", {GL_KIND_FREE}},
      {"cuMemcpyHtoD", {GL_KIND_MEMCPY, GL_DIR_HTOD, 2, 1}},
      {"cuMemcpyHtoD_v2", {GL_KIND_MEMCPY, GL_DIR_HTOD, 2, 0}},
      {"cuMemcpyHtoD_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_HTOD, 2, 0}},
      {"cuMemcpyDtoH_v2", {GL_KIND_MEMCPY, GL_DIR_DTOH, 2, 0}},
      {"cuMemcpyDtoH_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_DTOH, 2, 0}},
      {"cuMemcpyDtoD_v2", {GL_KIND_MEMCPY, GL_DIR_DTOD, 2, 0}},
      {"cuMemcpyDtoD_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_DTOD, 2, 0}},
      {"cuMemcpyHtoDAsync_v2", {GL_KIND_MEMCPY, GL_DIR_HTOD, 2, 0}},
      {"cuMemcpyHtoDAsync_v2_ptsz", {GL_KIND_MEMCPY, GL_DIR_HTOD, 2, 0}},
      {"cuMemcpyDtoHAsync_v2", {GL_KIND_MEMCPY, GL_DIR_DTOH, 2, 0}},
      {"cuMemcpyDtoHAsync_v2_ptsz", {GL_KIND_MEMCPY, GL_DIR_DTOH, 2, 0}},
      {"cuMemcpyDtoDAsync_v2", {GL_KIND_MEMCPY, GL_DIR_DTOD, 2, 0}},
      {"cuMemcpyDtoDAsync_v2_ptsz", {GL_KIND_MEMCPY, GL_DIR_DTOD, 2, 0}},
      {"cuMemcpy", {GL_KIND_MEMCPY, GL_DIR_UNKNOWN, 2, 0}},
      {"cuMemcpy_ptds", {GL_KIND_MEMCPY, GL_DIR_UNKNOWN, 2, 0}},
      {"cuMemcpyAsync", {GL_KIND_MEMCPY, GL_DIR_UNKNOWN, 2, 0}},
      {"cuMemcpyAsync_ptsz", {GL_KIND_MEMCPY, GL_DIR_UNKNOWN, 2, 0}},
      {"cuMemcpyPeer", {GL_KIND_MEMCPY, GL_DIR_PEER, 4, 0}},
      {"cuMemcpyPeer_ptds", {GL_KIND_MEMCPY, GL_DIR_PEER, 4, 0}},
      {"cuMemcpyPeerAsync", {GL_KIND_MEMCPY, GL_DIR_PEER, 4, 0}},
      {"cuMemcpyPeerAsync_ptsz", {GL_KIND_MEMCPY, GL_DIR_PEER, 4, 0}},
      // A wait's direction bits say what it waits for (gl_sync_target).
      {"cuStreamSynchronize", {GL_KIND_SYNC, GL_SYNC_STREAM}},
      {"cuStreamSynchronize_ptsz", {GL_KIND_SYNC, GL_SYNC_STREAM}},
      {"cuCtxSynchronize", {GL_KIND_SYNC, GL_SYNC_CONTEXT}},
      {"cuEventSynchronize", {GL_KIND_SYNC, GL_SYNC_EVENT}},
      {"cuEventRecord", {GL_KIND_EVENT_RECORD}},
      {"cuEventRecord_ptsz", {GL_KIND_EVENT_RECORD}},
      {"cuEventRecordWithFlags", {GL_KIND_EVENT_RECORD}},
      {"cuEventRecordWithFlags_ptsz", {GL_KIND_EVENT_RECORD}},
      {"cuInit", {GL_KIND_OTHER}},
      // Contexts: the operation, and the argument holding the device.
      {"cuCtxCreate_v2", {GL_KIND_CONTEXT, GL_CTX_CREATE, 2, 0}},
      {"cuCtxCreate_v3", {GL_KIND_CONTEXT, GL_CTX_CREATE, 4, 0}},
      {"cuCtxCreate_v4", {GL_KIND_CONTEXT, GL_CTX_CREATE, 3, 0}},
      {"cuDevicePrimaryCtxRetain", {GL_KIND_CONTEXT, GL_CTX_RETAIN, 1, 0}},
      {"cuCtxSetCurrent", {GL_KIND_CONTEXT, GL_CTX_SET, 0, 0}},
      {"cuCtxPushCurrent_v2", {GL_KIND_CONTEXT, GL_CTX_PUSH, 0, 0}},
      {"cuCtxPopCurrent_v2", {GL_KIND_CONTEXT, GL_CTX_POP, 0, 0}},
      {"cuCtxDestroy_v2", {GL_KIND_CONTEXT, GL_CTX_DESTROY, 0, 0}},
      // The families the real driver exports beyond the basic forms
      // (sim/libcuda/cudasim_families.c): every exported form.
      {"cuArray3DCreate", {GL_KIND_ARRAY_CREATE, GL_DIR_UNKNOWN, GL_ARRAY_3D, 1}},
      {"cuArray3DCreate_v2", {GL_KIND_ARRAY_CREATE, GL_DIR_UNKNOWN, GL_ARRAY_3D, 0}},
      {"cuArrayCreate", {GL_KIND_ARRAY_CREATE, GL_DIR_UNKNOWN, GL_ARRAY_2D, 1}},
      {"cuArrayCreate_v2", {GL_KIND_ARRAY_CREATE, GL_DIR_UNKNOWN, GL_ARRAY_2D, 0}},
      {"cuArrayDestroy", {GL_KIND_FREE, GL_DIR_UNKNOWN, 0, 0}},
      {"cuCtxCreate", {GL_KIND_CONTEXT, GL_CTX_CREATE, 2, 0}},
      {"cuCtxDestroy", {GL_KIND_CONTEXT, GL_CTX_DESTROY, 0, 0}},
      {"cuCtxPopCurrent", {GL_KIND_CONTEXT, GL_CTX_POP, 0, 0}},
      {"cuCtxPushCurrent", {GL_KIND_CONTEXT, GL_CTX_PUSH, 0, 0}},
      {"cuEventQuery", {GL_KIND_QUERY, GL_SYNC_EVENT, 0, 0}},
      {"cuFuncSetBlockShape", {GL_KIND_BLOCK_SHAPE, GL_DIR_UNKNOWN, 0, 0}},
      {"cuGetExportTable", {GL_KIND_EXPORT_TABLE, GL_DIR_UNKNOWN, 0, 0}},
      {"cuLaunch", {GL_KIND_LAUNCH_LEGACY, GL_DIR_UNKNOWN, 0, 0}},
      {"cuLaunchCooperativeKernel", {GL_KIND_LAUNCH, GL_DIR_UNKNOWN, 0, 0}},
      {"cuLaunchCooperativeKernelMultiDevice", {GL_KIND_LAUNCH_MULTI, GL_DIR_UNKNOWN, 0, 0}},
      {"cuLaunchCooperativeKernel_ptsz", {GL_KIND_LAUNCH, GL_DIR_UNKNOWN, 0, 0}},
      {"cuLaunchGrid", {GL_KIND_LAUNCH_LEGACY, GL_DIR_UNKNOWN, 1, 0}},
      {"cuLaunchGridAsync", {GL_KIND_LAUNCH_LEGACY, GL_DIR_UNKNOWN, 1, 0}},
      {"cuMemAllocFromPoolAsync_ptsz", {GL_KIND_ALLOC, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemAllocPitch", {GL_KIND_ALLOC_PITCH, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemcpy2D", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemcpy2DAsync", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemcpy2DAsync_v2", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy2DAsync_v2_ptsz", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy2DUnaligned", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemcpy2DUnaligned_v2", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy2DUnaligned_v2_ptds", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy2D_v2", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy2D_v2_ptds", {GL_KIND_MEMCPY_2D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy3D", {GL_KIND_MEMCPY_3D, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemcpy3DAsync", {GL_KIND_MEMCPY_3D, GL_DIR_UNKNOWN, 0, 1}},
      {"cuMemcpy3DAsync_v2", {GL_KIND_MEMCPY_3D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy3DAsync_v2_ptsz", {GL_KIND_MEMCPY_3D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy3DPeer", {GL_KIND_MEMCPY_3D_PEER, GL_DIR_PEER, 0, 0}},
      {"cuMemcpy3DPeerAsync", {GL_KIND_MEMCPY_3D_PEER, GL_DIR_PEER, 0, 0}},
      {"cuMemcpy3DPeerAsync_ptsz", {GL_KIND_MEMCPY_3D_PEER, GL_DIR_PEER, 0, 0}},
      {"cuMemcpy3DPeer_ptds", {GL_KIND_MEMCPY_3D_PEER, GL_DIR_PEER, 0, 0}},
      {"cuMemcpy3D_v2", {GL_KIND_MEMCPY_3D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpy3D_v2_ptds", {GL_KIND_MEMCPY_3D, GL_DIR_UNKNOWN, 0, 0}},
      {"cuMemcpyAtoA", {GL_KIND_MEMCPY, GL_DIR_DTOD, 4, 1}},
      {"cuMemcpyAtoA_v2", {GL_KIND_MEMCPY, GL_DIR_DTOD, 4, 0}},
      {"cuMemcpyAtoA_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_DTOD, 4, 0}},
      {"cuMemcpyAtoD", {GL_KIND_MEMCPY, GL_DIR_DTOD, 3, 1}},
      {"cuMemcpyAtoD_v2", {GL_KIND_MEMCPY, GL_DIR_DTOD, 3, 0}},
      {"cuMemcpyAtoD_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_DTOD, 3, 0}},
      {"cuMemcpyAtoH", {GL_KIND_MEMCPY, GL_DIR_DTOH, 3, 1}},
      {"cuMemcpyAtoHAsync", {GL_KIND_MEMCPY, GL_DIR_DTOH, 3, 1}},
      {"cuMemcpyAtoHAsync_v2", {GL_KIND_MEMCPY, GL_DIR_DTOH, 3, 0}},
      {"cuMemcpyAtoHAsync_v2_ptsz", {GL_KIND_MEMCPY, GL_DIR_DTOH, 3, 0}},
      {"cuMemcpyAtoH_v2", {GL_KIND_MEMCPY, GL_DIR_DTOH, 3, 0}},
      {"cuMemcpyAtoH_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_DTOH, 3, 0}},
      {"cuMemcpyDtoA", {GL_KIND_MEMCPY, GL_DIR_DTOD, 3, 1}},
      {"cuMemcpyDtoA_v2", {GL_KIND_MEMCPY, GL_DIR_DTOD, 3, 0}},
      {"cuMemcpyDtoA_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_DTOD, 3, 0}},
      {"cuMemcpyDtoD", {GL_KIND_MEMCPY, GL_DIR_DTOD, 2, 1}},
      {"cuMemcpyDtoDAsync", {GL_KIND_MEMCPY, GL_DIR_DTOD, 2, 1}},
      {"cuMemcpyDtoH", {GL_KIND_MEMCPY, GL_DIR_DTOH, 2, 1}},
      {"cuMemcpyDtoHAsync", {GL_KIND_MEMCPY, GL_DIR_DTOH, 2, 1}},
      {"cuMemcpyHtoA", {GL_KIND_MEMCPY, GL_DIR_HTOD, 3, 1}},
      {"cuMemcpyHtoAAsync", {GL_KIND_MEMCPY, GL_DIR_HTOD, 3, 1}},
      {"cuMemcpyHtoAAsync_v2", {GL_KIND_MEMCPY, GL_DIR_HTOD, 3, 0}},
      {"cuMemcpyHtoAAsync_v2_ptsz", {GL_KIND_MEMCPY, GL_DIR_HTOD, 3, 0}},
      {"cuMemcpyHtoA_v2", {GL_KIND_MEMCPY, GL_DIR_HTOD, 3, 0}},
      {"cuMemcpyHtoA_v2_ptds", {GL_KIND_MEMCPY, GL_DIR_HTOD, 3, 0}},
      {"cuMemcpyHtoDAsync", {GL_KIND_MEMCPY, GL_DIR_HTOD, 2, 1}},
      {"cuMemsetD16", {GL_KIND_MEMSET, 2, 2, 1}},
      {"cuMemsetD16Async", {GL_KIND_MEMSET, 2, 2, 0}},
      {"cuMemsetD16Async_ptsz", {GL_KIND_MEMSET, 2, 2, 0}},
      {"cuMemsetD16_v2", {GL_KIND_MEMSET, 2, 2, 0}},
      {"cuMemsetD16_v2_ptds", {GL_KIND_MEMSET, 2, 2, 0}},
      {"cuMemsetD2D16", {GL_KIND_MEMSET, 2 | GL_MEMSET_2D, 3, 1}},
      {"cuMemsetD2D16Async", {GL_KIND_MEMSET, 2 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D16Async_ptsz", {GL_KIND_MEMSET, 2 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D16_v2", {GL_KIND_MEMSET, 2 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D16_v2_ptds", {GL_KIND_MEMSET, 2 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D32", {GL_KIND_MEMSET, 4 | GL_MEMSET_2D, 3, 1}},
      {"cuMemsetD2D32Async", {GL_KIND_MEMSET, 4 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D32Async_ptsz", {GL_KIND_MEMSET, 4 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D32_v2", {GL_KIND_MEMSET, 4 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D32_v2_ptds", {GL_KIND_MEMSET, 4 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D8", {GL_KIND_MEMSET, 1 | GL_MEMSET_2D, 3, 1}},
      {"cuMemsetD2D8Async", {GL_KIND_MEMSET, 1 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D8Async_ptsz", {GL_KIND_MEMSET, 1 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D8_v2", {GL_KIND_MEMSET, 1 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD2D8_v2_ptds", {GL_KIND_MEMSET, 1 | GL_MEMSET_2D, 3, 0}},
      {"cuMemsetD32", {GL_KIND_MEMSET, 4, 2, 1}},
      {"cuMemsetD32Async", {GL_KIND_MEMSET, 4, 2, 0}},
      {"cuMemsetD32Async_ptsz", {GL_KIND_MEMSET, 4, 2, 0}},
      {"cuMemsetD32_v2", {GL_KIND_MEMSET, 4, 2, 0}},
      {"cuMemsetD32_v2_ptds", {GL_KIND_MEMSET, 4, 2, 0}},
      {"cuMemsetD8", {GL_KIND_MEMSET, 1, 2, 1}},
      {"cuMemsetD8Async", {GL_KIND_MEMSET, 1, 2, 0}},
      {"cuMemsetD8Async_ptsz", {GL_KIND_MEMSET, 1, 2, 0}},
      {"cuMemsetD8_v2", {GL_KIND_MEMSET, 1, 2, 0}},
      {"cuMemsetD8_v2_ptds", {GL_KIND_MEMSET, 1, 2, 0}},
      {"cuMipmappedArrayCreate", {GL_KIND_ARRAY_CREATE, GL_DIR_UNKNOWN, GL_ARRAY_MIPMAP, 0}},
      {"cuMipmappedArrayDestroy", {GL_KIND_FREE, GL_DIR_UNKNOWN, 0, 0}},
      {"cuStreamQuery", {GL_KIND_QUERY, GL_SYNC_STREAM, 0, 0}},
      {"cuStreamQuery_ptsz", {GL_KIND_QUERY, GL_SYNC_STREAM, 0, 0}},
  };
  return e;
}

class SimPlan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { functions_ = new std::vector<ElfFunction>(read_dynamic_functions(GPULEDGER_SIM_LIB)); }
  static void TearDownTestSuite() {
    delete functions_;
    functions_ = nullptr;
  }
  static std::vector<ElfFunction>* functions_;

  static std::map<std::string, ProbeSpec> by_name(const std::vector<ProbeSpec>& plan) {
    std::map<std::string, ProbeSpec> out;
    for (const auto& p : plan) EXPECT_TRUE(out.emplace(p.name, p).second) << p.name << " planned twice";
    return out;
  }
  const ElfFunction* function(const std::string& name) const {
    for (const auto& f : *functions_)
      if (f.name == name) return &f;
    return nullptr;
  }
};
std::vector<ElfFunction>* SimPlan::functions_ = nullptr;

TEST_F(SimPlan, PlansExactlyTheExpectedNames) {
  CallNames names;
  auto plan = plan_probes(*functions_, names, {});
  std::set<std::string> planned;
  for (const auto& p : plan) planned.insert(p.name);
  std::set<std::string> expected;
  for (const auto& [n, e] : sim_expected()) expected.insert(n);
  EXPECT_EQ(planned, expected);
  EXPECT_EQ(plan.size(), expected.size()) << "a name was planned twice";
}

TEST_F(SimPlan, CookiesDecodeToKindDirectionSizeArgAndLegacy) {
  CallNames names;
  auto plan = by_name(plan_probes(*functions_, names, {}));
  for (const auto& [name, e] : sim_expected()) {
    SCOPED_TRACE(name);
    auto it = plan.find(name);
    ASSERT_NE(it, plan.end());
    const uint64_t cookie = it->second.cookie;
    EXPECT_EQ(GL_COOKIE_KIND(cookie), static_cast<uint32_t>(e.kind));
    EXPECT_EQ(GL_COOKIE_DIR(cookie), static_cast<uint32_t>(e.dir));
    EXPECT_EQ(GL_COOKIE_SIZE_ARG(cookie), e.size_arg);
    EXPECT_EQ(GL_COOKIE_LEGACY(cookie), e.legacy);
    // Bit 25: a synchronous copy (it ends the default stream's busy span), for copies without Async only.
    const bool copy = e.kind == GL_KIND_MEMCPY || e.kind == GL_KIND_MEMCPY_2D || e.kind == GL_KIND_MEMCPY_3D ||
                      e.kind == GL_KIND_MEMCPY_3D_PEER;
    EXPECT_EQ(GL_COOKIE_SYNC_COPY(cookie), copy && name.find("Async") == std::string::npos ? 1u : 0u);
    // Bit 26: counted at entry - an asynchronous copy (batches included) or a memset, by default.
    const bool any_copy = copy || e.kind == GL_KIND_MEMCPY_BATCH || e.kind == GL_KIND_MEMCPY_3D_BATCH;
    const bool at_entry = (any_copy && !GL_COOKIE_SYNC_COPY(cookie)) || e.kind == GL_KIND_MEMSET;
    EXPECT_EQ(GL_COOKIE_AT_ENTRY(cookie), at_entry ? 1u : 0u);
    EXPECT_EQ((cookie >> 27) & 0x1f, 0u) << "bits between the at-entry bit and the call id must be clear";
    EXPECT_EQ(cookie >> 42, 0u) << "bits above the call id must be clear";
    // The call id names the entry point back.
    const std::string* back = names.name_of(GL_COOKIE_CALL(cookie));
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(*back, name);
  }
}

TEST_F(SimPlan, OffsetsMatchTheElfSymbols) {
  CallNames names;
  for (const auto& p : plan_probes(*functions_, names, {})) {
    const ElfFunction* f = function(p.name);
    ASSERT_NE(f, nullptr) << p.name;
    EXPECT_EQ(p.file_offset, f->file_offset) << p.name;
    EXPECT_NE(p.file_offset, 0u) << p.name;
  }
}

TEST_F(SimPlan, LaunchesGetTheLaunchProgramWithoutReturnByDefault) {
  CallNames names;
  for (const auto& p : plan_probes(*functions_, names, {})) {
    SCOPED_TRACE(p.name);
    if (is_launch_kind(GL_COOKIE_KIND(p.cookie))) {
      EXPECT_EQ(p.program, ProbeProgram::kLaunch);
      EXPECT_FALSE(p.with_return);
    } else {
      // Asynchronous copies and memsets are counted at entry too (issue 28 item 4): no return probe.
      EXPECT_EQ(p.program, ProbeProgram::kCallEntry);
      EXPECT_EQ(p.with_return, !GL_COOKIE_AT_ENTRY(p.cookie));
    }
  }
  auto by = by_name(plan_probes(*functions_, names, {}));
  for (const char* n : {"cuMemcpyHtoDAsync_v2", "cuMemcpyAsync", "cuMemsetD8_v2", "cuMemsetD32Async"}) {
    ASSERT_TRUE(by.count(n)) << n;
    EXPECT_FALSE(by[n].with_return) << n;
    EXPECT_TRUE(GL_COOKIE_AT_ENTRY(by[n].cookie)) << n;
  }
  for (const char* n : {"cuMemcpyHtoD_v2", "cuMemcpy", "cuStreamSynchronize", "cuMemAlloc_v2", "cuEventRecord"}) {
    ASSERT_TRUE(by.count(n)) << n;
    EXPECT_TRUE(by[n].with_return) << n << ": its return does more than say it succeeded";
    EXPECT_FALSE(GL_COOKIE_AT_ENTRY(by[n].cookie)) << n;
  }
  auto plan = by_name(plan_probes(*functions_, names, {}));
  for (const char* n : {"cuLaunchKernel", "cuLaunchKernel_ptsz"}) {
    ASSERT_TRUE(plan.count(n)) << n;
    EXPECT_EQ(GL_COOKIE_KIND(plan[n].cookie), uint32_t{GL_KIND_LAUNCH}) << n;
    EXPECT_EQ(plan[n].program, ProbeProgram::kLaunch) << n;
    EXPECT_FALSE(plan[n].with_return) << n;
  }
}

TEST_F(SimPlan, LaunchReturnsOptionProbesLaunchesAtReturn) {
  CallNames names;
  auto plan = plan_probes(*functions_, names, ProbePlanOptions{.launch_returns = true});
  EXPECT_EQ(plan.size(), sim_expected().size());
  for (const auto& p : plan) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.program, ProbeProgram::kCallEntry);
    EXPECT_TRUE(p.with_return);
    EXPECT_FALSE(GL_COOKIE_AT_ENTRY(p.cookie)) << "copies and memsets too are counted at return";
  }
  auto m = by_name(plan);
  EXPECT_EQ(GL_COOKIE_KIND(m["cuLaunchKernel"].cookie), uint32_t{GL_KIND_LAUNCH});
  EXPECT_EQ(GL_COOKIE_KIND(m["cuLaunchKernelEx"].cookie), uint32_t{GL_KIND_LAUNCH_EX});
  EXPECT_EQ(GL_COOKIE_KIND(m["cuGraphLaunch_ptsz"].cookie), uint32_t{GL_KIND_GRAPH});
}

TEST_F(SimPlan, SimilarNamesAreNotConfused) {
  CallNames names;
  auto plan = by_name(plan_probes(*functions_, names, {}));
  // Exported by the simulator but not a form of any probed family.
  for (const char* n : {"cuDevicePrimaryCtxRelease_v2", "cuCtxGetCurrent", "cuStreamCreate",
                        "cuGetProcAddress", "cuDriverGetVersion", "cudasimLiveBytes"}) {
    EXPECT_FALSE(plan.count(n)) << n;
    EXPECT_NE(function(n), nullptr) << n << " should exist in the simulator";
  }
}

TEST_F(SimPlan, CallIdsAreDistinctAndRoundTrip) {
  CallNames names;
  auto plan = plan_probes(*functions_, names, {});
  EXPECT_EQ(names.size(), plan.size());
  std::set<uint32_t> ids;
  for (const auto& p : plan) {
    uint32_t id = GL_COOKIE_CALL(p.cookie);
    EXPECT_TRUE(ids.insert(id).second) << p.name;
    EXPECT_LT(id, uint32_t{GL_MAX_CALLS});
    ASSERT_NE(names.name_of(id), nullptr);
    EXPECT_EQ(*names.name_of(id), p.name);
    EXPECT_EQ(names.id_of(p.name), id);
  }
  EXPECT_EQ(names.name_of(static_cast<uint32_t>(plan.size())), nullptr);
}

TEST_F(SimPlan, ReplanningWithTheSameCallNamesKeepsIds) {
  CallNames names;
  auto first = plan_probes(*functions_, names, {});
  size_t n = names.size();
  auto second = plan_probes(*functions_, names, {});
  EXPECT_EQ(names.size(), n);
  ASSERT_EQ(first.size(), second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].name, second[i].name);
    EXPECT_EQ(first[i].cookie, second[i].cookie);
  }
}

// ---------------------------------------------------------------------------
// Hand-made symbol lists.

ElfFunction fn(std::string name, uint64_t offset) { return function_at(std::move(name), offset); }

TEST(SyntheticPlan, NoCudaNamesGivesAnEmptyPlan) {
  CallNames names;
  std::vector<ElfFunction> fns = {fn("malloc", 0x100), fn("cudaMalloc", 0x200), fn("cuMemAllocX", 0x300),
                                  fn("cuLaunchX", 0x400), fn("xcuInit", 0x500), fn("cuMemcpy_v", 0x600)};
  EXPECT_TRUE(plan_probes(fns, names, {}).empty());
  EXPECT_TRUE(plan_probes({}, names, {}).empty());
  EXPECT_EQ(names.size(), 0u);
}

TEST(SyntheticPlan, AnAliasGetsOneProbe) {
  CallNames names;
  // cuMemAlloc_v2 and cuMemAllocManaged at the same offset; cuLaunchKernel and
  // cuLaunchKernel_ptsz at another.
  std::vector<ElfFunction> fns = {fn("cuMemAlloc_v2", 0x100), fn("cuMemAllocManaged", 0x100),
                                  fn("cuLaunchKernel", 0x200), fn("cuLaunchKernel_ptsz", 0x200),
                                  fn("cuMemFree_v2", 0x300)};
  auto plan = plan_probes(fns, names, {});
  ASSERT_EQ(plan.size(), 3u);
  std::set<uint64_t> offsets;
  std::map<std::string, ProbeSpec> m;
  for (const auto& p : plan) {
    EXPECT_TRUE(offsets.insert(p.file_offset).second) << p.name;
    m[p.name] = p;
  }
  // First family, then smallest name within a family, wins.
  ASSERT_TRUE(m.count("cuLaunchKernel"));
  ASSERT_TRUE(m.count("cuMemAlloc_v2"));
  ASSERT_TRUE(m.count("cuMemFree_v2"));
  EXPECT_EQ(m["cuLaunchKernel"].file_offset, 0x200u);
  EXPECT_EQ(m["cuMemAlloc_v2"].file_offset, 0x100u);
  EXPECT_EQ(GL_COOKIE_KIND(m["cuMemFree_v2"].cookie), uint32_t{GL_KIND_FREE});
  // Skipped aliases are not given ids.
  EXPECT_EQ(names.size(), 3u);
}

TEST(SyntheticPlan, SameNameTwiceIsPlannedOnce) {
  CallNames names;
  ElfFunction hidden = fn("cuMemAlloc_v2", 0x100);
  hidden.version = "libcuda.so.1";
  hidden.is_default_version = false;
  ElfFunction dflt = fn("cuMemAlloc_v2", 0x200);
  dflt.version = "libcuda.so.2";
  auto plan = plan_probes({hidden, dflt}, names, {});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].file_offset, 0x200u);  // the default version wins
}

TEST(SyntheticPlan, LegacyFormsOfEveryThirtyTwoBitFamily) {
  CallNames names;
  std::vector<ElfFunction> fns = {
      fn("cuMemAllocPitch", 0x10),  fn("cuMemAllocPitch_v2", 0x20), fn("cuMemcpyHtoDAsync", 0x30),
      fn("cuMemcpyDtoH", 0x40),     fn("cuMemcpyDtoD", 0x50),       fn("cuMemcpyDtoHAsync", 0x60),
      fn("cuMemcpyDtoDAsync", 0x70), fn("cuMemAllocManaged", 0x80),  fn("cuMemcpy", 0x90),
      fn("cuMemcpyPeer", 0xa0),     fn("cuMemcpyHtoD_v3", 0xb0),    fn("cuMemFree_ptds", 0xc0),
  };
  std::map<std::string, ProbeSpec> m;
  for (const auto& p : plan_probes(fns, names, {})) m[p.name] = p;
  ASSERT_EQ(m.size(), fns.size());
  const std::map<std::string, uint32_t> legacy = {
      {"cuMemAllocPitch", 1},   {"cuMemAllocPitch_v2", 0}, {"cuMemcpyHtoDAsync", 1}, {"cuMemcpyDtoH", 1},
      {"cuMemcpyDtoD", 1},      {"cuMemcpyDtoHAsync", 1},  {"cuMemcpyDtoDAsync", 1}, {"cuMemAllocManaged", 0},
      {"cuMemcpy", 0},          {"cuMemcpyPeer", 0},       {"cuMemcpyHtoD_v3", 0},   {"cuMemFree_ptds", 1},
  };
  for (const auto& [name, bit] : legacy) EXPECT_EQ(GL_COOKIE_LEGACY(m[name].cookie), bit) << name;
  EXPECT_EQ(GL_COOKIE_KIND(m["cuMemAllocPitch"].cookie), uint32_t{GL_KIND_ALLOC_PITCH});
  EXPECT_EQ(GL_COOKIE_DIR(m["cuMemcpyDtoDAsync"].cookie), uint32_t{GL_DIR_DTOD});
  EXPECT_EQ(GL_COOKIE_SIZE_ARG(m["cuMemcpyPeer"].cookie), 4u);
}

TEST(CallNames, AssignsIdsInOrderAndLooksThemUp) {
  CallNames names;
  EXPECT_EQ(names.size(), 0u);
  EXPECT_EQ(names.name_of(0), nullptr);
  EXPECT_EQ(names.id_of("cuInit"), 0u);
  EXPECT_EQ(names.id_of("cuMemAlloc_v2"), 1u);
  EXPECT_EQ(names.id_of("cuInit"), 0u);
  EXPECT_EQ(names.size(), 2u);
  ASSERT_NE(names.name_of(1), nullptr);
  EXPECT_EQ(*names.name_of(1), "cuMemAlloc_v2");
  EXPECT_EQ(names.name_of(2), nullptr);
}

TEST(CallNames, ThrowsWhenIdsRunOut) {
  // The driver's names stop where the runtime's ids begin.
  CallNames names;
  for (int i = 0; i < GL_RUNTIME_CALL_BASE; ++i)
    EXPECT_EQ(names.id_of("f" + std::to_string(i)), static_cast<uint32_t>(i));
  EXPECT_THROW(names.id_of("one_too_many"), gpuledger::Error);
  EXPECT_EQ(names.id_of("f191"), 191u);  // existing names still resolve
  EXPECT_EQ(names.size(), static_cast<size_t>(GL_RUNTIME_CALL_BASE));
}

TEST(CallNames, RuntimeNamesTakeTheIdsAboveTheDriversAndNoOthers) {
  CallNames names(GL_RUNTIME_CALL_BASE, GL_MAX_CALLS);
  EXPECT_EQ(names.id_of("cudaMalloc"), uint32_t{GL_RUNTIME_CALL_BASE});
  EXPECT_EQ(names.name_of(0), nullptr);
  ASSERT_NE(names.name_of(GL_RUNTIME_CALL_BASE), nullptr);
  EXPECT_EQ(*names.name_of(GL_RUNTIME_CALL_BASE), "cudaMalloc");
  for (int i = 1; i < GL_MAX_CALLS - GL_RUNTIME_CALL_BASE; ++i) names.id_of("r" + std::to_string(i));
  EXPECT_EQ(names.id_of("r63"), uint32_t{GL_RUNTIME_CALL_BASE} + 63);
  EXPECT_THROW(names.id_of("one_too_many"), gpuledger::Error);
}

TEST(EntryPointFamilies, BasesAreUnique) {
  std::set<std::string_view> bases;
  for (const auto& f : entry_point_families()) EXPECT_TRUE(bases.insert(f.base).second) << f.base;
}

}  // namespace
}  // namespace gpuledger::probes
