#pragma once
// The --by and --format choices of every report (store, fleet database,
// Prometheus), as the CLI spells them.
#include <string>

namespace gpuledger::report {

// kNode: fleet reports only. kUser, kAccount: a Slurm job's user and account
// (store schema 10); every other workload is "(no Slurm user)" / "(no Slurm account)".
enum class GroupBy { kTeam, kNamespace, kPod, kWorkload, kGpu, kNode, kUser, kAccount };
enum class Format { kTable, kCsv, kJson, kHtml, kFocus };
GroupBy parse_group_by(const std::string& text);  // throws Error
Format parse_format(const std::string& text);     // throws Error
std::string to_string(GroupBy by);

}  // namespace gpuledger::report
