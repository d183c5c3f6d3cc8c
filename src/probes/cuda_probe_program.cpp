#include "probes/cuda_probe_program.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"
#include "cuda_probes.skel.h"
#include "probes/elf_symbols.h"
#include "probes/map_reader.h"
#include "probes/uprobe_multi.h"

namespace gpuledger::probes {
namespace {

// The C library this process runs on: a file every Linux process maps.
std::string own_libc() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash != std::string::npos && line.find("/libc.so", slash) != std::string::npos) return line.substr(slash);
  }
  return "";
}

// Whether multi-uprobe links work here: link one probe on a libc function,
// restricted to this process (which does not call it meanwhile), and drop it.
bool uprobe_multi_works(bpf_program* prog) {
  try {
    std::string libc = own_libc();
    if (libc.empty()) return false;
    auto forms = find_entry_point_forms(read_dynamic_functions(libc), "getpid");
    if (forms.empty()) return false;
    int fd = link_uprobe_multi(bpf_program__fd(prog), libc, {forms.front().file_offset}, {}, false, ::getpid());
    if (fd < 0) return false;
    ::close(fd);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

void CudaProbeProgram::load(bool multi) {
  skel_ = cuda_probes__open();
  if (!skel_) throw Error(std::string("cannot open the CUDA probe program: ") + std::strerror(errno));
  skel_->rodata->cgroup_v2_root_id = config_.cgroup_v2_root_id;
  skel_->rodata->v1_fallback_subsys = config_.v1_subsys_index.value_or(0xffffffff);
  skel_->rodata->runtime_mode = config_.runtime_mode;
  bpf_map__set_max_entries(skel_->maps.workload_counters, config_.max_workloads);
  bpf_map__set_max_entries(skel_->maps.call_errors, config_.max_workloads);
  bpf_map__set_max_entries(skel_->maps.live_allocations, config_.max_live_allocations);
  if (multi) {
    for (bpf_program* prog : {skel_->progs.gl_launch, skel_->progs.gl_call_entry, skel_->progs.gl_call_return,
                              skel_->progs.gl_rt_entry, skel_->progs.gl_rt_return})
      bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kAttachUprobeMulti));
  }
  // After the capacities are set: a pinned map keeps its own (pin_store.h).
  if (config_.pins) config_.pins->reuse_maps(skel_->obj);
  if (int err = cuda_probes__load(skel_); err) {
    cuda_probes__destroy(skel_);
    skel_ = nullptr;
    throw Error(std::string("cannot load the CUDA probe program (BPF unavailable? need root and a "
                            "kernel with BTF): ") + std::strerror(-err));
  }
  multi_ = multi;
}

CudaProbeProgram::CudaProbeProgram(const ProbeProgramConfig& config) : config_(config) {
  route_libbpf_logging();
  // Multi-uprobe links where the kernel has them; one perf-event link per
  // probe where it does not (the programs must be loaded for one or the other).
  try {
    if (config.per_probe_links) throw Error("per-probe links requested");
    load(true);
    if (!uprobe_multi_works(skel_->progs.gl_call_entry)) {
      spdlog::info("multi-uprobe links unavailable (Linux < 6.6?): one link per probe");
      cuda_probes__destroy(skel_);
      skel_ = nullptr;
      load(false);
    }
  } catch (const Error&) {
    load(false);
  }
  if (config_.pins) {
    config_.pins->pin_maps(skel_->obj, links_version());
    config_.max_workloads = bpf_map__max_entries(skel_->maps.workload_counters);
  }
  // Key 0 is the overflow bucket the kernel side falls back to when the
  // workload map is full: it must exist before the first probe fires (and
  // keeps its counts when the map was taken over).
  gl_workload_key overflow_key{0, GL_DEVICE_UNKNOWN, 0};
  const int counters_fd = bpf_map__fd(skel_->maps.workload_counters);
  std::vector<gl_counters> zeros(copies_per_value(counters_fd));
  bpf_map_update_elem(counters_fd, &overflow_key, zeros.data(), BPF_NOEXIST);
  if (int err = cuda_probes__attach(skel_); err) {
    // Only the exit tracepoint auto-attaches; uprobes are attached per library.
    cuda_probes__destroy(skel_);
    skel_ = nullptr;
    throw Error(std::string("cannot attach the process-exit tracepoint: ") + std::strerror(-err));
  }
  // Attached before the earlier agent's is unpinned: no exit goes unseen
  // (the handler run twice finds its entries gone the second time).
  if (config_.pins) config_.pins->pin_link("process_exit", bpf_link__fd(skel_->links.gl_process_exit));
}

std::string CudaProbeProgram::links_version() const {
  size_t size = 0;
  const void* elf = cuda_probes__elf_bytes(&size);
  const auto* r = skel_->rodata;
  return pin_links_version(elf, size,
                           fmt::format("cgroup_v2_root_id={} v1_fallback_subsys={} runtime_mode={} "
                                       "exact_threads_legacy={} multi={}",
                                       r->cgroup_v2_root_id, r->v1_fallback_subsys,
                                       static_cast<unsigned>(r->runtime_mode), r->exact_threads_legacy, multi_));
}

uint32_t CudaProbeProgram::max_export_tables() const { return bpf_map__max_entries(skel_->maps.export_tables); }

