#include "device/device_plane.h"

#include <unistd.h>

#include <algorithm>

#include "common/log.h"

namespace gpuledger::device {

namespace {

// A node with NVIDIA's user-space driver but no loaded kernel module (no GPU,
// or before the module loads) is worth a warning; a node without NVML is not.
void log_nvml_off(NvmlStatus status, const std::string& why, std::chrono::milliseconds retry) {
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(retry).count();
  if (status == NvmlStatus::kLibraryAbsent)
    spdlog::info("NVML plane off: {} (gpuledger_nvml_up 0; retrying every {} s)", why, seconds);
  else
    spdlog::warn("NVML plane off: {} (gpuledger_nvml_up 0, gpuledger_nvml_state{{state=\"{}\"}} 1; retrying every {} s)",
                 why, nvml_status_name(status), seconds);
}

}  // namespace

DevicePlane::DevicePlane(DevicePlaneOptions options) : options_(std::move(options)) {
  if (options_.hostname.empty()) {
    char buf[256] = {};
    if (::gethostname(buf, sizeof(buf) - 1) == 0) options_.hostname = buf;
  }
  if (!options_.dcgm_exporter_url.empty())
    scraper_ = std::make_unique<DcgmScraper>(options_.dcgm_exporter_url, options_.scrape);
  snapshot_.health.dcgm_configured = scraper_ != nullptr;
}

DevicePlane::~DevicePlane() { stop(); }

void DevicePlane::start() {
  {
    std::lock_guard lock(mu_);
    proc_gpus_ = read_proc_inventory(options_.nvidia_proc_root);
    rebuild_locked();
  }
  poll_nvml();
  poll_dcgm();
  thread_ = std::thread([this] { run(); });
}

void DevicePlane::stop() {
  {
    std::lock_guard lock(run_mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DevicePlane::run() {
  auto now = std::chrono::steady_clock::now();
  auto next_nvml = now + options_.nvml_interval;
  auto next_dcgm = now + options_.dcgm_interval;
  auto next_procfs = now + std::chrono::seconds(60);
  std::unique_lock lock(run_mu_);
  while (!stopping_) {
    auto wake = scraper_ ? std::min(next_nvml, next_dcgm) : next_nvml;
    wake = std::min(wake, next_procfs);
    cv_.wait_until(lock, wake, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    now = std::chrono::steady_clock::now();
    if (now >= next_nvml) {
      poll_nvml();
      next_nvml = now + options_.nvml_interval;
    }
    if (scraper_ && now >= next_dcgm) {
      poll_dcgm();
      next_dcgm = now + options_.dcgm_interval;
    }
    if (now >= next_procfs) {  // GPUs come and go rarely (hot-plug, driver reload)
      auto gpus = read_proc_inventory(options_.nvidia_proc_root);
      std::lock_guard g(mu_);
      proc_gpus_ = std::move(gpus);
      rebuild_locked();
      next_procfs = now + std::chrono::seconds(60);
    }
    lock.lock();
  }
}

void DevicePlane::poll_nvml() {
  if (!options_.nvml) {
    std::lock_guard lock(mu_);
    snapshot_.health.nvml_status = NvmlStatus::kDisabled;
    snapshot_.health.nvml_error = "disabled (--no-nvml)";
    return;
  }
  std::string error;
  NvmlStatus status = NvmlStatus::kUp;
  auto now = std::chrono::steady_clock::now();
  if (!nvml_ && now >= nvml_next_retry_) {
    try {
      nvml_ = NvmlClient::open(options_.nvml_library);
      spdlog::info("NVML loaded from {}{}", options_.nvml_library, nvml_->is_simulator() ? " (gpuledger NVML simulator)" : "");
    } catch (const NvmlOpenError& e) {
      error = e.what();
      status = e.status();
      nvml_next_retry_ = now + options_.nvml_retry_interval;
      std::lock_guard lock(mu_);
      if (snapshot_.health.nvml_error != error) log_nvml_off(status, error, options_.nvml_retry_interval);
    }
  }
  NvmlPoll poll;
  if (nvml_) {
    poll = nvml_->poll(options_.hostname);
    for (const auto& e : poll.errors) spdlog::debug("NVML: {}", e);
  }
  std::lock_guard lock(mu_);
  snapshot_.health.nvml_up = nvml_ != nullptr;
  snapshot_.health.nvml_simulator = nvml_ && nvml_->is_simulator();
  if (nvml_) {
    snapshot_.health.nvml_status = NvmlStatus::kUp;
    snapshot_.health.nvml_error.clear();
  } else if (!error.empty()) {
    snapshot_.health.nvml_status = status;
    snapshot_.health.nvml_error = error;
  }
  nvml_poll_ = std::move(poll);
  rebuild_locked();
}

void DevicePlane::poll_dcgm() {
  if (!scraper_) return;
  ScrapeResult result = scraper_->scrape();
  std::lock_guard lock(mu_);
  auto& h = snapshot_.health;
  if (result.ok) {
    if (!h.dcgm_up) spdlog::info("dcgm-exporter {} reachable ({} DCGM samples)", scraper_->url(), result.dcgm_samples);
    h.dcgm_up = true;
    h.dcgm_error.clear();
    h.dcgm_last_success = std::chrono::system_clock::now();
    dcgm_ = std::move(result.extraction);
    dcgm_fresh_at_ = std::chrono::steady_clock::now();
  } else {
    if (h.dcgm_up || h.dcgm_error != result.error) spdlog::warn("dcgm-exporter scrape failed: {}", result.error);
    h.dcgm_up = false;
    h.dcgm_error = result.error;
    ++h.dcgm_scrape_errors;
    // Keep the last good readings only while they are fresh enough.
    if (std::chrono::steady_clock::now() - dcgm_fresh_at_ > options_.dcgm_stale_after) dcgm_ = DcgmExtraction{};
  }
  rebuild_locked();
}

void DevicePlane::rebuild_locked() {
  DeviceSnapshot s;
  s.health = snapshot_.health;
  // NVML knows most (index, MIG mode), then procfs, then exporter labels.
  merge_inventory(s.gpus, nvml_poll_.gpus);
  merge_inventory(s.gpus, proc_gpus_);
  merge_inventory(s.gpus, dcgm_.gpus);
  s.readings = dcgm_.readings;
  s.readings.insert(s.readings.end(), nvml_poll_.readings.begin(), nvml_poll_.readings.end());
  s.processes = nvml_poll_.processes;
  s.process_sm = nvml_poll_.process_sm;
  std::sort(s.processes.begin(), s.processes.end(), [](const ProcessReading& a, const ProcessReading& b) {
    return std::tie(a.gpu_uuid, a.pid) < std::tie(b.gpu_uuid, b.pid);
  });
  // Fill labels a source lacks (e.g. NVML readings' index, DCGM's model) from the inventory.
  // `Hostname` is this node's name for every source: dcgm-exporter's own is its pod's name.
  for (auto& r : s.readings) {
    r.hostname = options_.hostname;
    const GpuInfo* g = s.gpu_by_uuid(r.uuid);
    if (!g) continue;
    if (!r.gpu_index) r.gpu_index = g->index;
    if (r.model.empty()) r.model = g->model;
  }
  snapshot_ = std::move(s);
}

DeviceSnapshot DevicePlane::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

void DevicePlane::write_metrics(metrics::ExpositionWriter& out) const { write_device_metrics(snapshot(), out); }

namespace {
std::string index_label(const std::optional<unsigned>& i) { return i ? std::to_string(*i) : std::string(); }

// One series per GPU (or MIG instance) and field, so that a plain sum() counts
// each GPU once: DCGM's reading where it has the field, else NVML's. The
// `source` label says which one it is.
bool preferred_source(const DeviceSnapshot& s, const DeviceReading& r, DeviceField field) {
  if (r.source == Source::kDcgm) return true;
  return std::none_of(s.readings.begin(), s.readings.end(), [&](const DeviceReading& other) {
    // A GPU-wide NVML reading gives way to DCGM's per-instance ones on a MIG GPU too.
    return other.source == Source::kDcgm && other.uuid == r.uuid &&
           (other.gpu_instance_id == r.gpu_instance_id || r.gpu_instance_id.empty()) && other[field].has_value();
  });
}
}  // namespace

void write_device_metrics(const DeviceSnapshot& s, metrics::ExpositionWriter& out) {
  using metrics::Labels;
  using metrics::MetricType;
  out.family("gpuledger_gpu_info", MetricType::kGauge,
             "GPUs on this node (from /proc/driver/nvidia, NVML and dcgm-exporter labels); always 1.");
  for (const auto& g : s.gpus) {
    out.sample(Labels{{"gpu", index_label(g.index)},
                      {"UUID", g.uuid},
                      {"modelName", g.model},
                      {"pci_bus_id", g.pci_bus_id},
                      {"minor", index_label(g.minor)},
                      {"mig_mode", !g.mig_enabled ? "unknown" : (*g.mig_enabled ? "enabled" : "disabled")}},
               1.0);
  }
  for (const auto& info : device_fields()) {
    bool any = std::any_of(s.readings.begin(), s.readings.end(), [&](const DeviceReading& r) { return r[info.field].has_value(); });
    if (!any) continue;
    out.family(info.metric, info.counter ? MetricType::kCounter : MetricType::kGauge, info.help);
    for (const auto& r : s.readings) {
      const auto& v = r[info.field];
      if (!v || !preferred_source(s, r, info.field)) continue;
      Labels labels{{"gpu", index_label(r.gpu_index)},
                    {"UUID", r.uuid},
                    {"modelName", r.model},
                    {"Hostname", r.hostname},
                    {"source", std::string(source_name(r.source))}};
      if (!r.gpu_instance_id.empty()) {
        labels.emplace_back("GPU_I_ID", r.gpu_instance_id);
        labels.emplace_back("GPU_I_PROFILE", r.gpu_instance_profile);
      }
      out.sample(labels, *v);
    }
  }
  auto process_labels = [&](const ProcessReading& p) {
    const GpuInfo* g = s.gpu_by_uuid(p.gpu_uuid);
    Labels labels{{"pid", std::to_string(p.pid)}, {"gpu", g ? index_label(g->index) : ""}, {"UUID", p.gpu_uuid}};
    if (p.gpu_instance_id) labels.emplace_back("GPU_I_ID", std::to_string(*p.gpu_instance_id));
    return labels;
  };
  if (std::any_of(s.processes.begin(), s.processes.end(), [](const auto& p) { return p.used_bytes.has_value(); })) {
    out.family("gpuledger_gpu_process_memory_used_bytes", MetricType::kGauge,
               "Device memory a host process holds on a GPU (NVML compute and MPS process lists).");
    for (const auto& p : s.processes)
      if (p.used_bytes) out.sample(process_labels(p), static_cast<double>(*p.used_bytes));
  }
  if (std::any_of(s.processes.begin(), s.processes.end(), [](const auto& p) { return p.sm_util_ratio.has_value(); })) {
    out.family("gpuledger_gpu_process_sm_utilization_ratio", MetricType::kGauge,
               "SM utilisation of a host process on a GPU, mean of NVML's samples since the last poll.");
    for (const auto& p : s.processes)
      if (p.sm_util_ratio) out.sample(process_labels(p), *p.sm_util_ratio);
  }
  out.family("gpuledger_nvml_up", MetricType::kGauge, "1 when NVML is loaded and initialised.");
  out.sample(Labels{}, s.health.nvml_up ? 1.0 : 0.0);
  out.family("gpuledger_nvml_state", MetricType::kGauge,
             "Where NVML stands, one series per state, 1 for the current one: up, disabled, library_absent, "
             "library_incomplete, driver_not_loaded (NVML present, NVIDIA kernel driver not loaded), init_failed.");
  for (NvmlStatus state : kNvmlStatuses)
    out.sample(Labels{{"state", std::string(nvml_status_name(state))}}, state == s.health.nvml_status ? 1.0 : 0.0);
  out.family("gpuledger_nvml_simulator", MetricType::kGauge,
             "1 when the loaded NVML is gpuledger's simulator (sim/nvml), not NVIDIA's.");
  out.sample(Labels{}, s.health.nvml_simulator ? 1.0 : 0.0);
  if (s.health.dcgm_configured) {
    out.family("gpuledger_dcgm_exporter_up", MetricType::kGauge, "1 when the last dcgm-exporter scrape succeeded.");
    out.sample(Labels{}, s.health.dcgm_up ? 1.0 : 0.0);
    out.family("gpuledger_dcgm_exporter_scrape_errors_total", MetricType::kCounter,
               "Failed dcgm-exporter scrapes (unreachable, timeout, HTTP error).");
    out.sample(Labels{}, s.health.dcgm_scrape_errors);
  }
}

std::vector<identity::GpuIdentity> gpu_identities(const DeviceSnapshot& snapshot) {
  std::vector<identity::GpuIdentity> out;
  for (const auto& g : snapshot.gpus) out.push_back({g.index, g.uuid, g.minor});
  return out;
}

std::map<uint32_t, std::set<std::string>> gpu_processes(const DeviceSnapshot& snapshot) {
  std::map<uint32_t, std::set<std::string>> out;
  for (const auto& p : snapshot.processes)
    if (p.pid != 0 && !p.gpu_uuid.empty()) out[p.pid].insert(p.gpu_uuid);
  return out;
}

}  // namespace gpuledger::device
