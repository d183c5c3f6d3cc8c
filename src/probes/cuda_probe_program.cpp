#include "probes/cuda_probe_program.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "cuda_probes.skel.h"

namespace gpuledger::probes {

CudaProbeProgram::CudaProbeProgram(const ProbeProgramConfig& config) : config_(config) {
  route_libbpf_logging();
  skel_ = cuda_probes__open();
  if (!skel_) throw Error(std::string("cannot open the CUDA probe program: ") + std::strerror(errno));
  skel_->rodata->cgroup_v2_root_id = config.cgroup_v2_root_id;
  skel_->rodata->v1_fallback_subsys = config.v1_subsys_index.value_or(0xffffffff);
  bpf_map__set_max_entries(skel_->maps.workload_counters, config.max_workloads);
  bpf_map__set_max_entries(skel_->maps.call_errors, config.max_workloads);
  bpf_map__set_max_entries(skel_->maps.live_allocations, config.max_live_allocations);
  if (int err = cuda_probes__load(skel_); err) {
    cuda_probes__destroy(skel_);
    skel_ = nullptr;
    throw Error(std::string("cannot load the CUDA probe program (BPF unavailable? need root and a "
                            "kernel with BTF): ") + std::strerror(-err));
  }
  // Key 0 is the overflow bucket the kernel side falls back to when the
  // workload map is full: it must exist before the first probe fires.
  gl_workload_key overflow_key{0, GL_DEVICE_UNKNOWN, 0};
  int ncpu = libbpf_num_possible_cpus();
  std::vector<gl_counters> zeros(ncpu > 0 ? ncpu : 1);
  std::memset(zeros.data(), 0, zeros.size() * sizeof(gl_counters));
  bpf_map_update_elem(bpf_map__fd(skel_->maps.workload_counters), &overflow_key, zeros.data(), BPF_ANY);
  if (int err = cuda_probes__attach(skel_); err) {
    // Only the exit tracepoint auto-attaches; uprobes are attached per library.
    cuda_probes__destroy(skel_);
    skel_ = nullptr;
    throw Error(std::string("cannot attach the process-exit tracepoint: ") + std::strerror(-err));
  }
}

CudaProbeProgram::~CudaProbeProgram() {
  if (skel_) cuda_probes__destroy(skel_);
}

AttachedLibrary CudaProbeProgram::attach(const std::string& path, const std::vector<ProbeSpec>& specs) {
  AttachedLibrary lib;
  lib.path = path;
  auto attach_one = [&](const ProbeSpec& spec, bpf_program* prog, bool retprobe) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = spec.cookie, .retprobe = retprobe);
    bpf_link* link = bpf_program__attach_uprobe_opts(prog, -1, path.c_str(), spec.file_offset, &opts);
    if (!link) {
      lib.failures.push_back(spec.name + (retprobe ? " (return)" : "") + ": " + std::strerror(errno));
      return;
    }
    lib.links.emplace_back(link);
  };
  for (const auto& spec : specs) {
    bpf_program* entry =
        spec.program == ProbeProgram::kLaunch ? skel_->progs.gl_launch : skel_->progs.gl_call_entry;
    attach_one(spec, entry, false);
    if (spec.with_return) attach_one(spec, skel_->progs.gl_call_return, true);
  }
  return lib;
}

BpfMapFds CudaProbeProgram::maps() const {
  return BpfMapFds{
      .workload_counters = bpf_map__fd(skel_->maps.workload_counters),
      .call_errors = bpf_map__fd(skel_->maps.call_errors),
      .live_allocations = bpf_map__fd(skel_->maps.live_allocations),
      .processes = bpf_map__fd(skel_->maps.processes),
      .stats = bpf_map__fd(skel_->maps.stats),
      .context_devices = bpf_map__fd(skel_->maps.context_devices),
      .events = bpf_map__fd(skel_->maps.events),
  };
}

}  // namespace gpuledger::probes