void CudaProbeProgram::unpin(const FileId& file) {
  if (config_.pins) config_.pins->unpin_library(file);
}

void CudaProbeProgram::unpin(const FileId& file, PinnedSet set) {
  if (config_.pins) config_.pins->unpin_library(file, set);
}

CudaProbeProgram::~CudaProbeProgram() {
  if (skel_) cuda_probes__destroy(skel_);
}

bpf_program* CudaProbeProgram::program_for(const ProbePart& part) const {
  if (part.spec.program == ProbeProgram::kRuntime) return part.retprobe ? skel_->progs.gl_rt_return : skel_->progs.gl_rt_entry;
  if (part.retprobe) return skel_->progs.gl_call_return;
  return part.spec.program == ProbeProgram::kLaunch ? skel_->progs.gl_launch : skel_->progs.gl_call_entry;
}

void CudaProbeProgram::attach_multi(AttachedLibrary& lib, const std::vector<ProbePart>& parts) {
  struct Group {
    bpf_program* prog;
    bool retprobe;
    const char* what;
    std::vector<ProbePart> parts;
  };
  Group groups[] = {{skel_->progs.gl_launch, false, "launch entries", {}},
                    {skel_->progs.gl_call_entry, false, "call entries", {}},
                    {skel_->progs.gl_call_return, true, "call returns", {}},
                    {skel_->progs.gl_rt_entry, false, "runtime entries", {}},
                    {skel_->progs.gl_rt_return, true, "runtime returns", {}}};
  for (const auto& part : parts)
    for (auto& g : groups)
      if (g.prog == program_for(part)) g.parts.push_back(part);
  for (auto& g : groups) {
    if (g.parts.empty()) continue;
    std::vector<uint64_t> offsets, cookies;
    for (const auto& part : g.parts) {
      offsets.push_back(part.spec.file_offset);
      cookies.push_back(part.spec.cookie);
    }
    const bool faulted = fault_ && std::any_of(g.parts.begin(), g.parts.end(), fault_);
    int fd = faulted ? -EAGAIN : link_uprobe_multi(bpf_program__fd(g.prog), lib.path, offsets, cookies, g.retprobe);
    if (fd < 0) {
      lib.failures.push_back(std::string(g.what) + ": " + std::strerror(-fd));
      lib.missing.insert(lib.missing.end(), g.parts.begin(), g.parts.end());
      continue;
    }
    lib.multi_links.emplace_back(fd);
    lib.probes += g.parts.size();
  }
}

void CudaProbeProgram::attach_each(AttachedLibrary& lib, const std::vector<ProbePart>& parts) {
  for (const auto& part : parts) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = part.spec.cookie, .retprobe = part.retprobe);
    bpf_link* link = nullptr;
    if (fault_ && fault_(part))
      errno = EAGAIN;
    else
      link = bpf_program__attach_uprobe_opts(program_for(part), -1, lib.path.c_str(), part.spec.file_offset, &opts);
    if (!link) {
      lib.failures.push_back(part.spec.name + (part.retprobe ? " (return)" : "") + ": " + std::strerror(errno));
      lib.missing.push_back(part);
      continue;
    }
    lib.links.emplace_back(link);
    ++lib.probes;
  }
}

void CudaProbeProgram::attach_parts(AttachedLibrary& lib, const std::vector<ProbePart>& parts) {
  if (multi_)
    attach_multi(lib, parts);
  else
    attach_each(lib, parts);
  // Only a complete set is pinned: a successor adopts whole sets only.
  PinStore* pins = lib.pinned_as ? config_.pins : nullptr;
  if (pins && lib.probes > 0 && lib.missing.empty()) {
    std::vector<int> fds;
    for (const auto& fd : lib.multi_links) fds.push_back(fd.get());
    for (const auto& link : lib.links) fds.push_back(bpf_link__fd(link.get()));
    pins->pin_library(*lib.pinned_as, lib.pinned_set, lib.probes, fds);
  }
}

AttachedLibrary CudaProbeProgram::attach(const std::string& path, const std::vector<ProbeSpec>& specs,
                                         std::optional<FileId> pinned_as, PinnedSet set) {
  AttachedLibrary lib;
  lib.path = path;
  lib.pinned_as = pinned_as;
  lib.pinned_set = set;
  std::vector<ProbePart> parts;
  for (const auto& spec : specs) {
    parts.push_back({spec, false});
    if (spec.with_return) parts.push_back({spec, true});
  }
  if (PinStore* pins = pinned_as ? config_.pins : nullptr) {
    if (auto adopted = pins->adopt_library(*pinned_as, set, parts.size())) {
      lib.multi_links = std::move(adopted->links);  // descriptors of either kind of link
      lib.probes = adopted->probes;
      lib.adopted = true;
      return lib;
    }
  }
  attach_parts(lib, parts);
  return lib;
}

void CudaProbeProgram::attach_missing(AttachedLibrary& lib) {
  std::vector<ProbePart> parts = std::move(lib.missing);
  lib.missing.clear();
  lib.failures.clear();
  attach_parts(lib, parts);
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
      .call_names = bpf_map__fd(skel_->maps.call_names),
      .export_tables = bpf_map__fd(skel_->maps.export_tables),
      .open_spans = bpf_map__fd(skel_->maps.open_spans),
  };
}

}  // namespace gpuledger::probes
