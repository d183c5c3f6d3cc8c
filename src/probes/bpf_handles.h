#pragma once
// RAII owners for libbpf objects, so every loader releases what it took once,
// in one place.
#include <bpf/libbpf.h>

#include <memory>
#include <utility>

#include "common/unique_fd.h"

namespace gpuledger::probes {

struct LinkDeleter {
  void operator()(bpf_link* link) const { bpf_link__destroy(link); }
};
using LinkHandle = std::unique_ptr<bpf_link, LinkDeleter>;

struct RingBufferDeleter {
  void operator()(ring_buffer* rb) const { ring_buffer__free(rb); }
};
using RingBufferHandle = std::unique_ptr<ring_buffer, RingBufferDeleter>;

// A file descriptor closed when its owner goes (BPF links made directly with
// the bpf() system call, which libbpf of this vintage cannot make).
using FdHandle = UniqueFd;

// Routes libbpf's messages into the agent's log (once per process).
void route_libbpf_logging();

}  // namespace gpuledger::probes
