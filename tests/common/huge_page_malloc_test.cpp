// The restart's tunables: set only when the caller set none (its own choice,
// glibc.malloc.hugetlb=0 included, is kept). The restart itself is tried on a
// real fleet report (FleetDb.AFleetReportRestartsItselfWithMallocInHugePages).
#include "common/huge_page_malloc.h"

#include <gtest/gtest.h>

namespace gpuledger {
namespace {

TEST(HugePageMalloc, TunablesAreSetOnlyWhereTheCallerSetNone) {
  EXPECT_EQ(huge_page_malloc_tunables(nullptr), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(huge_page_malloc_tunables("glibc.malloc.hugetlb=0"), std::nullopt);
  EXPECT_EQ(huge_page_malloc_tunables("glibc.malloc.check=3"), std::nullopt);
  EXPECT_EQ(huge_page_malloc_tunables(""), std::nullopt);
}

}  // namespace
}  // namespace gpuledger
