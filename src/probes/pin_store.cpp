#include "probes/pin_store.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"
#include "common/mountinfo.h"

namespace gpuledger::probes {
namespace {

namespace fs = std::filesystem;

constexpr long kBpffsMagic = 0xcafe4a11;  // BPF_FS_MAGIC
// Bumped by hand when a map keeps its sizes but changes its meaning (a field
// reordered, a unit changed): an older layout is then replaced, never adopted.
constexpr int kLayoutRevision = 2;  // 2: call ids moved to cookie bits 32..41
// Maps whose capacity the agent sets at start (--max-workloads): a pinned one
// of another capacity is still the same layout.
bool resizable(const std::string& name) {
  return name == "workload_counters" || name == "call_errors" || name == "live_allocations" ||
         name == "ioctl_counters";
}

uint64_t fnv1a(std::string_view bytes, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// "bpf-map", "bpf-prog", "bpf-link": the kind of BPF object behind a descriptor.
std::string bpf_kind(int fd) {
  char target[64] = {};
  ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), target, sizeof target - 1);
  std::string s = n > 0 ? std::string(target, static_cast<size_t>(n)) : "";
  return s.starts_with("anon_inode:") ? s.substr(11) : s;
}

template <typename F>
void for_each_pinned_map(bpf_object* obj, F f) {
  bpf_map* map;
  bpf_object__for_each_map(map, obj) {
    if (!bpf_map__is_internal(map)) f(map, std::string(bpf_map__name(map)));
  }
}

// Why a pinned map cannot stand in for `map` (code, detail), or nullopt.
std::optional<std::pair<std::string, std::string>> incompatible(bpf_map* map, const std::string& path) {
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd.valid()) return std::pair{std::string("map_missing"), path + ": " + std::strerror(errno)};
  if (bpf_kind(fd.get()) != "bpf-map") return std::pair{std::string("pin_corrupt"), path + " is not a map"};
  bpf_map_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
    return std::pair{std::string("pin_corrupt"), path + ": " + std::strerror(errno)};
  const std::string name = bpf_map__name(map);
  if (info.type != static_cast<uint32_t>(bpf_map__type(map)) || info.key_size != bpf_map__key_size(map) ||
      info.value_size != bpf_map__value_size(map) || info.map_flags != bpf_map__map_flags(map) ||
      (!resizable(name) && info.max_entries != bpf_map__max_entries(map)))
    return std::pair{std::string("map_mismatch"),
                     fmt::format("{}: pinned type {} key {} value {} flags {:#x} entries {}, this build wants type {} "
                                 "key {} value {} flags {:#x} entries {}",
                                 name, info.type, info.key_size, info.value_size, info.map_flags, info.max_entries,
                                 static_cast<int>(bpf_map__type(map)), bpf_map__key_size(map),
                                 bpf_map__value_size(map), bpf_map__map_flags(map), bpf_map__max_entries(map))};
  return std::nullopt;
}

// "<dev>-<ino>-<probes>-<links>" (the rare calls' set) or
// "<dev>-<ino>-hot-<probes>-<links>" (the hot path's): the links on a
// library, and what they hold.
struct LibraryDir {
  FileId file;
  PinnedSet set = PinnedSet::kRare;
  size_t probes = 0, links = 0;
};
std::optional<LibraryDir> parse_library_dir(const std::string& name) {
  LibraryDir d;
  unsigned long long probes = 0, links = 0;
  char tail = 0;
  if (std::sscanf(name.c_str(), "%lu-%lu-%llu-%llu%c", &d.file.dev, &d.file.ino, &probes, &links, &tail) != 4) {
    d.set = PinnedSet::kHot;
    if (std::sscanf(name.c_str(), "%lu-%lu-hot-%llu-%llu%c", &d.file.dev, &d.file.ino, &probes, &links, &tail) != 4)
      return std::nullopt;
  }
  d.probes = probes;
  d.links = links;
  return d;
}

// The names in a directory, read before any is removed.
std::vector<std::string> entry_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) names.push_back(entry.path().filename());
  return names;
}

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throw Error("cannot create the BPF pin directory " + path + ": " + std::strerror(errno));
}

}  // namespace

std::optional<std::string> find_bpffs(const std::string& mountinfo) {
  std::ifstream in(mountinfo);
  std::optional<std::string> found;
  for (std::string line; std::getline(in, line);) {
    auto m = parse_mountinfo_line(line);
    if (!m || m->fstype != "bpf") continue;
    std::string point = unescape_mountinfo(m->mount_point);
    if (point == "/sys/fs/bpf") return point;  // the conventional one, when there are several
    if (!found) found = point;
  }
  return found;
}

