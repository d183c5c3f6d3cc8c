#include "probes/runtime_attacher.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "probes/elf_symbols.h"
#include "probes/runtime_entry_points.h"
#include "probes/static_symbols.h"
#include "probes/stripped_runtime.h"

namespace gpuledger::probes {
namespace {

// A file's functions from both symbol tables: a shared libcudart exports
// them; a statically linked runtime keeps them in .symtab unless stripped.
// Either table may be missing or unreadable: the file is then what the other says.
std::vector<ElfFunction> runtime_symbols(const OpenedFile& file) {
  std::vector<ElfFunction> all;
  for (auto reader : {static_cast<std::vector<ElfFunction> (*)(int, const std::string&)>(&read_dynamic_functions),
                      static_cast<std::vector<ElfFunction> (*)(int, const std::string&)>(&read_static_functions)}) {
    try {
      auto found = reader(file.fd.get(), file.label);
      all.insert(all.end(), found.begin(), found.end());
    } catch (const Error&) {
    }
  }
  return all;
}

constexpr size_t kMaxRemembered = 65536;  // files known to hold no runtime; forgotten past this

}  // namespace

bool RuntimeAttacher::offer(const LibraryCandidate& candidate) {
  if (candidate.mapped_file) {
    std::lock_guard lock(mu_);
    if (attached_.contains(*candidate.mapped_file)) return true;
    if (without_runtime_.contains(*candidate.mapped_file)) return false;
  }
  std::string why;
  auto target = open_probe_target(proc_root_, candidate, watcher_, why);
  if (!target) {
    spdlog::debug("CUDA runtime candidate pid {}: {}: {}", candidate.pid, candidate.mapping.path, why);
    return false;
  }
  return offer_target(std::move(*target), candidate.origin, candidate.mapping.printed);
}

bool RuntimeAttacher::offer(const std::string& path) {
  std::string why;
  auto target = open_named_probe_target(path, watcher_, why);
  if (!target) {
    spdlog::warn("--cuda-runtime-lib {}: {}", path, why);
    return false;
  }
  return offer_target(std::move(*target), "cli", std::nullopt);
}

bool RuntimeAttacher::offer_target(ProbeTarget target, const std::string& origin, const std::optional<FileId>& printed) {
  const FileId id = target.key;
  auto remember_printed = [&] {  // for detach_unused: what the scans see, as what was attached
    if (!printed) return;
    if (attached_as_.size() >= kMaxRemembered) attached_as_.clear();
    attached_as_[*printed] = id;
  };
  {
    std::lock_guard lock(mu_);
    if (attached_.contains(id)) {
      remember_printed();
      return true;
    }
    if (without_runtime_.contains(id)) return false;
  }
  // Read without the lock: a large file takes a while, and snapshots wait on it.
  std::vector<ElfFunction> symbols = runtime_symbols(target.file);
  // No cuda* symbol at all: a stripped static runtime, if the runtime's own
  // strings are there. Looked for here too, outside the lock, and only then.
  const bool stripped = std::none_of(symbols.begin(), symbols.end(),
                                     [](const ElfFunction& f) { return f.name.starts_with("cuda"); }) &&
                        holds_cuda_runtime_strings(target.file.fd.get());
  std::lock_guard lock(mu_);
  if (attached_.contains(id)) {
    remember_printed();
    return true;
  }
  const std::string path = target.file.label;  // a copy: the file may be swapped for its backing layer's
  PlanBySet plan;  // the full plan, cut by call rate: the hot part attached while the set is full
  try {
    plan = plan_runtime_by_set(symbols, call_names_);
  } catch (const Error& e) {  // runtime call ids ran out
    spdlog::warn("CUDA runtime in {} not probed: {}", path, e.what());
  }
  if (plan.rare.empty() && plan.hot.empty()) {
    if (without_runtime_.size() >= kMaxRemembered) {
      without_runtime_.clear();
      stripped_.clear();
    }
    without_runtime_.insert(id);
    // Said once per file, and counted, rather than left silent.
    if (stripped) {
      stripped_.insert(id);
      spdlog::warn("CUDA runtime linked statically into {} (dev {} inode {}) is stripped of its symbol table: its "
                   "calls cannot be probed; only those that reach the driver through its exported symbols are "
                   "counted (gpuledger_runtime_libraries_unprobed{{reason=\"stripped\"}})",
                   path, id.dev, id.ino);
    }
    return false;
  }
  if (attached_.size() >= max_libraries_) {
    if (limit_rejections_++ == 0 || limit_rejections_ % 1000 == 0)
      spdlog::warn("CUDA runtime in {} not probed: {} runtime files are probed already (the bound); "
                   "gpuledger_runtime_library_limit_rejections_total counts each refusal",
                   path, max_libraries_);
    return false;  // offered again at the next scan: room may have been made
  }
  // Through the verified descriptor, as for the driver.
  prefer_backing_file(proc_root_, target);
  // Pinned under the file's key like the driver's: a restarted agent takes
  // the links over, so runtime calls made while no agent ran are counted too.
  AttachedFile entry = attach_plan(program_, target.file.attach_path(), std::move(plan), id, hot_path_, path, origin);
  if (entry.record.probes == 0 && !entry.record.probe_failures.empty()) {
    spdlog::warn("CUDA runtime in {} not probed: every probe failed ({})", path, entry.record.probe_failures.front());
    without_runtime_.insert(id);
    return false;
  }
  spdlog::info("{} {} runtime probes to {} ({}; dev {} inode {})", entry.adopted() ? "took over the pinned" : "attached",
               entry.record.probes, path, origin, id.dev, id.ino);
  entry.file = std::move(target.file.fd);  // keeps attach_path() valid for a retry
  entry.schedule_retry(std::chrono::steady_clock::now());
  attached_.emplace(id, std::move(entry));
  remember_printed();
  return true;
}

void RuntimeAttacher::set_hot_path(bool on) {
  std::lock_guard lock(mu_);
  hot_path_ = on;
  set_hot_path_in(attached_, program_, on);
}

void RuntimeAttacher::detach_unused(const std::vector<LibraryCandidate>& scanned) {
  std::lock_guard lock(mu_);
  for (const FileId& gone : probes::detach_unused(attached_, mapped_keys(scanned, attached_as_))) {
    std::erase_if(attached_as_, [&](const auto& kv) { return kv.second == gone; });
    ++detached_;
    program_.unpin(gone);  // after its links closed: the kernel lets go of them
  }
}

void RuntimeAttacher::retry_incomplete(std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  retry_missing_in(attached_, program_, now);
}

uint64_t RuntimeAttacher::libraries_detached() const {
  std::lock_guard lock(mu_);
  return detached_;
}

size_t RuntimeAttacher::stripped_runtimes() const {
  std::lock_guard lock(mu_);
  return stripped_.size();
}

uint64_t RuntimeAttacher::limit_rejections() const {
  std::lock_guard lock(mu_);
  return limit_rejections_;
}

size_t RuntimeAttacher::libraries_incomplete() const {
  std::lock_guard lock(mu_);
  return incomplete_in(attached_);
}

std::vector<LibraryRecord> RuntimeAttacher::attached() const {
  std::lock_guard lock(mu_);
  return records_of(attached_);
}

size_t RuntimeAttacher::probes_attached() const {
  std::lock_guard lock(mu_);
  return probes_in(attached_);
}

size_t RuntimeAttacher::probe_attach_failures() const {
  std::lock_guard lock(mu_);
  return probe_failures_in(attached_);
}

std::optional<std::string> RuntimeAttacher::call_name(uint32_t id) const {
  std::lock_guard lock(mu_);
  const std::string* name = call_names_.name_of(id);
  return name ? std::optional<std::string>(*name) : std::nullopt;
}

}  // namespace gpuledger::probes
