#pragma once
// The composition root of `gpuledger agent`: everything a node runs, built
// from the command line in dependency order and stopped in reverse: the
// device plane (so the attribution agent can name GPUs), Kubernetes names and
// GPU allocation, the attribution agent, the ledger, and the HTTP endpoint.
#include <memory>
#include <optional>
#include <string>

#include "kubernetes/cluster_config.h"
#include "node/node_options.h"

namespace gpuledger::node {

class NodeAgent {
 public:
  explicit NodeAgent(const NodeOptions& cmd);  // throws Error on unusable configuration
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  int port() const;
  // Feeds the ledger one observation; the caller's loop calls it every
  // --ledger-interval-ms.
  void observe();
  // SIGTERM: a last observation, and the ledger's window in progress stored
  // with what was watched of it (no watched time lost or charged as idle).
  void store_window_in_progress();
  // Where the data plane is pinned ("" when it is not), and the Kubernetes API
  // if there is one: what the stop decides the pins' fate with.
  const std::string& bpf_pin_dir() const;
  const std::optional<kubernetes::ClusterConfig>& cluster() const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

// `gpuledger agent`: runs a NodeAgent until SIGINT or SIGTERM, observing every
// --ledger-interval-ms, then stores the window in progress and decides the
// pins' fate (pins_on_exit.h). Returns the exit status.
int run_node_agent(const NodeOptions& options);

}  // namespace gpuledger::node
