// Pinned error counters and taken-over links carry call ids in their keys and
// cookies. Ids are handed out in the order files are planned, which another
// agent need not repeat (two driver versions on a node, runtime files found in
// another order), so the names travel with the maps: a successor names every
// id as the agent that handed it out did, and goes on from there.
#include <bpf/bpf.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "bpf_requirement.h"
#include "common/unique_fd.h"
#include "cuda_probes.h"
#include "probes/call_name_map.h"

namespace gpuledger::testing {
namespace {

using probes::CallNames;

TEST(CallNamesTakeover, IdsKeepTheirNamesAcrossAgentsAndNewOnesFollow) {
  GL_REQUIRE_BPF();
  UniqueFd map(bpf_map_create(BPF_MAP_TYPE_ARRAY, "gl_call_names", sizeof(uint32_t), sizeof(gl_call_name),
                              GL_MAX_CALLS, nullptr));
  ASSERT_TRUE(map.valid());
  {  // The first agent: a driver file with these entry points in this order, then a runtime.
    CallNames driver, runtime{GL_RUNTIME_CALL_BASE, GL_MAX_CALLS};
    probes::keep_call_names_in(driver, map.get());
    probes::keep_call_names_in(runtime, map.get());
    EXPECT_EQ(driver.id_of("cuMemAlloc_v2"), 0u);
    EXPECT_EQ(driver.id_of("cuLaunchKernel"), 1u);
    EXPECT_EQ(runtime.id_of("cudaMalloc"), GL_RUNTIME_CALL_BASE);
  }
  // Its successor plans another file first, whose first entry point is cuLaunchKernel.
  CallNames driver, runtime{GL_RUNTIME_CALL_BASE, GL_MAX_CALLS};
  probes::keep_call_names_in(driver, map.get());
  probes::keep_call_names_in(runtime, map.get());
  EXPECT_EQ(driver.id_of("cuLaunchKernel"), 1u) << "not 0: the adopted cookies say 1";
  ASSERT_NE(driver.name_of(0), nullptr);
  EXPECT_EQ(*driver.name_of(0), "cuMemAlloc_v2");
  EXPECT_EQ(driver.id_of("cuMemcpyHtoD_v2"), 2u);
  EXPECT_EQ(driver.name_of(GL_RUNTIME_CALL_BASE), nullptr) << "the runtime's range is not the driver's";
  ASSERT_NE(runtime.name_of(GL_RUNTIME_CALL_BASE), nullptr);
  EXPECT_EQ(*runtime.name_of(GL_RUNTIME_CALL_BASE), "cudaMalloc");
  EXPECT_EQ(runtime.id_of("cudaFree"), GL_RUNTIME_CALL_BASE + 1);
  // And the third agent sees all of it.
  const auto names = probes::read_call_names(map.get());
  EXPECT_EQ(names, (std::map<uint32_t, std::string>{{0, "cuMemAlloc_v2"},
                                                    {1, "cuLaunchKernel"},
                                                    {2, "cuMemcpyHtoD_v2"},
                                                    {GL_RUNTIME_CALL_BASE, "cudaMalloc"},
                                                    {GL_RUNTIME_CALL_BASE + 1, "cudaFree"}}));
}

}  // namespace
}  // namespace gpuledger::testing
