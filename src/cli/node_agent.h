#pragma once
// The composition root of `gpuledger agent`: everything a node runs, built
// from the command line in dependency order and stopped in reverse: the
// device plane (so the attribution agent can name GPUs), Kubernetes names and
// GPU allocation, the attribution agent, the ledger, and the HTTP endpoint.
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"

namespace gpuledger::cli {

class NodeAgent {
 public:
  explicit NodeAgent(const AgentCommand& cmd);  // throws Error on unusable configuration
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

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

}  // namespace gpuledger::cli
