#include <gtest/gtest.h>

#include "device/proc_inventory.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

TEST(ProcInventory, ParsesTheDriverInformationFormat) {
  auto fields = parse_information_file(
      "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 0\nGPU UUID: \t GPU-3f6a\nBus Location: \t 0000:07:00.0\n"
      "Device Minor: \t 0\nGPU Excluded:\t No\r\nno colon here\n");
  EXPECT_EQ(fields["Model"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(fields["GPU UUID"], "GPU-3f6a");
  EXPECT_EQ(fields["Bus Location"], "0000:07:00.0");
  EXPECT_EQ(fields["Device Minor"], "0");
  EXPECT_EQ(fields["GPU Excluded"], "No");
  EXPECT_EQ(fields.count("no colon here"), 0u);
}

TEST(ProcInventory, ReadsEveryGpuButExcludedOnesInPciOrder) {
  auto gpus = read_proc_inventory(test::fixture_path("proc-driver-nvidia"));
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].uuid, "GPU-3f6a2c1e-8b4d-7e21-9c0a-5d1e2f3a4b5c");
  EXPECT_EQ(gpus[0].model, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(gpus[0].pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(gpus[0].minor, 0u);
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_FALSE(gpus[0].mig_enabled.has_value());  // procfs cannot tell
  EXPECT_EQ(gpus[1].pci_bus_id, "00000000:0F:00.0");
  EXPECT_EQ(gpus[1].minor, 1u);
  EXPECT_EQ(gpus[1].index, 1u);
  EXPECT_EQ(gpus[1].origins, std::vector<std::string>{"procfs"});
}

TEST(ProcInventory, MissingDriverMeansNoGpus) {
  EXPECT_TRUE(read_proc_inventory("/nonexistent/driver/nvidia").empty());
}

TEST(PciBusId, NormalisesTheFormsEachSourcePrints) {
  EXPECT_EQ(normalize_pci_bus_id("0000:07:00.0"), "00000000:07:00.0");
  EXPECT_EQ(normalize_pci_bus_id("00000000:0f:00.0"), "00000000:0F:00.0");
  EXPECT_EQ(normalize_pci_bus_id("00000000:00:1E.0"), "00000000:00:1E.0");
  EXPECT_EQ(normalize_pci_bus_id("8a:00.0"), "00000000:8A:00.0");
  EXPECT_EQ(normalize_pci_bus_id("garbage"), "GARBAGE");
  EXPECT_EQ(normalize_pci_bus_id("zz:yy:xx.w"), "ZZ:YY:XX.W");
}

TEST(Inventory, MergeFillsGapsByUuid) {
  std::vector<GpuInfo> into{{.index = 0, .uuid = "GPU-a", .model = "", .pci_bus_id = "00000000:07:00.0",
                             .minor = std::nullopt, .mig_enabled = true, .origins = {"nvml"}}};
  merge_inventory(into, {{.index = 5, .uuid = "GPU-a", .model = "A100", .pci_bus_id = "x", .minor = 3,
                          .mig_enabled = false, .origins = {"procfs"}},
                         {.index = 1, .uuid = "GPU-b", .model = "A100", .pci_bus_id = "00000000:0F:00.0",
                          .minor = 1, .mig_enabled = std::nullopt, .origins = {"dcgm"}}});
  ASSERT_EQ(into.size(), 2u);
  EXPECT_EQ(into[0].index, 0u);  // first source wins
  EXPECT_EQ(into[0].model, "A100");
  EXPECT_EQ(into[0].minor, 3u);
  EXPECT_EQ(into[0].mig_enabled, true);
  EXPECT_EQ(into[0].origins, (std::vector<std::string>{"nvml", "procfs"}));
  EXPECT_EQ(into[1].uuid, "GPU-b");
}

}  // namespace
}  // namespace gpuledger::device
