#pragma once
// Test support: many workloads, cheaply. Workloads are cgroups; a few forked
// workers, released at once, walk through them and make their first calls in
// each: to the probes every cgroup is a new workload (an entry inserted in the
// workload map from the uprobe), as a new container's first process would be.
#include <string>
#include <vector>

#include "sim_library.h"

namespace gpuledger::testing {

// `n` fresh, empty cgroup directories under `parent_dir` (which exists).
std::vector<std::string> make_workload_cgroups(const std::string& parent_dir, int n);
// rmdir of each (they must hold no process); the ones already gone are skipped.
void remove_cgroups(const std::vector<std::string>& dirs);

// `workers` processes set up a CUDA session in `home` (a cgroup of their own),
// wait until all are ready, then share `dirs` out and make `launches_each`
// cuLaunchKernel calls in each, and go back to `home`. Throws
// std::runtime_error when a worker fails. Returns the walk's seconds.
double walk_workloads(const bench::SimLibrary& lib, const std::vector<std::string>& dirs, const std::string& home,
                      int workers, int launches_each);

}  // namespace gpuledger::testing
