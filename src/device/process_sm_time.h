#pragma once
// SM time per process from NVML's per-process utilisation samples
// (nvmlDeviceGetProcessUtilization), integrated: each sample says what share
// of the SMs a process held over one sampling period, so its SM-seconds are
// smUtil/100 x that period. The client reads only samples newer than its
// last-seen timestamp (the cursor), so each sample is added exactly once; this
// keeps the running totals the ledger takes deltas of (process_sm_meter.h).
//
// The sampling period of a device is the median gap between the distinct
// timestamps of one read (all of a device's processes are sampled at the same
// instants); a read with one timestamp uses the device's last period, else the
// gap from the cursor, else 1 s. Only ratios between tenants decide a split,
// so a wrong period scales everyone alike.
//
// Bounded: a process that has had no sample for kKeepPolls reads is dropped
// (a process that exited keeps its total that long, so the ledger sees its
// last samples); at most kMaxProcesses per device (the smallest totals go
// first, said in dropped()).
//
// Whether the samples split a GPU between processes at all: NVIDIA's driver
// 580 on an H200 keeps one sample per period for the whole GPU, given to one
// of its processes with the whole GPU's utilisation (docs/gpu-validation.md),
// so two tenants time-slicing it are not weighed by their work. A read in
// which two processes' samples interleave (A, B, A by time) with no instant
// shared says so; a read with two processes at one instant says the samples
// are per process. The first kind seen is kept; "per process" wins.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::device {

class ProcessSmTime {
 public:
  static constexpr unsigned kKeepPolls = 60;
  static constexpr size_t kMaxProcesses = 4096;

  struct Sample {
    uint32_t pid = 0;
    unsigned long long timestamp_us = 0;
    unsigned sm_percent = 0;  // 0..100
  };
  // One read of a device: its samples newer than `cursor` (0: the first read).
  void add(const std::string& uuid, unsigned long long cursor, const std::vector<Sample>& samples);
  // The device's SM-seconds per pid to date; ages the entries (call once per poll).
  std::map<uint32_t, double> totals(const std::string& uuid);
  uint64_t dropped() const { return dropped_; }
  // The timestamp of the pid's newest sample on the device (0: none kept):
  // whose the samples were when the pid was reused (node/process_owners.h).
  unsigned long long last_sample_us(const std::string& uuid, uint32_t pid) const;
  // true: the device's samples split it between processes; false: one
  // process per sampling period; nullopt: not seen yet (never two at once).
  std::optional<bool> splits_processes(const std::string& uuid) const;

 private:
  struct Entry {
    double seconds = 0;
    unsigned quiet_polls = 0;
    unsigned long long last_us = 0;
  };
  struct Device {
    std::map<uint32_t, Entry> processes;
    std::optional<double> period_s;
    bool shared_instant = false;  // two processes sampled at one instant
    bool interleaved = false;     // two processes taking turns, never at one instant
  };
  static void judge_shape(Device& d, const std::vector<Sample>& samples);
  std::map<std::string, Device> devices_;
  uint64_t dropped_ = 0;
};

}  // namespace gpuledger::device
