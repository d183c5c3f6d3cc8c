#pragma once
// Counts Xid errors per GPU and per workload on that GPU at the time:
// gpuledger_gpu_xid_errors_total{gpu,UUID,pci_bus_id,xid,workload,namespace,pod,container,team}.
//
// Source: the kernel log, read from /dev/kmsg. The monitor seeks to the end
// when it starts (lseek SEEK_END), so errors logged before the agent started
// are not counted again on every restart: the counter covers the agent's
// lifetime, as every other counter does. When the kernel overwrites records
// faster than they are read, read() fails with EPIPE; the monitor counts that
// (gpuledger_xid_kmsg_overruns_total) and goes on from the oldest record left.
// Only records of the kernel facility count by default (userspace can write
// to /dev/kmsg but cannot forge facility 0).
//
// The workload is the process the driver names (pid=...): its cgroup v2 path
// (/proc/<pid>/cgroup, the "0::" line) classified as everywhere else. When the
// driver names no process (or it is gone), `workloads_on_gpu` is asked for
// the workloads active on that GPU - an extension point the agent can fill
// from its attribution snapshot; unset, the error is counted with an empty
// workload.
//
// Not done yet: the nvidia:nvidia_dev_xid tracepoint (drivers from 575) as a
// source; the kernel log carries the same events.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/device_snapshot.h"
#include "device/xid_parser.h"
#include "identity/workload.h"
#include "identity/workload_names.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::device {

struct XidMonitorOptions {
  std::string kmsg_path = "/dev/kmsg";
  std::string proc_root = "/proc";
  bool kernel_records_only = true;  // tests turn this off to count lines they write
  // The node's GPUs (the device plane's snapshot().gpus); unset: GPUs are
  // known only by their PCI bus id.
  std::function<std::vector<GpuInfo>()> gpu_inventory;
  // The workload of a host pid; unset: /proc/<pid>/cgroup classified.
  std::function<std::optional<identity::Workload>(uint32_t pid)> workload_of_pid;
  // Extension point: the workloads using a GPU now, for Xids without a pid.
  std::function<std::vector<identity::Workload>(const GpuInfo& gpu)> workloads_on_gpu;
  std::shared_ptr<const identity::WorkloadNamer> namer;
};

// The workload of a process from its /proc/<pid>/cgroup (the v2 "0::" line).
std::optional<identity::Workload> workload_of_process(const std::string& proc_root, uint32_t pid);

// The workloads of the processes NVML saw holding `gpu` (by UUID) in a
// device snapshot, each once: one answer to XidMonitorOptions::workloads_on_gpu.
std::vector<identity::Workload> workloads_holding_gpu(const DeviceSnapshot& snapshot, const GpuInfo& gpu,
                                                      const std::string& proc_root = "/proc");

class XidMonitor : public metrics::MetricsContributor {
 public:
  explicit XidMonitor(XidMonitorOptions options);
  ~XidMonitor() override;
  XidMonitor(const XidMonitor&) = delete;
  XidMonitor& operator=(const XidMonitor&) = delete;

  // Opens the kernel log at its end and reads it in the background. Returns
  // false (logged, gpuledger_xid_source_up 0) when it cannot be opened.
  bool start();
  void stop();

  // One /dev/kmsg record / one log message (what the reader does; tests).
  void ingest_record(std::string_view record);
  void ingest_message(std::string_view message);

  // Counts so far, keyed by their exported labels.
  std::map<metrics::Labels, uint64_t> counts() const;
  uint64_t overruns() const { return overruns_; }

  void write_metrics(metrics::ExpositionWriter& out) const override;

 private:
  void run();
  void count(const XidEvent& ev);

  XidMonitorOptions options_;
  int fd_ = -1;
  std::atomic<bool> running_{false};
  std::atomic<bool> source_up_{false};
  std::atomic<uint64_t> overruns_{0};
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<metrics::Labels, uint64_t> counts_;
};

}  // namespace gpuledger::device
