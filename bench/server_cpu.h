#pragma once
// CPU seconds spent by a PostgreSQL server and by this process, so the fleet
// bench can say what a window costs each side: on one VM the shippers and the
// server share the cores, while in a fleet the shippers run on the nodes and
// the server's cores are its own (docs/performance.md).
#include <string>

namespace gpuledger::bench {

// The postmaster of `data_dir`: the first line of its postmaster.pid; 0 when
// the server is not running.
long postmaster_pid(const std::string& data_dir);
// The postmaster of `data_dir` and every live process it
// started, user + system, plus what its children that exited used (the
// postmaster reaps them). 0 when the server is not running.
double server_cpu_seconds(const std::string& data_dir);
// This process, user + system, all threads.
double own_cpu_seconds();

}  // namespace gpuledger::bench
