#include "report/report_choices.h"

#include "common/error.h"

namespace gpuledger::report {

GroupBy parse_group_by(const std::string& t) {
  if (t == "team") return GroupBy::kTeam;
  if (t == "namespace") return GroupBy::kNamespace;
  if (t == "pod") return GroupBy::kPod;
  if (t == "workload") return GroupBy::kWorkload;
  if (t == "gpu") return GroupBy::kGpu;
  if (t == "node") return GroupBy::kNode;
  if (t == "user") return GroupBy::kUser;
  if (t == "account") return GroupBy::kAccount;
  throw Error("--by: unknown grouping '" + t + "' (team, namespace, pod, workload, gpu, node, user or account)");
}

Format parse_format(const std::string& t) {
  if (t == "table") return Format::kTable;
  if (t == "csv") return Format::kCsv;
  if (t == "json") return Format::kJson;
  if (t == "html") return Format::kHtml;
  if (t == "focus") return Format::kFocus;
  throw Error("--format: unknown format '" + t + "' (table, csv, json, html or focus)");
}

std::string to_string(GroupBy by) {
  switch (by) {
    case GroupBy::kTeam: return "team";
    case GroupBy::kNamespace: return "namespace";
    case GroupBy::kPod: return "pod";
    case GroupBy::kWorkload: return "workload";
    case GroupBy::kGpu: return "gpu";
    case GroupBy::kNode: return "node";
    case GroupBy::kUser: return "user";
    case GroupBy::kAccount: return "account";
  }
  return "?";
}

}  // namespace gpuledger::report
