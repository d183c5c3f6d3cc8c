#pragma once
// Tests on NVIDIA's real libraries (fetched by scripts/fetch-nvidia-libs.sh)
// say so with GL_REQUIRE_REAL_NVIDIA(present): skipped where they were not
// fetched, but FAILED under CI=true, where setup always fetches them.
#include <gtest/gtest.h>

#include "bpf_requirement.h"

#define GL_REQUIRE_REAL_NVIDIA(present)                                                                     \
  do {                                                                                                      \
    if (!(present)) {                                                                                       \
      if (::gpuledger::testing::running_in_ci())                                                            \
        FAIL() << "NVIDIA's real libraries are missing: scripts/fetch-nvidia-libs.sh build/nvidia";          \
      GTEST_SKIP() << "NVIDIA's real libraries are not fetched (scripts/fetch-nvidia-libs.sh build/nvidia)"; \
    }                                                                                                       \
  } while (0)
