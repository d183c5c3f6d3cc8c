#pragma once
// /metrics series of the Kubernetes integration: which pods hold which GPUs
// (gpuledger_gpu_allocation_info), the node's GPU inventory, and self-metrics
// saying whether the API server and the kubelet's Pod Resources API answer.
#include <memory>

#include "config/agent_config.h"
#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/pod_directory.h"
#include "kubernetes/pod_resources_client.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::kubernetes {

class KubernetesMetrics : public metrics::MetricsContributor {
 public:
  // Any of metadata and pod_resources may be null (not configured).
  KubernetesMetrics(std::shared_ptr<PodDirectory> directory, config::TeamRule rule,
                    const KubernetesMetadata* metadata, const PodResourcesMonitor* pod_resources);
  void write_metrics(metrics::ExpositionWriter& out) const override;

 private:
  std::shared_ptr<PodDirectory> directory_;
  config::TeamRule rule_;
  const KubernetesMetadata* metadata_;
  const PodResourcesMonitor* pod_resources_;
};

}  // namespace gpuledger::kubernetes
