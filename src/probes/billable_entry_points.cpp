#include "probes/billable_entry_points.h"

#include <regex>
#include <set>

namespace gpuledger::probes {

std::string entry_point_base(std::string_view name) {
  static const std::regex suffix("(_v[0-9]+)?(_ptds|_ptsz)?$");
  return std::regex_replace(std::string(name), suffix, "");
}

bool changes_a_bill(std::string_view base) {
  static const std::set<std::string, std::less<>> not_billed = {"cuLaunchHostFunc", "cuMemAllocHost",
                                                                "cuMemFreeHost"};
  if (not_billed.contains(base)) return false;
  static const std::regex billed(
      "cu(Launch[A-Za-z]*|GraphLaunch|Memcpy[A-Za-z0-9]*|Memset[A-Za-z0-9]*|MemAlloc[A-Za-z]*|MemFree[A-Za-z]*|"
      "MemCreate|MemRelease|Array(3D)?Create|ArrayDestroy|MipmappedArray(Create|Destroy)|[A-Za-z]*Synchronize|"
      "(Stream|Event)Query|FuncSetBlockShape|Ctx(Create|Destroy|PushCurrent|PopCurrent|SetCurrent)|"
      "DevicePrimaryCtxRetain)");
  return std::regex_match(base.begin(), base.end(), billed);
}

std::vector<std::string> unprobed_billable(const std::vector<ElfFunction>& functions,
                                           const std::vector<ProbeSpec>& plan) {
  std::set<uint64_t> probed;
  for (const auto& p : plan) probed.insert(p.file_offset);
  std::set<std::string> missing;
  for (const auto& f : functions)
    if (f.name.starts_with("cu") && changes_a_bill(entry_point_base(f.name)) && !probed.contains(f.file_offset))
      missing.insert(f.name);
  return {missing.begin(), missing.end()};
}

}  // namespace gpuledger::probes
