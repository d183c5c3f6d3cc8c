#include "kubernetes/kubernetes_metrics.h"

namespace gpuledger::kubernetes {

using metrics::Labels;
using metrics::MetricType;

KubernetesMetrics::KubernetesMetrics(std::shared_ptr<PodDirectory> directory, config::TeamRule rule,
                                     const KubernetesMetadata* metadata, const PodResourcesMonitor* pod_resources)
    : directory_(std::move(directory)), rule_(std::move(rule)), metadata_(metadata), pod_resources_(pod_resources) {}

void KubernetesMetrics::write_metrics(metrics::ExpositionWriter& out) const {
  if (directory_) directory_->expire();

  if (metadata_) {
    std::vector<std::pair<std::string, ReflectorStats>> stats = {{"pods", metadata_->pod_stats()}};
    if (auto ns = metadata_->namespace_stats()) stats.emplace_back("namespaces", *ns);
    for (auto& s : metadata_->sharing_stats()) stats.push_back(std::move(s));
    out.family("gpuledger_kubernetes_api_up", MetricType::kGauge,
               "1 when the last request to the Kubernetes API server for this resource succeeded.");
    for (const auto& [r, s] : stats) out.sample({{"resource", r}}, uint64_t{s.up ? 1u : 0u});
    out.family("gpuledger_kubernetes_synced", MetricType::kGauge,
               "1 once the resource has been listed from the API server at least once.");
    for (const auto& [r, s] : stats) out.sample({{"resource", r}}, uint64_t{s.synced ? 1u : 0u});
    out.family("gpuledger_kubernetes_watch_restarts_total", MetricType::kCounter,
               "Watches started again after one ended (timeout, dropped connection, 410 Gone).");
    for (const auto& [r, s] : stats) out.sample({{"resource", r}}, s.watch_restarts);
    out.family("gpuledger_kubernetes_lists_total", MetricType::kCounter, "Completed full lists of the resource.");
    for (const auto& [r, s] : stats) out.sample({{"resource", r}}, s.lists);
    out.family("gpuledger_kubernetes_relists_gone_total", MetricType::kCounter,
               "Lists forced by the API server answering 410 Gone to a watch.");
    for (const auto& [r, s] : stats) out.sample({{"resource", r}}, s.relists_gone);
    out.family("gpuledger_kubernetes_api_errors_total", MetricType::kCounter,
               "Requests to the Kubernetes API server that failed.");
    for (const auto& [r, s] : stats) out.sample({{"resource", r}}, s.errors);
    out.family("gpuledger_kubernetes_malformed_total", MetricType::kCounter,
               "Watch events, lists or objects from the API server that could not be understood and were skipped.");
    for (const auto& [r, s] : stats)
      out.sample({{"resource", r}}, s.malformed + (r == "pods" ? metadata_->malformed_pods() : 0));
  }
  if (directory_ && metadata_) {
    auto total = directory_->pods(), deleted = directory_->deleted_pods();
    out.family("gpuledger_kubernetes_pods", MetricType::kGauge,
               "Pods of this node the agent knows, by state (deleted ones keep their names for a grace period).");
    out.sample({{"state", "live"}}, static_cast<uint64_t>(total - deleted));
    out.sample({{"state", "deleted"}}, static_cast<uint64_t>(deleted));
    // The contract names the family gpuledger_team_label_conflicts: a
    // gauge (pods now), with the conventional _total counter beside it.
    auto conflicts = directory_->team_label_conflicts(rule_);
    out.family("gpuledger_team_label_conflicts", MetricType::kGauge,
               "Live pods of this node whose own team label names another team than their namespace's team label "
               "(the namespace's wins unless team.pod_label_overrides is set).");
    out.sample({}, static_cast<uint64_t>(conflicts));
    out.family("gpuledger_team_label_conflicts_total", MetricType::kCounter,
               "Pods seen with a team label that disagrees with their namespace's, once per pod, since the agent "
               "started (each is logged once).");
    out.sample({}, directory_->team_label_conflicts_seen());
  }

  if (pod_resources_) {
    auto st = pod_resources_->state();
    out.family("gpuledger_pod_resources_up", MetricType::kGauge,
               "1 when the kubelet Pod Resources API answered the last poll; 0 means GPU allocation is unknown.");
    out.sample({}, uint64_t{st.up ? 1u : 0u});
    out.family("gpuledger_pod_resources_socket_present", MetricType::kGauge,
               "1 when the kubelet Pod Resources socket exists (0: not a Kubernetes node, or the kubelet is down).");
    out.sample({}, uint64_t{st.socket_present ? 1u : 0u});
    out.family("gpuledger_pod_resources_errors_total", MetricType::kCounter,
               "Polls of the kubelet Pod Resources API that failed although the socket exists.");
    out.sample({}, st.errors);
    out.family("gpuledger_pod_resources_invalid_device_ids", MetricType::kGauge,
               "Device ids in the last Pod Resources answer that could not be understood and were left out.");
    out.sample({}, st.skipped_ids);
    using Basis = BillingAllocation::Basis;
    const Basis basis = pod_resources_->billing().basis;
    out.family("gpuledger_gpu_allocation_basis", MetricType::kGauge,
               "What the GPUs' windows are billed by now (1 for one basis): the kubelet's answer (kubelet), its last "
               "answer while it does not answer (last_answer), or nothing (unknown: __allocation_unknown__ holds "
               "the GPUs).");
    for (Basis b : {Basis::kAnswer, Basis::kLastAnswer, Basis::kUnknown})
      out.sample({{"basis", std::string(to_string(b))}}, uint64_t{basis == b ? 1u : 0u});

    out.family("gpuledger_gpu_sharing_untrusted_records", MetricType::kGauge,
               "HAMi or KAI scheduler records (pod annotations) in the last poll that were malformed or did not "
               "match what the kubelet handed out, and were not trusted.");
    out.sample({}, st.sharing.refused_annotations);
    out.family("gpuledger_gpu_sharing_refused_records_total", MetricType::kCounter,
               "HAMi or KAI fraction records refused (malformed, not the scheduler's, rewritten after scheduling, "
               "below the pod's requests, or naming a device the kubelet did not give), once each while refused; the "
               "holder is billed the whole device. docs/security.md.");
    for (const auto& [key, n] : st.refused_records) out.sample({{"scheduler", key.first}, {"reason", key.second}}, n);
    out.family("gpuledger_gpu_allocation_unknown_shares", MetricType::kGauge,
               "GPU allocations in the last poll whose share of the device could not be established.");
    out.sample({}, st.sharing.unknown_shares);

    out.family("gpuledger_gpu_allocation_info", MetricType::kGauge,
               "A GPU (or MIG instance, or part of a shared GPU) allocated to a container: one series per "
               "container and device, however many replica slots it holds (device_id lists them). mode says how "
               "the device is shared (docs/kubernetes-sharing.md).");
    for (const auto& a : st.allocations) {
      std::string team;
      if (directory_) {
        if (auto pod = directory_->find_by_name(a.namespace_name, a.pod)) {
          team = directory_->team(rule_, *pod);
        } else {
          auto ns = directory_->namespace_labels(a.namespace_name);
          team = team_for(rule_, {}, a.namespace_name, ns ? &*ns : nullptr);
        }
      } else {
        team = a.namespace_name;
      }
      out.sample(Labels{{"namespace", a.namespace_name},
                        {"pod", a.pod},
                        {"container", a.container},
                        {"team", team},
                        {"UUID", a.device.uuid},
                        {"resource", a.resource},
                        {"device_id", a.device_id},
                        {"sharing", std::string(to_string(a.device.sharing))},
                        {"mode", a.mode}},
                 uint64_t{1});
    }
    out.family("gpuledger_gpu_allocatable_info", MetricType::kGauge,
               "A GPU device the kubelet can allocate on this node (GetAllocatableResources).");
    for (const auto& a : st.inventory)
      out.sample(Labels{{"UUID", a.device.uuid},
                        {"resource", a.resource},
                        {"device_id", a.device_id},
                        {"sharing", std::string(to_string(a.device.sharing))}},
                 uint64_t{1});
  }
}

}  // namespace gpuledger::kubernetes