std::string default_pin_dir(bool may_mount) {
  auto bpffs = may_mount ? std::optional(find_or_mount_bpffs()) : find_bpffs();
  return bpffs ? *bpffs + "/gpuledger" : "";
}

std::string find_or_mount_bpffs(const std::string& mountinfo) {
  if (auto found = find_bpffs(mountinfo)) return *found;
  const std::string point = "/sys/fs/bpf";
  std::error_code ec;
  fs::create_directories(point, ec);
  if (::mount("bpf", point.c_str(), "bpf", 0, "mode=0700") != 0)
    throw Error("no bpffs is mounted and mounting one at " + point + " failed (" + std::strerror(errno) +
                "): mount one (mount -t bpf bpf /sys/fs/bpf), or run with --no-bpf-pins");
  spdlog::warn("no bpffs was mounted: mounted one at {} for the BPF pins (in a container, mount the host's "
               "/sys/fs/bpf instead, or the pins go with the container)",
               point);
  return point;
}

bool on_bpffs(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  struct statfs st {};
  return !p.empty() && ::statfs(p.c_str(), &st) == 0 && static_cast<long>(st.f_type) == kBpffsMagic;
}

size_t remove_pin_tree(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return 0;
  size_t pins = 0;
  std::vector<uint32_t> links;  // ids of the links pinned there
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    ++pins;
    UniqueFd fd(bpf_obj_get(it->path().c_str()));
    bpf_link_info info{};
    uint32_t len = sizeof info;
    if (fd.valid() && bpf_kind(fd.get()) == "bpf-link" && bpf_obj_get_info_by_fd(fd.get(), &info, &len) == 0)
      links.push_back(info.id);
  }
  fs::remove_all(path, ec);  // unpinning drops the kernel's reference: an unheld link detaches
  if (ec) throw Error("cannot remove the BPF pins under " + path + ": " + ec.message());
  // The kernel lets go of an unpinned link later, on a work queue. Probes
  // attached anew to the same file meanwhile would count calls twice: wait
  // until every link is gone (its id freed, right before it is detached).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (uint32_t id : links) {
    for (int fd; (fd = bpf_link_get_fd_by_id(id)) >= 0;) {
      ::close(fd);  // when this was the last reference, the link is detached before close returns
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return pins;
}

std::string pin_layout_version(bpf_object* obj) {
  std::string text = "revision " + std::to_string(kLayoutRevision) + ";";
  for_each_pinned_map(obj, [&](bpf_map* map, const std::string& name) {
    text += fmt::format("{}:{}:{}:{}:{:#x}:{};", name, static_cast<int>(bpf_map__type(map)), bpf_map__key_size(map),
                        bpf_map__value_size(map), bpf_map__map_flags(map),
                        resizable(name) ? 0u : bpf_map__max_entries(map));
  });
  return fmt::format("layout-{:016x}", fnv1a(text));
}

UniqueFd lock_pin_dir(const std::string& dir) {
  if (!on_bpffs(dir))
    throw Error("--bpf-pin-dir " + dir + " is not on a bpffs: pins must live there (e.g. under /sys/fs/bpf)");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create the BPF pin directory " + dir + ": " + ec.message());
  UniqueFd lock(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lock.valid()) throw Error("cannot open the BPF pin directory " + dir + ": " + std::strerror(errno));
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      throw PinsHeld("another gpuledger agent is using the BPF pins in " + dir +
                     ": only one agent may adopt them (stop it first, or give this one its own --bpf-pin-dir)");
    throw Error("cannot lock the BPF pin directory " + dir + ": " + std::strerror(errno));
  }
  return lock;
}

std::unique_ptr<PinStore> open_pin_store(const std::string& root, const std::string& plane) {
  if (root.empty()) return nullptr;
  try {
    return std::make_unique<PinStore>(root, plane);
  } catch (const PinsHeld&) {
    throw;
  } catch (const Error& e) {
    spdlog::error("{}: the {} data plane is not pinned, a restart starts it from zero", e.what(), plane);
    return nullptr;
  }
}

std::string pin_links_version(const void* object, size_t size, const std::string& settings) {
  return fmt::format("{:016x}", fnv1a(settings, fnv1a(std::string_view(static_cast<const char*>(object), size))));
}

PinStore::PinStore(const std::string& root, const std::string& plane)
    : root_(root + "/" + plane), lock_(lock_pin_dir(root_)) {
  report_.enabled = true;
  report_.root = root_;
}

