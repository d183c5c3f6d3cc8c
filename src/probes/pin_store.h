#pragma once
// The data plane's pins in bpffs, so counters, contexts, live allocations and
// the probes themselves outlive the agent (a restart, an upgrade, an OOM kill):
//
//   <root>/                             --bpf-pin-dir, default <bpffs>/gpuledger
//     <plane>/                          one per BPF object (cuda, nvidia_ioctl); flock'd by the agent
//       layout-<hash>/                  the map layout version (pin_layout_version)
//         workload_counters ...         every map of the program
//         links-<hash>/                 links made by one program build and configuration
//           process_exit                a tracepoint
//           <dev>-<ino>-<probes>-<links>/<k>  the uprobe links on one driver file: its rare calls
//           <dev>-<ino>-hot-<probes>-<links>/<k>  and its hot path, while the probe set is full
//
// A layout this build cannot take over (another version, a missing pin, a map
// whose type, key, value or flags differ) is removed and made anew, with the
// reason logged and kept for /metrics. Links made by another program build or
// configuration are dropped (the maps are kept); library links nobody claims at
// start (the file is no longer mapped) are dropped too. Everything offered from
// bpffs is checked for its kind before it is used: only root can write there,
// but a crash can leave anything half done.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "probes/mapped_file.h"

struct bpf_object;

namespace gpuledger::probes {

// The bpffs mount point from `mountinfo`; none: mounts one at /sys/fs/bpf and
// says so (within a container, that one lives only as long as the container).
std::string find_or_mount_bpffs(const std::string& mountinfo = "/proc/self/mountinfo");
// The bpffs mount point, if there is one (never mounts).
std::optional<std::string> find_bpffs(const std::string& mountinfo = "/proc/self/mountinfo");
// <bpffs>/gpuledger, where the agent pins by default; "" when no bpffs is
// mounted and `may_mount` is false.
std::string default_pin_dir(bool may_mount);
// Whether `path` (or its nearest existing parent) is on a bpffs.
bool on_bpffs(const std::string& path);
// Another agent holds the pins: this one must not start (two agents would
// each count every call).
class PinsHeld : public Error {
 public:
  using Error::Error;
};
// Creates `dir` (on bpffs) and takes its lock without waiting: the one agent
// that may use the pins there. Throws PinsHeld when another process holds
// it, Error when it cannot be made or locked.
UniqueFd lock_pin_dir(const std::string& dir);
// Unpins and removes everything under `path` and `path` itself; returns the
// number of pins removed (0 when nothing was there).
size_t remove_pin_tree(const std::string& path);

// The version of the map layout: derived from every map definition of the
// program (name, type, key and value size, flags) and a revision bumped by
// hand when a field's meaning changes, so an incompatible build never adopts.
std::string pin_layout_version(bpf_object* obj);
// The version of a program build and the settings baked into it: links made
// by another are not taken over.
std::string pin_links_version(const void* object, size_t size, const std::string& settings);

// What the start found, for the log, /metrics and /api/v1/workloads.
struct PinReport {
  bool enabled = false;
  std::string root;            // the plane's pin directory
  std::string layout;          // layout-<hash>
  bool adopted = false;        // maps taken over from an earlier agent
  std::string replaced;        // why an earlier layout or its links were replaced (a reason code), or ""
  size_t libraries_adopted = 0;  // driver files whose pinned probes were taken over
  // How long the pins found at start had had no agent (pin_heartbeat.h), when
  // longer than --orphaned-pins-after; 0 otherwise.
  int64_t orphaned_seconds = 0;
};

// A file's probes are pinned as two sets: the rare calls' (every probe set)
// and the hot path's (probes/probe_sets.h: the full set only), so a change of
// probe set attaches or detaches one and leaves the other's counts running.
enum class PinnedSet : uint8_t { kRare, kHot };

class PinStore;
// The pins of `plane` under `root` (empty: none). Another agent holding them
// throws PinsHeld; pins that cannot be made at all are logged and left out
// (attribution works without them; a restart then starts from zero).
std::unique_ptr<PinStore> open_pin_store(const std::string& root, const std::string& plane);

class PinStore {
 public:
  // The pins of one plane (a BPF object) under `root`; takes the plane's
  // lock: a second agent on the same pins throws Error.
  PinStore(const std::string& root, const std::string& plane);
  PinStore(const PinStore&) = delete;
  PinStore& operator=(const PinStore&) = delete;

  // Before a load: the first call decides whether the pinned layout of this
  // version can be taken over (replacing it when not); each call then points
  // the object's maps at the pinned ones. A pinned map whose capacity differs
  // from what is asked (--max-workloads) is kept as it is, and logged.
  void reuse_maps(bpf_object* obj);
  // After the load: pins the maps made anew, and opens the links directory of
  // this program build and configuration (`links_version`), dropping others.
  void pin_maps(bpf_object* obj, const std::string& links_version);
  // Pins a link under a name in the links directory, replacing the old one.
  void pin_link(const std::string& name, int link_fd);

  struct AdoptedLinks {
    std::vector<UniqueFd> links;
    size_t probes = 0;
  };
  // The pinned links of one set on a driver file, when an earlier agent
  // attached exactly `planned_probes` there; a partial, broken or other plan's
  // set (--launch-returns) is dropped (nullopt).
  std::optional<AdoptedLinks> adopt_library(const FileId& file, PinnedSet set, size_t planned_probes);
  void pin_library(const FileId& file, PinnedSet set, size_t probes, const std::vector<int>& link_fds);
  void unpin_library(const FileId& file, PinnedSet set);
  void unpin_library(const FileId& file);  // both sets
  // Drops the pinned links of files no one offered since the start.
  void drop_unclaimed_libraries();

  PinReport report() const;

 private:
  void decide(bpf_object* obj);
  void replace(const std::string& reason, const std::string& why);
  using PinKey = std::pair<FileId, PinnedSet>;
  std::string library_dir(const PinKey& key, size_t probes, size_t links) const;

  mutable std::recursive_mutex mu_;  // the attacher's threads and /metrics
  std::string root_;
  UniqueFd lock_;
  std::string layout_dir_, links_dir_;
  bool decided_ = false;
  PinReport report_;
  std::map<PinKey, std::string> pinned_libraries_;  // file and set -> its directory name, as found at start
  std::map<PinKey, bool> claimed_;
};

}  // namespace gpuledger::probes
