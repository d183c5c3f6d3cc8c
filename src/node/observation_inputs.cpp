#include "node/observation_inputs.h"

#include <algorithm>
#include <set>

#include "identity/gpu_evidence.h"
#include "node/process_owners.h"
#include "node/snapshot_usage.h"

namespace gpuledger::node {

namespace {

std::string slot_uuid(const kubernetes::GpuAllocation& a) {
  if (a.device.sharing == kubernetes::Sharing::kMig && a.device.uuid.rfind("GPU-", 0) == 0 &&
      !a.device.mig_instance.empty())
    return a.device.uuid + "/" + a.device.mig_instance;
  return a.device.uuid;
}

std::string mig_profile_of(const std::string& resource) {
  auto pos = resource.find("mig-");
  return pos == std::string::npos ? "" : resource.substr(pos + 4);
}

}  // namespace

std::vector<ledger::GpuSlot> slots_from(const device::DeviceSnapshot& devices,
                                const std::vector<kubernetes::GpuAllocation>& allocations, const ledger::PriceBook& prices) {
  std::vector<ledger::GpuSlot> out;
  std::set<std::string> models;
  for (const auto& g : devices.gpus)
    if (!g.model.empty()) models.insert(g.model);
  const std::string only_model = models.size() == 1 ? *models.begin() : "";
  // MIG instances in the allocation.
  std::map<std::string, ledger::GpuSlot> mig;
  for (const auto& a : allocations) {
    if (a.device.sharing != kubernetes::Sharing::kMig || a.device.uuid.empty()) continue;
    std::string profile = mig_profile_of(a.resource);
    if (!ledger::mig_profile_slices(profile)) continue;
    ledger::GpuSlot s{slot_uuid(a), only_model, profile, a.device.uuid.rfind("GPU-", 0) == 0 ? a.device.uuid : ""};
    mig.emplace(s.uuid, s);
  }
  // A MIG device's parent: named in its id, else the node's only MIG-enabled GPU.
  std::vector<std::string> mig_parents;
  for (const auto& g : devices.gpus)
    if (g.mig_enabled.value_or(false) && !g.uuid.empty()) mig_parents.push_back(g.uuid);
  for (auto& [id, s] : mig)
    if (s.parent_uuid.empty() && mig_parents.size() == 1) s.parent_uuid = mig_parents[0];
  for (const auto& g : devices.gpus) {
    if (g.uuid.empty()) continue;
    if (g.mig_enabled.value_or(false)) {
      int used = 0;
      for (const auto& [id, s] : mig)
        if (s.parent_uuid == g.uuid) used += ledger::mig_profile_slices(*s.mig_profile).value_or(0);
      int free = mig_slices_for(prices, g.model) - used;
      if (free > 0) out.push_back({g.uuid, g.model, std::to_string(free) + "g.unallocated", g.uuid});
      continue;
    }
    out.push_back({g.uuid, g.model, std::nullopt, ""});
  }
  for (auto& [id, s] : mig) {
    if (const auto* parent = devices.gpu_by_uuid(s.parent_uuid)) s.model = parent->model;
    out.push_back(s);
  }
  return out;
}

std::vector<ledger::HolderEntry> holders_from(const std::vector<kubernetes::GpuAllocation>& allocations,
                                      const attribution::AttributionSnapshot& snapshot) {
  std::map<std::tuple<std::string, std::string, std::string>, const attribution::WorkloadView*> by_name;
  for (const auto& v : snapshot.workloads)
    if (!v.names.pod.empty()) by_name[{v.names.namespace_name, v.names.pod, v.names.container}] = &v;
  std::vector<ledger::HolderEntry> out;
  for (const auto& a : allocations) {
    if (a.device.uuid.empty()) continue;
    ledger::HolderEntry h;
    h.slot_uuid = slot_uuid(a);
    // The allocated share (1 whole; 1/N of replicas held / advertised; a
    // fraction; a shared claim's part). A container's replicas of one device
    // are one entry. A share the allocation could not tell is marked unknown
    // (its weight 1 only a placeholder: window_split.h bills it by usage).
    h.share_known = a.share_known && a.share > 0 && a.share <= 1;
    h.weight = h.share_known ? a.share : 1.0;
    auto it = by_name.find({a.namespace_name, a.pod, a.container});
    if (it != by_name.end()) {
      h.account = it->second->workload.id;
      h.labels = account_labels(it->second->names);
    } else {
      h.account = "k8s/" + a.namespace_name + "/" + a.pod + "/" + a.container;
      h.labels = {a.namespace_name, a.pod, a.container, "", "", ""};
    }
    out.push_back(std::move(h));
  }
  return out;
}

std::map<std::string, ledger::DeviceSample> device_samples(const device::DeviceSnapshot& devices) {
  using device::DeviceField;
  std::map<std::string, ledger::DeviceSample> out;
  for (const auto& g : devices.gpus) {
    ledger::DeviceSample s;
    for (auto source : {device::Source::kDcgm, device::Source::kNvml}) {
      const auto* r = devices.reading(g.uuid, source);
      if (!r) continue;
      auto fill = [&](std::optional<double>& to, DeviceField f) {
        if (!to && (*r)[f]) to = (*r)[f];
      };
      fill(s.busy_fraction, DeviceField::kUtilizationRatio);
      fill(s.efficiency.sm_active, DeviceField::kSmActiveRatio);
      fill(s.efficiency.sm_occupancy, DeviceField::kSmOccupancyRatio);
      fill(s.efficiency.tensor_active, DeviceField::kTensorActiveRatio);
      fill(s.efficiency.dram_active, DeviceField::kDramActiveRatio);
      if (!s.vram_capacity_bytes && (*r)[DeviceField::kMemoryUsedBytes] && (*r)[DeviceField::kMemoryFreeBytes])
        s.vram_capacity_bytes = *(*r)[DeviceField::kMemoryUsedBytes] + *(*r)[DeviceField::kMemoryFreeBytes];
      // Each source on its own, for the cross-checks (ledger/device_quality.h).
      using ledger::CheckedField;
      auto& all = source == device::Source::kDcgm ? s.checks.dcgm_all : s.checks.nvml_all;
      for (const auto& v : r->values) all.push_back(v ? *v : -1.0);
      if (std::none_of(r->values.begin(), r->values.end(), [](const auto& v) { return v.has_value(); })) all.clear();
      if (source == device::Source::kDcgm) {
        s.checks[CheckedField::kGrEngineActive] = (*r)[DeviceField::kGraphicsEngineActiveRatio];
        s.checks[CheckedField::kSmActive] = (*r)[DeviceField::kSmActiveRatio];
        s.checks[CheckedField::kSmOccupancy] = (*r)[DeviceField::kSmOccupancyRatio];
        s.checks[CheckedField::kTensorActive] = (*r)[DeviceField::kTensorActiveRatio];
        s.checks[CheckedField::kDramActive] = (*r)[DeviceField::kDramActiveRatio];
        s.checks[CheckedField::kDcgmUtilization] = (*r)[DeviceField::kUtilizationRatio];
      } else {
        s.checks[CheckedField::kNvmlUtilization] = (*r)[DeviceField::kUtilizationRatio];
      }
    }
    if (s.busy_fraction || s.vram_capacity_bytes || s.efficiency.sm_active || s.efficiency.sm_occupancy || s.efficiency.tensor_active ||
        s.efficiency.dram_active)
      out[g.uuid] = s;
  }
  return out;
}

std::map<std::string, ledger::EnergyReading> energy_readings(double now, const device::DeviceSnapshot& devices) {
  using device::DeviceField;
  std::map<std::string, ledger::EnergyReading> out;
  for (const auto& g : devices.gpus) {
    // A MIG-enabled GPU's slot under its own UUID is its free slices only: the
    // whole GPU's energy is not theirs, and the instances have no meter.
    if (g.mig_enabled.value_or(false)) continue;
    ledger::EnergyReading e;
    e.time = now;
    for (auto source : {device::Source::kDcgm, device::Source::kNvml}) {
      const auto* r = devices.reading(g.uuid, source);
      if (!r || !r->gpu_instance_id.empty()) continue;
      if (!e.counter_joules && (*r)[DeviceField::kEnergyJoules]) {
        e.counter_joules = (*r)[DeviceField::kEnergyJoules];
        e.counter_source = source == device::Source::kDcgm ? ledger::EnergySource::kDcgm : ledger::EnergySource::kNvml;
      }
      if (!e.power_watts && (*r)[DeviceField::kPowerWatts]) e.power_watts = (*r)[DeviceField::kPowerWatts];
    }
    if (e.counter_joules || e.power_watts) out[g.uuid] = e;
  }
  return out;
}

void add_nvml_memory(std::vector<ledger::WorkloadUsage>& workloads, const attribution::AttributionSnapshot& snapshot,
                     const device::DeviceSnapshot& devices) {
  std::map<uint32_t, std::string> account_of_pid;
  for (const auto& v : snapshot.workloads)
    for (const auto& p : v.processes) account_of_pid.emplace(p.pid, v.workload.id);
  std::map<std::string, ledger::WorkloadUsage*> by_account;
  for (auto& w : workloads) by_account[w.account] = &w;
  for (const auto& p : devices.processes) {
    if (!p.used_bytes || p.gpu_uuid.empty()) continue;
    auto a = account_of_pid.find(p.pid);
    if (a == account_of_pid.end()) continue;
    auto w = by_account.find(a->second);
    if (w != by_account.end()) w->second->nvml_used_bytes[p.gpu_uuid] += *p.used_bytes;
  }
}

bool add_device_use(ledger::Observation& observation, const attribution::AttributionSnapshot& snapshot,
                    const device::DeviceSnapshot& devices, const std::string& proc_root) {
  std::map<uint32_t, std::string> account_of_pid;
  std::map<std::string, std::vector<uint32_t>> pids_of;
  std::map<std::string, ledger::AccountLabels> labels;
  for (const auto& v : snapshot.workloads) {
    if (v.infrastructure) continue;
    labels[v.workload.id] = account_labels(v.names);
    for (const auto& p : v.processes) {
      account_of_pid.emplace(p.pid, v.workload.id);
      pids_of[v.workload.id].push_back(p.pid);
    }
  }
  for (const auto& w : observation.workloads) labels.emplace(w.account, w.labels);
  for (const auto& o : snapshot.other_processes)
    if (!o.infrastructure && o.until_us == 0 && !o.account.empty()) account_of_pid.emplace(o.pid, o.account);
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& p : devices.processes)
    if (auto a = account_of_pid.find(p.pid); a != account_of_pid.end() && !p.gpu_uuid.empty())
      seen[a->second].insert(p.gpu_uuid);
  if (!proc_root.empty()) {
    std::map<unsigned, std::string> uuid_of_minor;
    for (const auto& g : devices.gpus)
      if (g.minor && !g.uuid.empty()) uuid_of_minor[*g.minor] = g.uuid;
    if (!uuid_of_minor.empty())
      for (const auto& [account, pids] : pids_of)
        for (uint32_t pid : pids) {
          identity::FdScanCursor cursor;
          for (unsigned minor : identity::read_open_gpu_minors(proc_root, pid, cursor, 4096))
            if (auto u = uuid_of_minor.find(minor); u != uuid_of_minor.end()) seen[account].insert(u->second);
        }
  }
  for (auto& [account, gpus] : seen) {
    ledger::DeviceUse& use = observation.device_use[account];
    if (auto l = labels.find(account); l != labels.end()) use.labels = l->second;
    use.gpus.assign(gpus.begin(), gpus.end());
  }
  return devices.health.nvml_up;
}

