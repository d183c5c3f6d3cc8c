#include "kubernetes/kubernetes_metadata.h"

#include "common/log.h"

namespace gpuledger::kubernetes {

KubernetesMetadata::KubernetesMetadata(KubernetesOptions options, std::shared_ptr<PodDirectory> directory)
    : options_(std::move(options)),
      directory_(std::move(directory)),
      client_(options_.cluster),
      pod_sink_(*directory_),
      namespace_sink_(*directory_) {
  ReflectorOptions pods;
  pods.name = "pods";
  pods.path = "/api/v1/pods";
  if (!options_.node_name.empty()) pods.field_selector = "spec.nodeName=" + options_.node_name;
  pods.initial_backoff = options_.initial_backoff;
  pods.max_backoff = options_.max_backoff;
  pods.watch_timeout_seconds = options_.watch_timeout_seconds;
  pods_ = std::make_unique<Reflector>(client_, pods, pod_sink_);
  if (options_.watch_namespaces) {
    ReflectorOptions ns = pods;
    ns.name = "namespaces";
    ns.path = "/api/v1/namespaces";
    ns.field_selector.clear();
    namespaces_ = std::make_unique<Reflector>(client_, ns, namespace_sink_);
  }
  if (options_.watch_sharing && !options_.node_name.empty()) {
    ReflectorOptions node = pods;
    node.name = "node";
    node.path = "/api/v1/nodes";
    node.field_selector = "metadata.name=" + options_.node_name;
    node_ = std::make_unique<Reflector>(client_, node, node_sink_);
    ReflectorOptions slices = pods;
    slices.name = "resourceslices";
    slices.path = "/apis/resource.k8s.io/v1/resourceslices";
    slices.field_selector = "spec.nodeName=" + options_.node_name;
    slices_ = std::make_unique<Reflector>(client_, slices, slice_sink_);
  }
}

KubernetesMetadata::~KubernetesMetadata() { stop(); }

void KubernetesMetadata::start() {
  spdlog::info("kubernetes: watching the pods of node '{}' at {} ({})", options_.node_name, options_.cluster.server,
               options_.cluster.source);
  pods_->start();
  if (namespaces_) namespaces_->start();
  if (node_) node_->start();
  if (slices_) slices_->start();
}

void KubernetesMetadata::stop() {
  client_.cancel();
  if (pods_) pods_->stop();
  if (namespaces_) namespaces_->stop();
  if (node_) node_->stop();
  if (slices_) slices_->stop();
}

std::vector<std::pair<std::string, ReflectorStats>> KubernetesMetadata::sharing_stats() const {
  std::vector<std::pair<std::string, ReflectorStats>> out;
  if (node_) out.emplace_back("nodes", node_->stats());
  if (slices_) out.emplace_back("resourceslices", slices_->stats());
  return out;
}

SharingFacts KubernetesMetadata::sharing_facts() const {
  auto f = node_facts_.facts(directory_.get());
  f.node_name = options_.node_name;
  return f;
}

ReflectorStats KubernetesMetadata::pod_stats() const { return pods_->stats(); }

std::optional<ReflectorStats> KubernetesMetadata::namespace_stats() const {
  if (!namespaces_) return std::nullopt;
  return namespaces_->stats();
}

}  // namespace gpuledger::kubernetes
