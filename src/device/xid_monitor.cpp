#include "device/xid_monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/log.h"
#include "identity/process_cgroup.h"
#include "identity/workload_classifier.h"

namespace gpuledger::device {

std::optional<identity::Workload> workload_of_process(const std::string& proc_root, uint32_t pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/cgroup");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The v2 line only (no v1 controller): what the agent's workloads are keyed by.
  auto path = identity::cgroup_path_in(text, "");
  if (!path) return std::nullopt;
  return identity::classify_cgroup_path(*path);
}

std::vector<identity::Workload> workloads_holding_gpu(const DeviceSnapshot& snapshot, const GpuInfo& gpu,
                                                      const std::string& proc_root) {
  std::vector<identity::Workload> out;
  if (gpu.uuid.empty()) return out;
  for (const auto& p : snapshot.processes) {
    if (p.gpu_uuid != gpu.uuid) continue;
    auto w = workload_of_process(proc_root, p.pid);
    if (w && std::none_of(out.begin(), out.end(), [&](const identity::Workload& have) { return have.id == w->id; }))
      out.push_back(std::move(*w));
  }
  return out;
}

XidMonitor::XidMonitor(XidMonitorOptions options) : options_(std::move(options)) {}

XidMonitor::~XidMonitor() { stop(); }

bool XidMonitor::start() {
  fd_ = ::open(options_.kmsg_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    spdlog::warn("xid: cannot read the kernel log {}: {}; Xid errors are not counted (gpuledger_xid_source_up 0)",
                 options_.kmsg_path, std::strerror(errno));
    return false;
  }
  // Only what is logged from now on: history would be counted again at every
  // agent restart.
  if (::lseek(fd_, 0, SEEK_END) < 0)
    spdlog::warn("xid: cannot seek to the end of {}: {}; old records will be counted", options_.kmsg_path,
                 std::strerror(errno));
  source_up_ = true;
  running_ = true;
  thread_ = std::thread([this] { run(); });
  spdlog::info("xid: counting NVRM Xid errors from {}", options_.kmsg_path);
  return true;
}

void XidMonitor::stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void XidMonitor::run() {
  std::string buf(8192, '\0');  // a record is at most ~1 KiB of text plus dictionary
  while (running_) {
    pollfd pfd{fd_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, 200);
    if (ready <= 0) continue;
    for (;;) {
      ssize_t n = ::read(fd_, buf.data(), buf.size());
      if (n > 0) {
        ingest_record(std::string_view(buf.data(), static_cast<size_t>(n)));
        continue;
      }
      if (n < 0 && errno == EPIPE) {  // overwritten before we read it: go on with the oldest left
        ++overruns_;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) {
        spdlog::warn("xid: reading {} failed: {}; stopped", options_.kmsg_path, std::strerror(errno));
        source_up_ = false;
        running_ = false;
      }
      break;
    }
  }
}

void XidMonitor::ingest_record(std::string_view record) {
  auto r = parse_kmsg_record(record);
  if (!r) return;
  if (options_.kernel_records_only && r->facility != 0) return;
  ingest_message(r->message);
}

void XidMonitor::ingest_message(std::string_view message) {
  if (auto ev = parse_xid_message(message)) count(*ev);
}

void XidMonitor::count(const XidEvent& ev) {
  GpuInfo gpu;
  gpu.pci_bus_id = ev.pci_bus_id;
  if (options_.gpu_inventory) {
    for (const auto& g : options_.gpu_inventory()) {
      // The log names domain:bus:device; inventories may carry any function.
      auto stem = [](const std::string& id) { return id.substr(0, id.rfind('.')); };
      if (stem(g.pci_bus_id) == stem(ev.pci_bus_id)) {
        gpu = g;
        break;
      }
    }
  }

  std::vector<identity::Workload> workloads;
  if (ev.pid) {
    auto w = options_.workload_of_pid ? options_.workload_of_pid(*ev.pid)
                                      : workload_of_process(options_.proc_root, *ev.pid);
    if (w) workloads.push_back(*w);
  }
  if (workloads.empty() && options_.workloads_on_gpu) workloads = options_.workloads_on_gpu(gpu);
  if (workloads.empty()) workloads.emplace_back();  // unknown: empty workload labels

  spdlog::warn("xid: GPU {} ({}) Xid {}{}: {}", gpu.uuid.empty() ? "?" : gpu.uuid, ev.pci_bus_id, ev.xid,
               ev.pid ? " pid " + std::to_string(*ev.pid) : std::string(), ev.message);
  std::lock_guard lock(mu_);
  for (const auto& w : workloads) {
    identity::WorkloadNames names =
        options_.namer && !w.id.empty() ? options_.namer->names_for(w) : identity::WorkloadNames{};
    metrics::Labels labels{{"gpu", gpu.index ? std::to_string(*gpu.index) : ""},
                            {"UUID", gpu.uuid},
                            {"pci_bus_id", gpu.pci_bus_id},
                            {"xid", std::to_string(ev.xid)},
                            {"workload", w.id},
                            {"namespace", names.namespace_name},
                            {"pod", names.pod},
                            {"container", names.container},
                            {"team", names.team}};
    ++counts_[labels];
  }
}

std::map<metrics::Labels, uint64_t> XidMonitor::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

void XidMonitor::write_metrics(metrics::ExpositionWriter& out) const {
  using metrics::MetricType;
  out.family("gpuledger_gpu_xid_errors_total", MetricType::kCounter,
             "Xid errors the NVIDIA driver logged since the agent started, per GPU, Xid and the workload on "
             "that GPU at the time (the process the driver named).");
  for (const auto& [labels, n] : counts()) out.sample(labels, n);
  out.family("gpuledger_xid_source_up", MetricType::kGauge, "1 while the kernel log is being read for Xid errors.");
  out.sample({{"source", "kmsg"}}, static_cast<uint64_t>(source_up_ ? 1 : 0));
  out.family("gpuledger_xid_kmsg_overruns_total", MetricType::kCounter,
             "Times kernel log records were overwritten before the agent read them (Xids may be missed).");
  out.sample({}, overruns_.load());
}

}  // namespace gpuledger::device