void PinStore::replace(const std::string& reason, const std::string& why) {
  spdlog::warn("BPF pins: {}: replaced ({}); {}", why, reason,
               reason == "programs_changed" ? "the maps are kept, the probes attached anew"
                                            : "counters start again from zero");
  if (report_.replaced.empty()) report_.replaced = reason;
}

void PinStore::decide(bpf_object* obj) {
  decided_ = true;
  report_.layout = pin_layout_version(obj);
  layout_dir_ = root_ + "/" + report_.layout;
  std::error_code ec;
  for (const auto& name : entry_names(root_)) {
    if (name == report_.layout) continue;
    remove_pin_tree(root_ + "/" + name);
    replace("layout_version", "the pinned layout " + name + " is not this build's " + report_.layout);
  }
  if (fs::exists(layout_dir_, ec)) {
    std::optional<std::pair<std::string, std::string>> problem;
    for_each_pinned_map(obj, [&](bpf_map* map, const std::string& name) {
      if (!problem) problem = incompatible(map, layout_dir_ + "/" + name);
    });
    if (problem) {
      remove_pin_tree(layout_dir_);
      replace(problem->first, problem->second);
    } else {
      report_.adopted = true;
    }
  }
  make_dir(layout_dir_);
}

void PinStore::reuse_maps(bpf_object* obj) {
  std::lock_guard lock(mu_);
  if (!decided_) decide(obj);
  if (!report_.adopted) return;
  for_each_pinned_map(obj, [&](bpf_map* map, const std::string& name) {
    const std::string path = layout_dir_ + "/" + name;
    UniqueFd fd(bpf_obj_get(path.c_str()));
    bpf_map_info info{};
    uint32_t len = sizeof info;
    if (!fd.valid() || bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0)
      throw Error("cannot open the pinned map " + path + ": " + std::strerror(errno));
    if (info.max_entries != bpf_map__max_entries(map))
      spdlog::warn("BPF pins: the pinned {} holds {} entries, not the {} asked for: kept as it is (counts survive; "
                   "`gpuledger uninstall` with the agent stopped resizes it at the next start)",
                   name, info.max_entries, bpf_map__max_entries(map));
    if (int err = bpf_map__reuse_fd(map, fd.get()); err)
      throw Error("cannot take over the pinned map " + path + ": " + std::strerror(-err));
  });
}

void PinStore::pin_maps(bpf_object* obj, const std::string& links_version) {
  std::lock_guard lock(mu_);
  if (!report_.adopted) {
    for_each_pinned_map(obj, [&](bpf_map* map, const std::string& name) {
      const std::string path = layout_dir_ + "/" + name;
      if (bpf_obj_pin(bpf_map__fd(map), path.c_str()) != 0)
        throw Error("cannot pin the map " + name + " at " + path + ": " + std::strerror(errno));
    });
  }
  const std::string links = "links-" + links_version;
  links_dir_ = layout_dir_ + "/" + links;
  for (const auto& name : entry_names(layout_dir_)) {
    if (!name.starts_with("links-") || name == links) continue;
    remove_pin_tree(layout_dir_ + "/" + name);
    replace("programs_changed", "the pinned probes were made by another build or configuration (" + name + ")");
  }
  make_dir(links_dir_);
  std::error_code ec;
  for (const auto& name : entry_names(links_dir_)) {
    if (!fs::is_directory(links_dir_ + "/" + name, ec)) continue;
    if (auto parsed = parse_library_dir(name)) {
      pinned_libraries_[{parsed->file, parsed->set}] = name;
    } else {
      remove_pin_tree(links_dir_ + "/" + name);  // a set an earlier agent did not finish pinning
    }
  }
  if (report_.adopted)
    spdlog::info("BPF pins: took over the data plane pinned in {}{}", layout_dir_,
                 pinned_libraries_.empty() ? "" : fmt::format(" ({} driver files with probes)", pinned_libraries_.size()));
  else
    spdlog::info("BPF pins: the data plane is pinned in {}", layout_dir_);
}

void PinStore::pin_link(const std::string& name, int link_fd) {
  std::lock_guard lock(mu_);
  const std::string path = links_dir_ + "/" + name;
  ::unlink(path.c_str());  // the earlier agent's: this one is attached already
  if (bpf_obj_pin(link_fd, path.c_str()) != 0)
    spdlog::warn("BPF pins: cannot pin {}: {} (it goes when the agent does)", path, std::strerror(errno));
}

std::string PinStore::library_dir(const PinKey& key, size_t probes, size_t links) const {
  const auto& [file, set] = key;
  return fmt::format("{}-{}-{}{}-{}", file.dev, file.ino, set == PinnedSet::kHot ? "hot-" : "", probes, links);
}