std::vector<ledger::ProcessSmUse> process_sm_uses(const attribution::AttributionSnapshot& snapshot, const device::DeviceSnapshot& devices) {
  const ProcessOwners owners(snapshot);
  std::set<std::string> excluded;
  for (const auto& g : devices.gpus)
    if (g.mig_enabled.value_or(false)) excluded.insert(g.uuid);
  for (const auto& p : devices.processes)
    if (p.mps) excluded.insert(p.gpu_uuid);
  std::vector<ledger::ProcessSmUse> out;
  for (const auto& r : devices.process_sm) {
    if (r.gpu_uuid.empty() || excluded.contains(r.gpu_uuid)) continue;
    const auto owner = owners.of(r.pid, r.last_sample_us);
    if (owner && owner->infrastructure) continue;
    const device::GpuInfo* g = devices.gpu_by_uuid(r.gpu_uuid);
    out.push_back({r.gpu_uuid, r.pid, owner ? owner->account : "", r.sm_seconds_total,
                   g && g->index ? std::to_string(*g->index) : ""});
  }
  return out;
}

std::set<std::string> nvml_splits_processes(const device::DeviceSnapshot& devices) {
  std::set<std::string> out;
  for (const auto& g : devices.gpus)
    if (g.process_samples_split == true) out.insert(g.uuid);
  return out;
}

ledger::Observation make_observation(double now, const attribution::AttributionSnapshot& snapshot, const device::DeviceSnapshot& devices,
                             const std::vector<kubernetes::GpuAllocation>& allocations, bool allocation_known,
                             const ledger::PriceBook& prices) {
  ledger::Observation o;
  o.time = now;
  o.slots = slots_from(devices, allocations, prices);
  o.holders = holders_from(allocations, snapshot);
  o.workloads = workload_usages(snapshot);
  add_nvml_memory(o.workloads, snapshot, devices);
  o.process_sm = process_sm_uses(snapshot, devices);
  o.nvml_splits_processes = nvml_splits_processes(devices);
  o.device = device_samples(devices);
  o.energy = energy_readings(now, devices);
  o.allocation_known = allocation_known;
  o.device_use_known = add_device_use(o, snapshot, devices);
  o.hot_path_probed = snapshot.self.hot_path_probed();
  return o;
}

}  // namespace gpuledger::node
