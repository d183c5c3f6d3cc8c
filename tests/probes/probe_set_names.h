#pragma once
// An independent rule on the names, for the probe-set tests: whether a CUDA
// driver or runtime entry point (any form: cuMemcpy2DAsync_v2_ptsz) is called
// per unit of work - launches of every form, copies, memsets, waits,
// completion queries, event records. Written apart from the table in
// probes/probe_sets.cpp on purpose: the tests check one against the other.
#include <regex>
#include <string>

#include "probes/billable_entry_points.h"

namespace gpuledger::probes {

inline bool called_per_unit_of_work(const std::string& name) {
  static const std::regex hot(
      "cu(da)?(Launch[A-Za-z]*|GraphLaunch|Memcpy[A-Za-z0-9]*|Memset[A-Za-z0-9]*|[A-Za-z]*Synchronize|"
      "(Stream|Event)Query|EventRecord[A-Za-z]*|FuncSetBlockShape)");
  return std::regex_match(entry_point_base(name), hot);
}

}  // namespace gpuledger::probes
