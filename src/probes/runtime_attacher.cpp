#include "probes/runtime_attacher.h"

#include "common/error.h"
#include "common/log.h"
#include "probes/elf_symbols.h"
#include "probes/runtime_entry_points.h"
#include "probes/static_symbols.h"

namespace gpuledger::probes {
namespace {

// A file's functions from both symbol tables: a shared libcudart exports
// them; a statically linked runtime keeps them in .symtab unless stripped.
// Either table may be missing or unreadable: the file is then what the other says.
std::vector<ElfFunction> runtime_symbols(const std::string& path) {
  std::vector<ElfFunction> all;
  for (auto reader : {&read_dynamic_functions, &read_static_functions}) {
    try {
      auto found = reader(path);
      all.insert(all.end(), found.begin(), found.end());
    } catch (const Error&) {
    }
  }
  return all;
}

constexpr size_t kMaxRemembered = 65536;  // files known to hold no runtime; forgotten past this

}  // namespace

bool RuntimeAttacher::offer(const LibraryCandidate& candidate) {
  const std::string& path = candidate.path;
  // On overlayfs only the backing file is the probed one (see LibraryAttacher).
  auto id = candidate.probed_file ? candidate.probed_file
                                  : (on_overlayfs(path) ? std::nullopt : file_id_of(path));
  if (!id) return false;
  {
    std::lock_guard lock(mu_);
    if (attached_.contains(*id)) return true;
    if (without_runtime_.contains(*id)) return false;
  }
  // Read without the lock: a large file takes a while, and snapshots wait on it.
  std::vector<ElfFunction> symbols = runtime_symbols(path);
  std::lock_guard lock(mu_);
  if (attached_.contains(*id)) return true;
  std::vector<ProbeSpec> specs;
  try {
    specs = plan_runtime_probes(symbols, call_names_);
  } catch (const Error& e) {  // runtime call ids ran out
    spdlog::warn("CUDA runtime in {} not probed: {}", path, e.what());
  }
  if (specs.empty()) {
    if (without_runtime_.size() >= kMaxRemembered) without_runtime_.clear();
    without_runtime_.insert(*id);
    return false;
  }
  Entry entry;
  entry.links = program_.attach(path, specs);
  entry.record = LibraryRecord{path, candidate.origin, *id, entry.links.probes, entry.links.failures, ""};
  if (entry.links.probes == 0) {
    spdlog::warn("CUDA runtime in {} not probed: every probe failed ({})", path, entry.links.failures.front());
    without_runtime_.insert(*id);
    return false;
  }
  spdlog::info("attached {} runtime probes to {} ({}; dev {} inode {})", entry.record.probes, path,
               candidate.origin, id->dev, id->ino);
  attached_.emplace(*id, std::move(entry));
  return true;
}

std::vector<LibraryRecord> RuntimeAttacher::attached() const {
  std::lock_guard lock(mu_);
  std::vector<LibraryRecord> out;
  for (const auto& [id, entry] : attached_) out.push_back(entry.record);
  return out;
}

size_t RuntimeAttacher::probes_attached() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : attached_) n += entry.record.probes;
  return n;
}

size_t RuntimeAttacher::probe_attach_failures() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : attached_) n += entry.record.probe_failures.size();
  return n;
}

std::optional<std::string> RuntimeAttacher::call_name(uint32_t id) const {
  std::lock_guard lock(mu_);
  const std::string* name = call_names_.name_of(id);
  return name ? std::optional<std::string>(*name) : std::nullopt;
}

}  // namespace gpuledger::probes
