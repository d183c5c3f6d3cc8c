#include "node/allocation_source.h"

#include <gtest/gtest.h>

namespace gpuledger::node {
namespace {

TEST(AllocationSource, NamesRoundTrip) {
  for (const char* name : {"auto", "kubernetes", "slurm", "hpc-job-mapping", "none"})
    EXPECT_EQ(to_string(*parse_allocation_source(name)), name);
  EXPECT_FALSE(parse_allocation_source("k8s"));
  EXPECT_FALSE(parse_allocation_source(""));
}

TEST(AllocationSource, AutoTakesTheFirstSourceThisNodeHas) {
  const auto pick = [](AllocationFacts f) { return choose_allocation_source(AllocationSource::kAuto, f).source; };
  EXPECT_EQ(pick({}), AllocationSource::kNone);  // bare metal: nobody says who holds a GPU
  EXPECT_EQ(pick({.job_mapping_dir = true}), AllocationSource::kHpcJobMapping);
  EXPECT_EQ(pick({.slurmd_running = true, .job_mapping_dir = true}), AllocationSource::kSlurm);
  EXPECT_EQ(pick({.kubernetes_configured = true, .slurmd_running = true}), AllocationSource::kKubernetes);
  EXPECT_EQ(pick({.kubelet_socket = true, .job_mapping_dir = true}), AllocationSource::kKubernetes);
}

TEST(AllocationSource, AnAskedSourceIsTakenWhateverTheNodeHas) {
  EXPECT_EQ(choose_allocation_source(AllocationSource::kNone, {.kubelet_socket = true}).source, AllocationSource::kNone);
  EXPECT_EQ(choose_allocation_source(AllocationSource::kKubernetes, {}).source, AllocationSource::kKubernetes);
}

TEST(AllocationSource, NoSocketNoKubeconfigNoSlurmdIsNone) {
  const auto f = gather_allocation_facts("/nonexistent/kubelet.sock", false, false, "/nonexistent-proc");
  EXPECT_EQ(choose_allocation_source(AllocationSource::kAuto, f).source, AllocationSource::kNone);
  EXPECT_NE(allocation_meaning(AllocationSource::kNone).find("never __allocation_unknown__"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::node
