#include "attribution/workloads_json.h"

#include <array>

#include "identity/workload.h"

namespace gpuledger::attribution {
namespace {

nlohmann::json by_direction(const uint64_t (&values)[GL_DIR_COUNT]) {
  return {{"htod", values[GL_DIR_HTOD]},
          {"dtoh", values[GL_DIR_DTOH]},
          {"dtod", values[GL_DIR_DTOD]},
          {"peer", values[GL_DIR_PEER]},
          {"unknown", values[GL_DIR_UNKNOWN]}};
}

nlohmann::json identity_json(const identity::Workload& w, const identity::WorkloadNames& names) {
  return {{"kind", std::string(identity::to_string(w.kind))},
          {"pod_uid", w.pod_uid},
          {"container_id", w.container_id},
          {"container_runtime", w.container_runtime},
          {"qos_class", w.qos_class},
          {"systemd_unit", w.systemd_unit},
          {"slurm_job", w.slurm_job},
          {"slurm_step", w.slurm_step},
          {"namespace", names.namespace_name},
          {"pod", names.pod},
          {"container", names.container},
          {"team", names.team}};
}

// The counters only hot-path probes feed (probes/probe_sets.h).
constexpr std::array<const char*, 10> kHotPathCounters = {
    "kernel_launches", "busy_seconds_estimate", "launched_threads", "graph_launches", "memcpy_bytes",
    "memcpy_calls",    "memsets",               "memset_bytes",     "syncs",          "sync_seconds"};

// Without hot_path (the billing probe set) the counters it did not probe are
// left out, not 0: probe_set.not_probed names them.
nlohmann::json counters_json(const probes::Usage& u, bool hot_path) {
  const auto& c = u.counters;
  nlohmann::json j = {{"kernel_launches", c.launches},
                      {"busy_seconds_estimate", c.busy_ns / 1e9},
                      {"launched_threads", c.launched_threads},
                      {"graph_launches", c.graph_launches},
                      {"memory_allocations", c.allocations},
                      {"memory_allocated_bytes", c.allocated_bytes},
                      {"memory_freed_bytes", c.freed_bytes},
                      {"memory_live_bytes", u.live_bytes()},
                      {"memory_untracked_frees", c.untracked_frees},
                      {"memcpy_bytes", by_direction(c.memcpy_bytes)},
                      {"memcpy_calls", by_direction(c.memcpy_calls)},
                      {"memsets", c.memsets},
                      {"memset_bytes", c.memset_bytes},
                      {"syncs", c.syncs},
                      {"sync_seconds", c.sync_ns / 1e9},
                      {"api_errors", u.errors_by_call},
                      {"export_table_requests", u.export_tables}};
  if (!hot_path)
    for (const char* key : kHotPathCounters) j.erase(key);
  return j;
}

nlohmann::json probe_set_json(const SelfView& self) {
  nlohmann::json not_probed = nlohmann::json::array();
  if (!self.hot_path_probed())
    for (const char* key : kHotPathCounters) not_probed.push_back(key);
  nlohmann::json j = {{"set", std::string(probes::probe_set_name(self.probe_set))},
                      {"reason", self.probe_set_reason},
                      {"not_probed", not_probed}};
  if (!self.hot_path_probed()) j["not_probed_means"] = std::string(probes::kNotProbedByBilling);
  return j;
}

// Per GPU; "gpu" and "UUID" are null when the agent cannot tell for sure.
nlohmann::json by_gpu_json(const attribution::WorkloadView& w, bool hot_path) {
  nlohmann::json out = nlohmann::json::array();
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); };
  for (const auto& g : w.by_gpu)
    out.push_back({{"gpu", or_null(g.gpu)},
                   {"UUID", or_null(g.uuid)},
                   {"gpu_source", or_null(g.gpu_source)},
                   {"counters", counters_json(g.usage, hot_path)}});
  return out;
}

nlohmann::json library_json(const probes::LibraryRecord& lib) {
  nlohmann::json j = {{"path", lib.path}, {"origin", lib.origin}, {"device", lib.file.dev}, {"inode", lib.file.ino},
                      {"probes", lib.probes}, {"probe_failures", lib.probe_failures}};
  if (!lib.error.empty()) j["error"] = lib.error;
  return j;
}

}  // namespace

nlohmann::json workloads_json(const attribution::AttributionSnapshot& snap) {
  nlohmann::json workloads = nlohmann::json::array();
  for (const auto& w : snap.workloads) {
    nlohmann::json processes = nlohmann::json::array();
    for (const auto& p : w.processes)
      // PIDs (to match nvidia-smi and NVML per-process rows) and live bytes only: no
      // process names, command lines or environment reach an HTTP client.
      processes.push_back({{"pid", p.pid}, {"live_bytes", p.live_bytes}});
    workloads.push_back({{"workload", w.workload.id},
                         {"identity", identity_json(w.workload, w.names)},
                         // GPU infrastructure (the MPS server) is shown, apart, never billed.
                         {"role", w.infrastructure ? "infrastructure" : "tenant"},
                         {"cgroup_paths", w.cgroup_paths},
                         {"processes", processes},
                         {"counters", counters_json(w.usage, snap.self.hot_path_probed())},
                         {"by_gpu", by_gpu_json(w, snap.self.hot_path_probed())}});
  }
  nlohmann::json libraries = nlohmann::json::array(), rejected = nlohmann::json::array();
  for (const auto& lib : snap.self.libraries) libraries.push_back(library_json(lib));
  for (const auto& lib : snap.self.rejected_libraries) rejected.push_back(library_json(lib));
  nlohmann::json runtimes = nlohmann::json::array();
  for (const auto& lib : snap.self.runtime_libraries) runtimes.push_back(library_json(lib));
  return {{"workloads", workloads},
          {"libraries", libraries},
          {"rejected_libraries", rejected},
          {"runtime_libraries", runtimes},
          {"probes_attached", snap.self.probes_attached},
          {"probe_set", probe_set_json(snap.self)}};
}

}  // namespace gpuledger::attribution
