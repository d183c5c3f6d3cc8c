#pragma once
// MIG profile tables: which GPU instances a GPU model can be cut into, for
// rightsizing (report/rightsizing.h). Built in, from NVIDIA's MIG user guide
// ("Supported MIG Profiles"): the GPU-instance profiles of each model, named
// "<n>g.<m>gb": n of the GPU's compute slices, m GB of its memory.
//
//   A100 40GB   1g.5gb  1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb
//   A100 80GB   1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb
//   H100 80GB   1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb
//   H100 94GB   1g.12gb 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb   (H100 NVL)
//   H200 141GB  1g.18gb 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb
//   B200        1g.23gb 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb
// All of seven slices. A profile's memory is the size its name states, in GB
// (10^9 bytes): NVIDIA's published figure, and never more than the instance
// really has (a 1g.10gb of an H100 has 9.75 GiB, 10.47 GB).
//
// Models are matched on the name NVML and DCGM report ("NVIDIA H100 80GB
// HBM3"): a YAML table's key first (an exact match, else the longest key the
// name contains, ignoring case), else the built-in families by their tokens
// (e.g. "H100" and "NVL", or "94GB", for the 94 GB H100; a token must not be
// the tail of a longer one: "GH200" is not an "H200").
//
// YAML (the `rightsizing.mig_profiles` of the agent's configuration file):
//   mig_profiles:
//     "A30": {slices: 4, profiles: [1g.6gb, 2g.12gb, 4g.24gb]}
//     "NVIDIA H100 80GB HBM3": [1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb]   # slices: 7
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::ledger {

struct MigProfile {
  std::string name;           // "1g.10gb"
  int compute_slices = 0;     // n of "<n>g."
  uint64_t memory_bytes = 0;  // m GB of ".<m>gb", x 10^9
  bool operator==(const MigProfile&) const = default;
};

struct MigTable {
  std::string model;  // the family ("H100 80GB") or the YAML key
  int slices = 7;     // the GPU's compute slices
  std::vector<MigProfile> profiles;  // smallest first: by compute slices, then memory
  bool operator==(const MigTable&) const = default;
};

struct MigTables {
  std::vector<MigTable> custom;  // from YAML, in file order
  // The table for a GPU model name; nullopt: not MIG-capable as far as known.
  std::optional<MigTable> for_model(const std::string& model) const;
};

// "1g.10gb" -> {1g.10gb, 1, 10e9}; "2g.47gb" etc. nullopt for anything else
// (a compute-instance "1c.2g.20gb", "+me" media extensions included: whole
// GPU instances only).
std::optional<MigProfile> parse_mig_profile(const std::string& name);
// The built-in tables (above), in matching order.
const std::vector<MigTable>& builtin_mig_tables();

}  // namespace gpuledger::ledger
