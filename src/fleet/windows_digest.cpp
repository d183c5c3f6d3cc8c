#include "fleet/windows_digest.h"

#include <algorithm>
#include <numeric>

#include "fleet/fleet_sql.h"
#include "fleet/page_receiver.h"
#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

WindowsDigest::WindowsDigest() {
  sha_.add("gpuledger fleet windows v1\n");
}

void WindowsDigest::add_window(const PgResult& r, int row, int digest_column) {
  row_.clear();
  for (const int c : {0, 1, 2, 3, digest_column}) {
    row_ += r.view(row, c);
    row_ += '\x1f';
  }
  row_ += '\n';
  sha_.add(row_);
}

std::string WindowsDigest::finish(std::string_view totals) {
  sha_.add(totals);
  return "sha256:" + sha_.hex();
}

std::vector<std::pair<int64_t, int64_t>> digest_ragged_ends(int64_t from, int64_t to) {
  return plan_range(from, to, Period::kMonth).ragged;
}

// In (period_start, cluster, node, gpu_uuid) order, as one ORDER BY gave
// them: a start's rows at a time (a period start and a GPU are one row),
// asked for and received (page_receiver.h) while the last start's are sorted
// here (COLLATE "C": byte order, as std::string_view compares). PostgreSQL
// sorted a month to date's 208,000 rows more slowly than it sent them, and
// the digest was a sixth of the report (docs/performance.md, "Where a month
// to date's time goes").
std::string whole_periods_text(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter) {
  PageReceiver ahead(db);
  auto totals_of = [&](Period p, int64_t start) {
    ahead.send(
        "SELECT t.period, t.period_start, t.cluster, t.node, t.gpu_uuid, t.windows, t.cost_micros, t.digests "
        "FROM gpuledger.window_totals t WHERE " +
        whole_periods(db, p, {std::to_string(start)}, filter));
  };
  std::vector<std::pair<Period, int64_t>> starts;
  for (const auto& [p, texts] : plan_range(from, to, Period::kMonth).whole) {
    const size_t first = starts.size();
    for (const auto& t : texts) starts.emplace_back(p, std::stoll(t));
    std::sort(starts.begin() + static_cast<long>(first), starts.end());
  }
  if (!starts.empty()) totals_of(starts[0].first, starts[0].second);
  std::string text;
  for (size_t k = 0; k < starts.size(); ++k) {
    const PgResult r = ahead.take();
    if (k + 1 < starts.size()) totals_of(starts[k + 1].first, starts[k + 1].second);
    std::vector<int> order(static_cast<size_t>(r.rows()));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      for (int c = 2; c < 5; ++c)
        if (const int cmp = r.view(a, c).compare(r.view(b, c)); cmp != 0) return cmp < 0;
      return false;
    });
    for (const int i : order) {
      for (int c = 0; c < r.columns(); ++c) {
        text += r.view(i, c);
        text += '\x1f';
      }
      text += '\n';
    }
  }
  return text;
}

}  // namespace gpuledger::fleet
