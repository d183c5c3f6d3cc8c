// Which physical GPU a CUDA device ordinal means: certain answers only.
#include "identity/gpu_visibility.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace gpuledger::identity {
namespace {

const std::string kA = "GPU-aaaaaaaa-1111-2222-3333-444444444444";
const std::string kB = "GPU-bbbbbbbb-1111-2222-3333-444444444444";
const std::string kMig = "MIG-cccccccc-1111-2222-3333-444444444444";
const std::vector<GpuIdentity> kTwo = {{0, kA, 0}, {1, kB, 1}};

struct Case {
  const char* name;
  ProcessGpuView view;
  unsigned ordinal;
  std::vector<GpuIdentity> inventory;
  std::optional<std::string> uuid;  // expected
};

class ResolveOrdinal : public ::testing::TestWithParam<Case> {};

TEST_P(ResolveOrdinal, GivesOnlyCertainAnswers) {
  const Case& c = GetParam();
  auto got = resolve_ordinal(c.view, c.ordinal, c.inventory);
  if (!c.uuid) {
    EXPECT_FALSE(got) << "resolved to " << got->uuid;
  } else {
    ASSERT_TRUE(got);
    EXPECT_EQ(got->uuid, *c.uuid);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, ResolveOrdinal,
    ::testing::Values(
        Case{"uuid_list_in_order", {kB + "," + kA, std::nullopt, "", {}}, 0, kTwo, kB},
        Case{"uuid_list_second", {kB + "," + kA, std::nullopt, "", {}}, 1, kTwo, kA},
        Case{"uuid_prefix", {"GPU-bbbb", std::nullopt, "", {}}, 0, kTwo, kB},
        Case{"ambiguous_prefix", {"GPU-", std::nullopt, "", {}}, 0, kTwo, std::nullopt},
        Case{"whole_uuid_not_in_inventory", {kMig, std::nullopt, "", {}}, 0, {}, kMig},
        Case{"ordinal_past_the_list", {kA, std::nullopt, "", {}}, 1, kTwo, std::nullopt},
        Case{"invalid_entry_ends_the_list", {kA + ",bogus," + kB, std::nullopt, "", {}}, 1, kTwo, std::nullopt},
        Case{"index_list_needs_pci_order", {"1", std::nullopt, "", {}}, 0, kTwo, std::nullopt},
        Case{"index_list_with_pci_order", {"1", std::nullopt, "PCI_BUS_ID", {}}, 0, kTwo, kB},
        Case{"index_in_restricted_container", {"0", std::string("GPU-bbbb"), "PCI_BUS_ID", {}}, 0, kTwo,
             std::nullopt},
        Case{"container_with_one_gpu_by_uuid", {std::nullopt, kB, "", {}}, 0, kTwo, kB},
        Case{"container_with_one_gpu_by_index", {std::nullopt, std::string("1"), "", {}}, 0, kTwo, kB},
        Case{"container_with_two_gpus", {std::nullopt, kA + "," + kB, "", {}}, 0, kTwo, std::nullopt},
        Case{"one_device_file_open", {std::nullopt, std::nullopt, "", {1}}, 0, kTwo, kB},
        Case{"two_device_files_open", {std::nullopt, std::nullopt, "", {0, 1}}, 0, kTwo, std::nullopt},
        Case{"nothing_said_pci_order", {std::nullopt, std::nullopt, "PCI_BUS_ID", {}}, 1, kTwo, kB},
        Case{"nothing_said_two_gpus", {std::nullopt, std::nullopt, "", {}}, 0, kTwo, std::nullopt},
        Case{"nothing_said_one_gpu", {std::nullopt, std::nullopt, "", {}}, 0, {{0, kA, 0}}, kA},
        Case{"nothing_said_no_inventory", {std::nullopt, std::nullopt, "", {}}, 0, {}, std::nullopt}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ReadProcessGpuView, AGoneProcessSaysNothing) {
  EXPECT_FALSE(read_process_gpu_view("/proc", 0x7ffffff0));
}

TEST(ReadProcessGpuView, ReadsThisProcess) {
  auto view = read_process_gpu_view("/proc", static_cast<unsigned>(::getpid()));
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->opened_minors.empty());
}

}  // namespace
}  // namespace gpuledger::identity
