#pragma once
// The accountant's inputs from the other planes, for the agent's wiring:
//   slots      - whole GPUs from the device inventory; MIG instances from the
//                Kubernetes allocation (nvidia.com/mig-<profile> resources).
//                A MIG device's parent is the GPU its id names, else the
//                node's only MIG-enabled GPU (else unknown: MIG slots are
//                then priced by the default or their own UUID, and the
//                parent's free slices cannot be counted).
//                A MIG-enabled GPU is also a slot for its unallocated slices:
//                profile "<free>g.unallocated", so its price is the parent's
//                x free / slices and nothing is lost (no holder: __unallocated__).
//   holders    - from the Kubernetes allocation: the account is the workload
//                id of the container (matched on namespace/pod/container in
//                the agent snapshot), or "k8s/<namespace>/<pod>/<container>"
//                for a container that never used CUDA. The weight is the
//                allocation's share of the device (GpuAllocation::share: 1
//                whole, replicas held / advertised, a HAMi/KAI fraction, a
//                DRA claim's part; 1 when it is unknown); a holder's entries
//                on one slot add up.
//   memory     - per GPU: used + free bytes (DCGM first): the capacity the
//                unheld memory cost (memory_price_share) is measured against,
//                and vram_per_gib_hour derives the memory share from
//                (vram_price.h). None per MIG instance.
//   device     - per GPU: busy fraction = utilisation ratio; efficiency =
//                SM active / occupancy, tensor active, DRAM active; DCGM
//                readings first, NVML where DCGM has none.
//   energy     - per GPU: total-energy counter and power (energy_readings).
//   NVML memory - per workload and GPU: NVML's used memory of its processes
//                (matched by host pid; add_nvml_memory), for rightsizing.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attribution/snapshot.h"
#include "device/device_snapshot.h"
#include "kubernetes/gpu_allocation.h"
#include "ledger/accountant.h"

namespace gpuledger::node {

std::vector<ledger::GpuSlot> slots_from(const device::DeviceSnapshot& devices,
                                const std::vector<kubernetes::GpuAllocation>& allocations, const ledger::PriceBook& prices);
std::vector<ledger::HolderEntry> holders_from(const std::vector<kubernetes::GpuAllocation>& allocations,
                                      const attribution::AttributionSnapshot& snapshot);
std::map<std::string, ledger::DeviceSample> device_samples(const device::DeviceSnapshot& devices);
// Per whole GPU: the energy counter (DCGM first, NVML where DCGM has none) and
// the power draw, for the energy meter (energy_meter.h). None for a
// MIG-enabled GPU (its energy is not split over instances: unknown).
std::map<std::string, ledger::EnergyReading> energy_readings(double now, const device::DeviceSnapshot& devices);

// Adds NVML's per-process used memory (DeviceSnapshot::processes, by host pid)
// to the workloads' nvml_used_bytes, by GPU uuid. MIG processes are reported
// under the parent GPU's uuid by NVML: their memory goes to that uuid.
void add_nvml_memory(std::vector<ledger::WorkloadUsage>& workloads, const attribution::AttributionSnapshot& snapshot,
                     const device::DeviceSnapshot& devices);

// The GPUs the device side sees each workload on (Observation::device_use):
// NVML's process lists (by host pid: the views' processes, then the owners of
// processes the probes never saw) and the /dev/nvidiaN its processes hold
// open under `proc_root` (identity/gpu_evidence.h; "" skips the scan), mapped
// to GPU uuids by the inventory's minors. GPU infrastructure (the MPS daemons)
// is nobody's use. Returns whether it can be believed: NVML answers.
bool add_device_use(ledger::Observation& observation, const attribution::AttributionSnapshot& snapshot,
                    const device::DeviceSnapshot& devices, const std::string& proc_root = "/proc");

// NVML's per-process SM time (DeviceSnapshot::process_sm) by slot, pid and the
// account the agent names for the pid when it ran (process_owners.h; "" none:
// __unattributed__), for the busy split
// (process_sm_meter.h). Left out: MIG-enabled GPUs (no per-process samples),
// GPUs with an MPS client (the samples are the server's, not the tenants'),
// and GPU infrastructure (the MPS daemons: their own time is no tenant's).
std::vector<ledger::ProcessSmUse> process_sm_uses(const attribution::AttributionSnapshot& snapshot, const device::DeviceSnapshot& devices);
// The GPUs whose NVML samples were seen to split them between processes
// (GpuInfo::process_samples_split): Observation::nvml_splits_processes.
std::set<std::string> nvml_splits_processes(const device::DeviceSnapshot& devices);

// Everything together, for `now` (Unix seconds). allocation_known: whether a
// Kubernetes allocation source is configured (outside Kubernetes, the users
// of a GPU are its holders).
ledger::Observation make_observation(double now, const attribution::AttributionSnapshot& snapshot, const device::DeviceSnapshot& devices,
                             const std::vector<kubernetes::GpuAllocation>& allocations, bool allocation_known,
                             const ledger::PriceBook& prices);

}  // namespace gpuledger::node
