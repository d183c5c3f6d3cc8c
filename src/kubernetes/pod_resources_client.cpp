#include "kubernetes/pod_resources_client.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "kubelet/podresources/v1/api.grpc.pb.h"
#include "kubernetes/socket_watch.h"

namespace gpuledger::kubernetes {
namespace {

ContainerDevices convert(const v1::ContainerDevices& d) {
  ContainerDevices out;
  out.resource_name = d.resource_name();
  out.device_ids.assign(d.device_ids().begin(), d.device_ids().end());
  return out;
}

bool is_socket(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

PodResourcesData query_pod_resources(const std::string& socket_path, std::chrono::milliseconds deadline) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(16 * 1024 * 1024);
  auto channel = grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
  auto stub = v1::PodResourcesLister::NewStub(channel);

  PodResourcesData data;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::ListPodResourcesRequest req;
    v1::ListPodResourcesResponse resp;
    auto status = stub->List(&ctx, req, &resp);
    if (!status.ok())
      throw Error("pod resources List on " + socket_path + ": " + std::to_string(status.error_code()) + " " +
                  status.error_message());
    for (const auto& p : resp.pod_resources()) {
      PodAllocation pod;
      pod.name = p.name();
      pod.namespace_name = p.namespace_();
      for (const auto& c : p.containers()) {
        ContainerAllocation ca;
        ca.name = c.name();
        for (const auto& d : c.devices()) ca.devices.push_back(convert(d));
        for (const auto& dr : c.dynamic_resources()) {
          for (const auto& cr : dr.claim_resources()) {
            ClaimDevice cd;
            cd.driver_name = cr.driver_name();
            cd.pool_name = cr.pool_name();
            cd.device_name = cr.device_name();
            for (const auto& cdi : cr.cdi_devices()) cd.cdi_devices.push_back(cdi.name());
            cd.claim_name = dr.claim_name();
            cd.claim_namespace = dr.claim_namespace();
            ca.dynamic.push_back(std::move(cd));
          }
        }
        pod.containers.push_back(std::move(ca));
      }
      data.pods.push_back(std::move(pod));
    }
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    v1::AllocatableResourcesRequest req;
    v1::AllocatableResourcesResponse resp;
    auto status = stub->GetAllocatableResources(&ctx, req, &resp);
    if (status.ok()) {
      data.allocatable_known = true;
      for (const auto& d : resp.devices()) data.allocatable.push_back(convert(d));
    } else {
      spdlog::debug("pod resources GetAllocatableResources: {} {}", static_cast<int>(status.error_code()),
                    status.error_message());
    }
  }
  return data;
}

PodResourcesMonitor::PodResourcesMonitor(std::string socket_path, AllocationOptions options,
                                         std::chrono::milliseconds interval)
    : socket_path_(std::move(socket_path)), options_(std::move(options)), interval_(interval) {}

PodResourcesMonitor::~PodResourcesMonitor() { stop(); }

void PodResourcesMonitor::set_sharing_facts(std::function<SharingFacts()> facts) {
  std::lock_guard lock(mu_);
  facts_ = std::move(facts);
}

void PodResourcesMonitor::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void PodResourcesMonitor::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PodResourcesMonitor::run() {
  SocketWatch watch(socket_path_);
  while (true) {
    poll_now();
    std::unique_lock lock(mu_);
    const auto until = std::chrono::steady_clock::now() +
                       (state_.up ? interval_ : std::min(interval_, kPodResourcesRetryWhileDown));
    // In slices, so that a socket created again (a kubelet restart) is read at once.
    while (std::chrono::steady_clock::now() < until) {
      const auto slice = std::min<std::chrono::steady_clock::duration>(until - std::chrono::steady_clock::now(),
                                                                        std::chrono::milliseconds(100));
      if (cv_.wait_for(lock, slice, [this] { return stopping_; })) return;
      if (watch.created()) break;
    }
  }
}

void PodResourcesMonitor::poll_now() {
  bool present = is_socket(socket_path_);
  PodResourcesData data;
  std::string error;
  if (!present) {
    error = "socket " + socket_path_ + " is absent (not a Kubernetes node, or the kubelet does not serve it)";
  } else {
    try {
      data = query_pod_resources(socket_path_, std::chrono::milliseconds(5000));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  size_t skipped = 0, skipped_inv = 0;
  std::vector<GpuAllocation> allocations, inventory;
  SharingStats sharing;
  if (error.empty()) {
    std::function<SharingFacts()> facts;
    {
      std::lock_guard lock(mu_);
      facts = facts_;
    }
    allocations = resolve_sharing(gpu_allocations(data.pods, options_, &skipped), data.pods,
                                  data.allocatable_known ? &data.allocatable : nullptr,
                                  facts ? facts() : SharingFacts{}, options_, &sharing);
    inventory = gpu_inventory(data.allocatable, options_, &skipped_inv);
    refusals_.observe(sharing.refused);
  }
  std::lock_guard lock(mu_);
  bool was_up = state_.up, first = !state_.ever_polled;
  state_.ever_polled = true;
  state_.socket_present = present;
  if (error.empty()) {
    state_.up = true;
    state_.allocations = std::move(allocations);
    state_.sharing = sharing;
    state_.refused_records = refusals_.totals();
    if (data.allocatable_known) state_.inventory = std::move(inventory);
    state_.skipped_ids = skipped + skipped_inv;
    state_.last_error.clear();
    state_.last_answer = state_.allocations;
    state_.last_answer_at = std::chrono::steady_clock::now();
    if (!was_up) spdlog::info("pod resources: {} answers ({} GPU allocations)", socket_path_, state_.allocations.size());
    if (state_.skipped_ids)
      spdlog::warn("pod resources: {} device ids could not be understood and were left out", state_.skipped_ids);
  } else {
    // Allocation unknown: no stale series are shown as if current.
    state_.up = false;
    state_.allocations.clear();
    state_.inventory.clear();
    if (present) ++state_.errors;
    if (was_up || first || state_.last_error != error)
      spdlog::warn("pod resources: {}; {}", error,
                   state_.last_answer_at ? "windows keep the last allocation read for " + std::to_string(keep_.count()) +
                                               " s, then are billed to __allocation_unknown__"
                                         : std::string("windows are billed to __allocation_unknown__ until it answers"));
    state_.last_error = error;
  }
  polls_.fetch_add(1);
}

PodResourcesState PodResourcesMonitor::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void PodResourcesMonitor::set_keep_last_answer(std::chrono::seconds keep) {
  std::lock_guard lock(mu_);
  keep_ = keep;
}

BillingAllocation PodResourcesMonitor::billing() const {
  std::lock_guard lock(mu_);
  return billing_allocation(state_, std::chrono::steady_clock::now(), keep_);
}

}  // namespace gpuledger::kubernetes
