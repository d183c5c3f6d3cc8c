#pragma once
// Where NVML stands on this node: the case NvmlClient::open found, kept in the
// device plane's health, logged, served as gpuledger_nvml_state and judged by
// `gpuledger doctor`.
#include <string_view>

namespace gpuledger::device {

enum class NvmlStatus {
  kUp,                 // loaded and initialised
  kDisabled,           // not to be loaded (--no-nvml)
  kLibraryAbsent,      // dlopen failed
  kLibraryIncomplete,  // loads, but lacks nvmlInit_v2 and the other required entry points
  kDriverNotLoaded,    // NVML present; nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED
  kInitFailed,         // NVML present; nvmlInit_v2 failed otherwise
};
// "up", "disabled", "library_absent", "library_incomplete", "driver_not_loaded", "init_failed".
std::string_view nvml_status_name(NvmlStatus status);
// Every status, in declaration order (for a state-set metric).
inline constexpr NvmlStatus kNvmlStatuses[] = {NvmlStatus::kUp,
                                               NvmlStatus::kDisabled,
                                               NvmlStatus::kLibraryAbsent,
                                               NvmlStatus::kLibraryIncomplete,
                                               NvmlStatus::kDriverNotLoaded,
                                               NvmlStatus::kInitFailed};

}  // namespace gpuledger::device
