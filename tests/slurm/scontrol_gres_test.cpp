#include "slurm/scontrol_gres.h"

#include <gtest/gtest.h>

namespace gpuledger::slurm {
namespace {

using Gpus = std::vector<int>;

// Captured from Debian's slurmctld 22.05 (tests/slurm/slurm_cluster.sh):
// `scontrol -d show job 2`, a batch job holding GPU 1 of node gltest.
constexpr const char* kJob2 =
    "JobId=2 JobName=job.sh\n"
    "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
    "   JobState=RUNNING Reason=None Dependency=(null)\n"
    "   NodeList=gltest\n"
    "   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"
    "   JOB_GRES=gpu:1\n"
    "     Nodes=gltest CPU_IDs=1 Mem=0 GRES=gpu:1(IDX:1)\n"
    "   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0\n"
    "   Command=/tmp/job.sh\n"
    "   TresPerNode=gres:gpu:1\n";

TEST(ScontrolGres, AJobsLineForThisNodeGivesItsGpus) {
  EXPECT_EQ(job_gpus_on_node(kJob2, "gltest"), Gpus{1});
  EXPECT_EQ(job_gpus_on_node(kJob2, "gl"), Gpus{});  // another node: nothing here
}

TEST(ScontrolGres, AMultiNodeJobHoldsHereOnlyWhatItsLineForThisNodeSays) {
  const std::string text =
      "JobId=7 JobName=mpi\n"
      "     Nodes=gpu[01-02] CPU_IDs=0-7 Mem=0 GRES=gpu:a100:2(IDX:0-1)\n"
      "     Nodes=gpu03 CPU_IDs=0-3 Mem=0 GRES=gpu:a100:4(IDX:0,2-3,5)\n";
  EXPECT_EQ(job_gpus_on_node(text, "gpu02"), (Gpus{0, 1}));
  EXPECT_EQ(job_gpus_on_node(text, "gpu03"), (Gpus{0, 2, 3, 5}));
  EXPECT_EQ(job_gpus_on_node(text, "gpu04"), Gpus{});
}

TEST(ScontrolGres, GresValuesOfEveryShape) {
  EXPECT_EQ(gres_gpu_indexes("gpu:1(IDX:0)"), Gpus{0});
  EXPECT_EQ(gres_gpu_indexes("gpu(IDX:3)"), Gpus{3});
  EXPECT_EQ(gres_gpu_indexes("gpu:h100:3(IDX:0-1,4)"), (Gpus{0, 1, 4}));
  EXPECT_EQ(gres_gpu_indexes("gpu:a100:1(IDX:2),nic:1(IDX:0)"), Gpus{2});  // not a GPU: not read
  EXPECT_EQ(gres_gpu_indexes("shard:2(IDX:1)"), Gpus{1});  // as 22.05 prints a job of --gres=shard:2
  EXPECT_EQ(gres_gpu_indexes("mps:50(IDX:0)"), Gpus{0});   // and one of --gres=mps:50
  EXPECT_EQ(gres_gpu_indexes(""), Gpus{});
  EXPECT_EQ(gres_gpu_indexes("gpu:1(IDX:N/A)"), Gpus{});
  EXPECT_FALSE(gres_gpu_indexes("gpu:1"));              // held, but which is unknown
  EXPECT_FALSE(gres_gpu_indexes("gpu:1(IDX:x)"));
  EXPECT_FALSE(gres_gpu_indexes("gpu:1(IDX:2-1)"));
  EXPECT_FALSE(gres_gpu_indexes("gpu:1(IDX:0-99999999)"));  // bounded: no GPU has that index
}

TEST(ScontrolGres, HostlistsNameNodesAsSlurmDoes) {
  EXPECT_TRUE(hostlist_names("gltest", "gltest"));
  EXPECT_TRUE(hostlist_names("a,gpu[01-03,10]", "gpu02"));
  EXPECT_TRUE(hostlist_names("gpu[01-03,10]", "gpu10"));
  EXPECT_FALSE(hostlist_names("gpu[01-03]", "gpu2"));   // padded: as wide as the bound
  EXPECT_FALSE(hostlist_names("gpu[1-3]", "gpu02"));    // unpadded: no leading zero
  EXPECT_TRUE(hostlist_names("n[1-12]-ib", "n7-ib"));
  EXPECT_FALSE(hostlist_names("n[1-12]-ib", "n7"));
  EXPECT_FALSE(hostlist_names("gpu[01-03]", "gpu"));
  EXPECT_FALSE(hostlist_names("r[1-2]n[1-2]", "r1n1"));  // two groups: not read, not guessed
  EXPECT_FALSE(hostlist_names("", "gltest"));
}

// Attack (tried on slurmctld 22.05): a job's name, comment and paths are
// printed as given, newlines included, so a job can forge a line of the
// detail block. Every line counts for the job asked about: it can only make
// itself hold more (and pay for it); its real line is always there.
TEST(ScontrolGres, ForgedLinesNeverTakeAJobsRealGpuAway) {
  const std::string text =
      "JobId=3 JobName=evil\n"
      "     Nodes=gltest CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:N/A)\n"
      "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
      "   JOB_GRES=gpu:1\n"
      "     Nodes=gltest CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)\n"
      "   Comment=c\n"
      "     Nodes=othernode GRES=gpu:1(IDX:1)\n"
      "     Nodes=gltest GRES=gpu:1(IDX:zz)\n";
  size_t dropped = 0;
  EXPECT_EQ(job_gpus_on_node(text, "gltest", &dropped), Gpus{0});
  EXPECT_EQ(dropped, 1u);
}

TEST(ScontrolGres, ThisHostsNodeIsTheOneWhoseHostNameItIs) {
  const std::string nodes =
      "NodeName=gltest Arch=x86_64 CoresPerSocket=1 NodeAddr=127.0.0.1 NodeHostName=build-7 Version=22.05.8\n"
      "NodeName=gpu02 Arch=x86_64 NodeAddr=10.0.0.2 NodeHostName=gpu02 Version=22.05.8\n";
  EXPECT_EQ(slurm_node_for_host(nodes, "build-7"), "gltest");
  EXPECT_EQ(slurm_node_for_host(nodes, "gpu02"), "gpu02");
  EXPECT_EQ(slurm_node_for_host(nodes, "gpu03"), "");
  EXPECT_EQ(slurm_node_for_host(nodes + "NodeName=other NodeHostName=build-7\n", "build-7"), "");  // two: none
}

}  // namespace
}  // namespace gpuledger::slurm
