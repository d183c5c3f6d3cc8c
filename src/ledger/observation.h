#pragma once
// What the ledger sees of the node at one instant (observation.h): the GPU
// slots, who holds them, each workload's cumulative usage, the device's
// readings. The node agent builds one every --ledger-interval-ms from the
// planes' snapshots (src/node/observation_inputs.cpp); the ledger includes no
// plane.
#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "ledger/device_quality.h"
#include "ledger/energy_meter.h"
#include "ledger/process_sm_meter.h"
#include "ledger/store.h"

namespace gpuledger::ledger {

struct HolderEntry {
  std::string slot_uuid;
  std::string account;  // workload id of the pod/container holding it
  AccountLabels labels;
  // The allocated share of the slot (kubernetes::GpuAllocation::share; a
  // holder's entries add up): 1 a whole GPU or MIG instance, 1/N a replica.
  double weight = 1.0;
  // false: the sources could not tell the share (GpuAllocation::share_known);
  // weight is then 1, a placeholder (window_split.h: allocation parts by usage).
  bool share_known = true;
};

struct WorkloadUsage {
  std::string account;  // workload id (identity::Workload::id)
  AccountLabels labels;
  double busy_seconds = 0;  // cumulative (probes::busy_seconds_estimate)
  uint64_t launches = 0;    // cumulative
  uint64_t live_bytes = 0;  // now
  std::vector<std::string> slots;  // slot uuids it runs on, when known (NVML processes, allocation)
  // Cumulative usage per slot uuid where the attribution plane knows the device
  // (per-GPU counters). Such usage goes to exactly that slot; the rest (the
  // totals above minus these) goes by `slots` and the rules above.
  struct SlotUsage {
    double busy_seconds = 0;
    uint64_t launches = 0;
    uint64_t live_bytes = 0;
  };
  std::map<std::string, SlotUsage> by_slot;
  // NVML's used memory of its processes now, per slot uuid (includes each
  // CUDA context's own memory); absent where NVML said nothing.
  std::map<std::string, uint64_t> nvml_used_bytes;
};

// Where the device side sees a workload now (allocation against use,
// allocation_use.h): the GPU uuids of NVML's process lists and of the
// /dev/nvidiaN its processes hold open (a MIG instance's process shows its
// parent GPU).
struct DeviceUse {
  AccountLabels labels;
  std::vector<std::string> gpus;
};

struct DeviceSample {
  std::optional<double> busy_fraction;  // DCGM GPU utilisation / NVML, 0..1
  Efficiency efficiency;
  std::optional<double> vram_capacity_bytes;  // the GPU's memory (used + free), when read
  // Each source's values, for the cross-checks (device_quality.h); busy_fraction
  // is DCGM's utilisation when checks has it, else NVML's.
  CheckSample checks;
};

struct Observation {
  double time = 0;  // Unix seconds
  std::vector<GpuSlot> slots;
  std::vector<HolderEntry> holders;
  std::vector<WorkloadUsage> workloads;
  std::map<std::string, DeviceSample> device;  // by slot uuid
  // Energy readings by slot uuid (energy_meter.h): an interval between two
  // readings that crosses a window's end is split there by time.
  std::map<std::string, EnergyReading> energy;
  // false outside Kubernetes (no allocation source): the holders of a slot in
  // a window are then the workloads that used it in that window (each 1/n of it).
  bool allocation_known = true;
  // NVML's per-process SM time to date (process_sm_meter.h), on the slots
  // where its samples are per process; empty without NVML.
  std::vector<ProcessSmUse> process_sm;
  // Slots whose NVML samples were seen to split the GPU between processes
  // (two sampled at one instant: device::GpuInfo::process_samples_split).
  // Elsewhere they say how busy the GPU was, not who of two users made it so:
  // driver 580 on an H200 gives each period to one process, and a tenant that
  // never runs most of a period gets no sample at all.
  std::set<std::string> nvml_splits_processes;
  // false under the billing probe set (probes/probe_sets.h): no launch, copy
  // or wait was probed, so their counts are not evidence of idleness; the
  // window's idleness comes from NVML and the store notes the span.
  bool hot_path_probed = true;
  // By account (workload id). Believed when device_use_known (NVML answers its
  // process lists); with allocation_known, the window's accounts then get
  // used_unallocated_seconds and allocated_unused_seconds.
  std::map<std::string, DeviceUse> device_use;
  bool device_use_known = false;
};

}  // namespace gpuledger::ledger
