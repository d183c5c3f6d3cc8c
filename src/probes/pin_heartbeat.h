#pragma once
// The pins' heartbeat: the modification time of the pin directory
// (--bpf-pin-dir), touched by the running agent every few seconds. Pins whose
// heartbeat is old were left by an agent that is gone (SIGKILL, an OOM kill, a
// node whose agent was removed without `gpuledger uninstall`): their probes
// still trap every CUDA call on the node and nobody reads what they count.
// bpffs keeps a directory's times like any file system; the pins themselves
// (and so the heartbeat) do not outlive a reboot.
#include <chrono>
#include <optional>
#include <string>

namespace gpuledger::probes {

// How long ago an agent last beat on the pins under `dir`; nullopt when
// nothing is pinned there (no directory, or only empty directories).
std::optional<std::chrono::seconds> pins_heartbeat_age(const std::string& dir);
// The agent is alive and using the pins under `dir` (best effort).
void beat_pins_heartbeat(const std::string& dir);

}  // namespace gpuledger::probes
