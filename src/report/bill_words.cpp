#include "report/bill_words.h"

#include "common/duration_text.h"
#include "common/inert_text.h"

#include "report/report_text.h"
#include "report/special_accounts.h"
#include "report/report_time.h"

namespace gpuledger::report {

namespace {
std::string span_text(int64_t seconds) { return duration_words(seconds); }

template <typename F>
bool any_unknown(const Report& r, F has) {
  for (const auto& row : r.rows)
    if (!has(row)) return true;
  return !has(r.total) && !r.rows.empty();
}
}  // namespace

std::string group_title(GroupBy by) {
  switch (by) {
    case GroupBy::kTeam: return "Team";
    case GroupBy::kNamespace: return "Namespace";
    case GroupBy::kPod: return "Pod";
    case GroupBy::kWorkload: return "Workload";
    case GroupBy::kGpu: return "GPU";
    case GroupBy::kNode: return "Node";
    case GroupBy::kUser: return "Slurm user";
    case GroupBy::kAccount: return "Slurm account";
  }
  return "Group";
}

std::vector<std::pair<std::string, std::string>> special_accounts_of(const Report& r) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& row : r.rows)
    if (std::string meaning = special_account_meaning(row.key); !meaning.empty()) out.emplace_back(row.key, meaning);
  return out;
}

std::string no_windows_sentence(const Report& r) {
  return "No windows in this range: the store holds no accounting window that starts between " + format_rfc3339(r.from) +
         " and " + format_rfc3339(r.to) + ", so nothing was billed (0 " + r.currency +
         "); see Coverage for why.";
}

std::vector<std::string> unknown_explanations(const Report& r) {
  std::vector<std::string> out;
  if (any_unknown(r, [](const Row& x) { return x.efficiency.sm_active.has_value(); }))
    out.push_back("unknown SM, occupancy, tensor or DRAM activity: none of the row's windows had a device reading "
                  "(DCGM or NVML) for it; its busy time then comes from the eBPF kernel spans.");
  if (any_unknown(r, [](const Row& x) {
        return x.efficiency_of_held.sm_active.has_value() || !x.efficiency.sm_active.has_value();
      }))
    out.push_back("unknown of held: the row held no GPU (its share of the GPUs it used was 0), so there is nothing "
                  "to divide by; its part of the GPU is still shown.");
  if (any_unknown(r, [](const Row& x) { return x.energy_millijoules.has_value(); }))
    out.push_back("unknown energy and carbon: none of the row's windows had an energy counter or a power reading; "
                  "carbon also needs carbon_g_per_kwh in the price list.");
  else if (any_unknown(r, [](const Row& x) { return x.carbon_grams.has_value(); }))
    out.push_back("unknown carbon: no carbon_g_per_kwh was configured when its windows were written.");
  return out;
}

std::vector<std::string> coverage_lines(const Report& r) {
  const Coverage& c = r.coverage;
  std::vector<std::string> out;
  out.push_back(std::to_string(c.windows) + " windows on " + std::to_string(c.gpus.size()) + " GPU slots, " +
                fixed(c.window_gpu_hours, 2) + " GPU-hours.");
  auto add = [&](int64_t seconds, const std::string& what) {
    if (seconds > 0) out.push_back(span_text(seconds) + " " + what);
  };
  add(c.seconds_watched, "watched by a running agent.");
  add(c.seconds_agent_down,
      "agent down or stalled: billed afterwards from the kernel counters (backfill), without device readings.");
  add(c.seconds_before_agent, "before the agent started: the store has no window before " +
                                  format_rfc3339(r.from + c.seconds_before_agent) + ", so nothing is billed for it.");
  add(c.seconds_no_data, "no data: no window at all, though the agent had started (it was stopped and did not "
                         "backfill, or the windows were deleted by retention).");
  add(c.seconds_future, "not yet: after this bill was made (partial period).");
  if (c.windows_without_device > 0)
    out.push_back(std::to_string(c.windows_without_device) + " of the windows had no device reading (DCGM or NVML): "
                  "their busy time is the eBPF span estimate and their efficiency unknown.");
  if (c.hourly_windows > 0)
    out.push_back(std::to_string(c.hourly_windows) + " windows are hourly roll-ups of older minute windows.");
  return out;
}

std::string wrap_text(const std::string& text, size_t width, const std::string& first, const std::string& rest) {
  std::string out, line = first;
  size_t line_start_len = first.size();
  auto flush = [&] {
    out += line + "\n";
    line = rest;
    line_start_len = rest.size();
  };
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    i = j + 1;
    if (word.empty()) continue;
    const bool empty_line = line.size() == line_start_len;
    if (!empty_line && line.size() + 1 + word.size() > width) flush();
    while (line.size() + (line.size() > line_start_len) + word.size() > width && width > line_start_len + 1) {
      // A word longer than the line (a JSON price list): cut it, at a character boundary.
      if (line.size() > line_start_len) flush();
      const size_t cut = inert_cut(word, width - line.size());  // whole escapes and characters
      if (cut == 0) break;
      line += word.substr(0, cut);
      word = word.substr(cut);
      flush();
    }
    if (line.size() > line_start_len) line += ' ';
    line += word;
  }
  if (line.size() > line_start_len || out.empty()) out += line + "\n";
  return out;
}

}  // namespace gpuledger::report
