#pragma once
// The device plane: GPU inventory (procfs + NVML + dcgm-exporter labels),
// NVML device and per-process readings, and DCGM profiling readings scraped
// from dcgm-exporter, polled in the background and served two ways:
//   - snapshot(): a DeviceSnapshot for the agent to join on (host pid, GPU UUID);
//   - write_metrics(): the gpuledger_gpu_* families on /metrics.
// Every source is optional: with no NVIDIA software, no exporter, the plane
// runs and exports only its self-metrics (gpuledger_nvml_up 0).
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "device/dcgm_scraper.h"
#include "device/device_snapshot.h"
#include "device/nvml_client.h"
#include "device/proc_inventory.h"
#include "identity/gpu_visibility.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::device {

struct DevicePlaneOptions {
  std::string nvidia_proc_root = std::string(kDefaultNvidiaProcRoot);
  bool nvml = true;
  std::string nvml_library = kDefaultNvmlLibrary;
  std::chrono::milliseconds nvml_interval{5000};
  std::chrono::milliseconds nvml_retry_interval{60000};  // re-try dlopen/nvmlInit while NVML is down
  std::string dcgm_exporter_url;  // empty: no DCGM
  std::chrono::milliseconds dcgm_interval{15000};
  ScrapeOptions scrape;
  // DCGM readings older than this (no successful scrape since) are dropped.
  std::chrono::milliseconds dcgm_stale_after{std::chrono::seconds(60)};
  std::string hostname;  // for NVML readings; default gethostname()
};

// The inventory's GPUs as the attribution plane names them (index, UUID, minor).
std::vector<identity::GpuIdentity> gpu_identities(const DeviceSnapshot& snapshot);
// Host pid -> the GPUs NVML's compute and MPS process lists show it on.
std::map<uint32_t, std::set<std::string>> gpu_processes(const DeviceSnapshot& snapshot);

class DevicePlane : public metrics::MetricsContributor {
 public:
  explicit DevicePlane(DevicePlaneOptions options);  // throws Error on a bad exporter URL
  ~DevicePlane() override;
  DevicePlane(const DevicePlane&) = delete;
  DevicePlane& operator=(const DevicePlane&) = delete;

  void start();  // first poll synchronously, then a background thread
  void stop();
  // One round of every source now (tests; start() calls it too).
  void poll_nvml();
  void poll_dcgm();

  DeviceSnapshot snapshot() const;
  void write_metrics(metrics::ExpositionWriter& out) const override;

 private:
  void rebuild_locked();
  void run();

  DevicePlaneOptions options_;
  std::unique_ptr<DcgmScraper> scraper_;
  std::unique_ptr<NvmlClient> nvml_;
  std::chrono::steady_clock::time_point nvml_next_retry_{};

  mutable std::mutex mu_;
  std::vector<GpuInfo> proc_gpus_;
  NvmlPoll nvml_poll_;
  DcgmExtraction dcgm_;
  std::chrono::steady_clock::time_point dcgm_fresh_at_{};
  DeviceSnapshot snapshot_;

  std::mutex run_mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// Renders a snapshot as exposition families (what write_metrics writes).
void write_device_metrics(const DeviceSnapshot& snapshot, metrics::ExpositionWriter& out);

}  // namespace gpuledger::device
