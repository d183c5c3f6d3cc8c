#pragma once
// Keeps a PodDirectory current from the Kubernetes API: the pods of this node
// (fieldSelector=spec.nodeName=<node>) and the namespaces' labels, each with
// its own list + watch thread. The API server being away only delays names.
#include <memory>
#include <string>

#include "kubernetes/api_client.h"
#include "kubernetes/node_facts.h"
#include "kubernetes/pod_directory.h"
#include "kubernetes/reflector.h"

namespace gpuledger::kubernetes {

struct KubernetesOptions {
  ClusterConfig cluster;
  std::string node_name;
  bool watch_namespaces = true;  // needed when the team rule reads namespace labels
  // GPU sharing (sharing.h): this node's object (GFD labels, HAMi's
  // registration) and its DRA ResourceSlices (resource.k8s.io/v1). Needs a
  // node name.
  bool watch_sharing = true;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  int watch_timeout_seconds = 300;
};

class KubernetesMetadata {
 public:
  KubernetesMetadata(KubernetesOptions options, std::shared_ptr<PodDirectory> directory);  // throws Error on bad config
  ~KubernetesMetadata();
  void start();
  void stop();
  ReflectorStats pod_stats() const;
  std::optional<ReflectorStats> namespace_stats() const;
  // The node and its ResourceSlices (watch_sharing), by resource name.
  std::vector<std::pair<std::string, ReflectorStats>> sharing_stats() const;
  // What the API says about how this node's GPUs are shared (pods included).
  SharingFacts sharing_facts() const;
  uint64_t malformed_pods() const { return pod_sink_.malformed(); }
  const KubernetesOptions& options() const { return options_; }

 private:
  KubernetesOptions options_;
  std::shared_ptr<PodDirectory> directory_;
  ApiClient client_;
  PodSink pod_sink_;
  NamespaceSink namespace_sink_;
  NodeFacts node_facts_;
  NodeSink node_sink_{node_facts_};
  ResourceSliceSink slice_sink_{node_facts_};
  std::unique_ptr<Reflector> pods_, namespaces_, node_, slices_;
};

}  // namespace gpuledger::kubernetes
