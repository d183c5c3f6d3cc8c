#pragma once
// Scripts for the NVML simulator (sim/nvml) used by several tests.
#include <cstdlib>
#include <string>

namespace gpuledger::device::test {

inline const char* kTwoGpuSimConfig = R"({
  "driver_version": "550.90.07",
  "devices": [
    {"uuid": "GPU-3f6a2c1e-8b4d-7e21-9c0a-5d1e2f3a4b5c", "name": "NVIDIA A100-SXM4-80GB",
     "pci_bus_id": "00000000:07:00.0", "minor": 0, "mig_mode": 0,
     "utilization": {"gpu": 97, "memory": 41},
     "memory": {"total": 85899345920, "used": 42949672960},
     "power_mw": 312614,
     "energy_mj": 98765432123,
     "compute_processes": [{"pid": 4242, "used_bytes": 40000000000},
                           {"pid": 4343, "used_bytes": null}],
     "mps_processes": [{"pid": 4444, "used_bytes": 1048576}],
     "process_utilization": [{"pid": 4242, "sm": 55, "mem": 20}, {"pid": 4444, "sm": 5, "mem": 1}]},
    {"uuid": "GPU-9e8d7c6b-5a49-3827-1605-f4e3d2c1b0a9", "name": "NVIDIA A100-SXM4-80GB",
     "pci_bus_id": "00000000:0F:00.0", "minor": 1, "mig_mode": 1,
     "utilization": "not_supported",
     "memory": {"total": 85899345920, "used": 10737418240},
     "compute_processes": [{"pid": 5000, "used_bytes": 10737418240, "gpu_instance_id": 1, "compute_instance_id": 0}],
     "process_utilization": [{"pid": 5000, "sm": 99, "mem": 99}]}
  ]
})";

inline void use_sim_config(const std::string& path) { ::setenv("GPULEDGER_NVML_SIM_CONFIG", path.c_str(), 1); }

}  // namespace gpuledger::device::test