std::optional<PinStore::AdoptedLinks> PinStore::adopt_library(const FileId& file, PinnedSet set,
                                                              size_t planned_probes) {
  std::lock_guard lock(mu_);
  const PinKey key{file, set};
  auto it = pinned_libraries_.find(key);
  if (it == pinned_libraries_.end()) return std::nullopt;
  const std::string dir = links_dir_ + "/" + it->second;
  AdoptedLinks adopted;
  const LibraryDir recorded = *parse_library_dir(it->second);
  adopted.probes = recorded.probes;
  std::string problem;
  // Fewer: a partial set. More or fewer: another plan (--launch-returns).
  if (adopted.probes != planned_probes)
    problem = fmt::format("{} probes pinned, {} planned", adopted.probes, planned_probes);
  std::error_code ec;
  std::vector<fs::path> pins;
  for (const auto& entry : fs::directory_iterator(dir, ec)) pins.push_back(entry.path());
  if (pins.empty() || pins.size() != recorded.links)
    problem = fmt::format("{} of {} links", pins.size(), recorded.links);
  for (const auto& pin : pins) {
    if (!problem.empty()) break;
    UniqueFd fd(bpf_obj_get(pin.c_str()));
    if (!fd.valid() || bpf_kind(fd.get()) != "bpf-link")
      problem = pin.string() + " is not a link";
    else
      adopted.links.push_back(std::move(fd));
  }
  if (!problem.empty()) {
    spdlog::info("BPF pins: the pinned probes on dev {} inode {} are not whole or are another plan's ({}): "
                 "attached anew",
                 file.dev, file.ino, problem);
    adopted.links.clear();  // held, they would stay attached: the unpinning waits for them to go
    unpin_library(file, set);
    return std::nullopt;
  }
  claimed_[key] = true;
  if (set == PinnedSet::kRare) ++report_.libraries_adopted;
  return adopted;
}

void PinStore::pin_library(const FileId& file, PinnedSet set, size_t probes, const std::vector<int>& link_fds) {
  std::lock_guard lock(mu_);
  unpin_library(file, set);
  // Pinned under a temporary name and renamed: a crash leaves no set that
  // looks whole but is not (leftovers are removed at the next start).
  const std::string name = library_dir({file, set}, probes, link_fds.size());
  const std::string tmp = links_dir_ + "/new-" + name;  // bpffs allows no dot in a name
  remove_pin_tree(tmp);
  try {
    make_dir(tmp);
    for (size_t k = 0; k < link_fds.size(); ++k)
      if (bpf_obj_pin(link_fds[k], (tmp + "/" + std::to_string(k)).c_str()) != 0)
        throw Error("cannot pin a link: " + std::string(std::strerror(errno)));
    if (::rename(tmp.c_str(), (links_dir_ + "/" + name).c_str()) != 0)
      throw Error("cannot rename " + tmp + ": " + std::strerror(errno));
  } catch (const Error& e) {
    remove_pin_tree(tmp);
    spdlog::warn("BPF pins: the probes on dev {} inode {} are not pinned ({}): they go when the agent does",
                 file.dev, file.ino, e.what());
    return;
  }
  pinned_libraries_[{file, set}] = name;
  claimed_[{file, set}] = true;
}

void PinStore::unpin_library(const FileId& file, PinnedSet set) {
  std::lock_guard lock(mu_);
  auto it = pinned_libraries_.find({file, set});
  if (it == pinned_libraries_.end()) return;
  remove_pin_tree(links_dir_ + "/" + it->second);
  pinned_libraries_.erase(it);
  claimed_.erase({file, set});
}

void PinStore::unpin_library(const FileId& file) {
  unpin_library(file, PinnedSet::kRare);
  unpin_library(file, PinnedSet::kHot);
}

void PinStore::drop_unclaimed_libraries() {
  std::lock_guard lock(mu_);
  std::vector<PinKey> unclaimed;
  for (const auto& [key, name] : pinned_libraries_)
    if (!claimed_.contains(key)) unclaimed.push_back(key);
  for (const auto& [file, set] : unclaimed) {
    spdlog::info("BPF pins: dropped the pinned {}probes on dev {} inode {}: no process maps that file now, or the "
                 "probe set leaves them out",
                 set == PinnedSet::kHot ? "hot-path " : "", file.dev, file.ino);
    unpin_library(file, set);
  }
}

PinReport PinStore::report() const {
  std::lock_guard lock(mu_);
  return report_;
}

}  // namespace gpuledger::probes
