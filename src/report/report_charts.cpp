#include "report/report_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "report/chart_time.h"
#include "report/report_text.h"

namespace gpuledger::report {

namespace {

// Nine colours for the largest series; the rest share one grey ("Other").
const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f"};
constexpr size_t kColours = sizeof kPalette / sizeof kPalette[0];
constexpr const char* kOtherColour = "#bab0ac";

std::string colour(size_t i) { return i < kColours ? kPalette[i] : kOtherColour; }

// A chart is drawn twice, for a wide box and for a phone's (CSS shows one), so
// that text stays readable and ticks fit at either: the SVG scales to its box,
// and these are proportions and text sizes, not pixels on the screen.
struct Frame {
  const char* id_suffix;  // "" (wide) or "-narrow"
  const char* css_class;  // "wide" or "narrow"
  double W, H, L, R, T, B;
  double plot_w() const { return W - L - R; }
  double plot_h() const { return H - T - B; }
  double axis_y() const { return T + plot_h(); }
  int max_time_ticks() const { return static_cast<int>(plot_w() / 90); }
  bool narrow() const { return W < 500; }
};
constexpr Frame kWide{"", "wide", 720, 300, 84, 36, 14, 58};
constexpr Frame kNarrow{"-narrow", "narrow", 380, 290, 64, 22, 12, 58};

std::string svg_open(const Frame& f, const char* id, const std::string& label) {
  std::ostringstream s;
  s << "<svg id=\"" << id << f.id_suffix << "\" class=\"chart " << f.css_class
    << "\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << f.W << " " << f.H << "\" role=\"img\" aria-label=\""
    << html_escape(label) << "\">";
  return s.str();
}

// A "nice" step (1, 2 or 5 x 10^k) that cuts [0, max] into about `ticks` parts.
double nice_step(double max, int ticks) {
  if (max <= 0) return 1;
  const double raw = max / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

std::string tick_label(double v, double step) {
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fixed(v, std::clamp(decimals, 0, 6));
}

// The y axis from 0 to y_max (currency units) with grid lines; returns its top
// (a whole number of steps).
double y_axis(std::ostringstream& s, const Frame& f, double y_max, const std::string& title) {
  const double step = nice_step(y_max, f.narrow() ? 4 : 5);
  const double top = std::max(step, std::ceil(y_max / step - 1e-9) * step);
  for (int i = 0; i * step <= top + step / 2; ++i) {
    const double v = i * step, y = f.axis_y() - f.plot_h() * v / top;
    s << "<line class=\"grid\" x1=\"" << f.L << "\" y1=\"" << fixed(y, 1) << "\" x2=\"" << f.L + f.plot_w()
      << "\" y2=\"" << fixed(y, 1) << "\" stroke=\"#e4e4e4\"/><text class=\"tick y-tick\" x=\"" << f.L - 5
      << "\" y=\"" << fixed(y + 4, 1) << "\" text-anchor=\"end\" font-size=\"11\">" << tick_label(v, step) << "</text>";
  }
  s << "<line x1=\"" << f.L << "\" y1=\"" << f.T << "\" x2=\"" << f.L << "\" y2=\"" << f.axis_y()
    << "\" stroke=\"#333\"/><line x1=\"" << f.L << "\" y1=\"" << f.axis_y() << "\" x2=\"" << f.L + f.plot_w()
    << "\" y2=\"" << f.axis_y() << "\" stroke=\"#333\"/>";
  const double mid = f.T + f.plot_h() / 2;
  s << "<text class=\"axis-title\" x=\"12\" y=\"" << mid << "\" font-size=\"11\" text-anchor=\"middle\" "
    << "transform=\"rotate(-90 12 " << mid << ")\">" << html_escape(title) << "</text>";
  return top;
}

// An x tick: a mark and its label (and, where the date changes, a second line).
// A label at the plot's edge is moved in (never its mark), so that it is never
// cut by the drawing's border (half a label: about 3.4 units a character at 11).
void x_tick(std::ostringstream& s, const Frame& f, double x, const std::string& label, const std::string& context) {
  const double half = 3.4 * static_cast<double>(std::max(label.size(), context.size())) + 2;
  const double tx = std::clamp(x, half, f.W - half);
  s << "<line x1=\"" << fixed(x, 1) << "\" y1=\"" << f.axis_y() << "\" x2=\"" << fixed(x, 1) << "\" y2=\""
    << f.axis_y() + 5 << "\" stroke=\"#333\"/><text class=\"tick x-tick\" x=\"" << fixed(tx, 1) << "\" y=\""
    << f.axis_y() + 17 << "\" text-anchor=\"middle\" font-size=\"11\">" << html_escape(label);
  if (!context.empty())
    s << "<tspan class=\"tick-context\" x=\"" << fixed(tx, 1) << "\" dy=\"13\">" << html_escape(context) << "</tspan>";
  s << "</text>";
}

void x_title(std::ostringstream& s, const Frame& f, const std::string& title) {
  s << "<text class=\"axis-title\" x=\"" << f.L + f.plot_w() / 2 << "\" y=\"" << f.H - 6
    << "\" text-anchor=\"middle\" font-size=\"11\">" << html_escape(title) << "</text>";
}

void empty_note(std::ostringstream& s, const Frame& f, const std::string& text) {
  s << "<text class=\"empty\" x=\"" << f.L + f.plot_w() / 2 << "\" y=\"" << f.T + f.plot_h() / 2
    << "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#777\">" << html_escape(text) << "</text>";
}

struct LegendItem {
  std::string colour, text;
};

// The legend as HTML: it wraps with the page and shows every name in full.
std::string legend(const char* id, const std::vector<LegendItem>& items) {
  if (items.empty()) return "";
  std::ostringstream s;
  s << "<ul class=\"legend\" id=\"" << id << "\">";
  for (const auto& it : items)
    s << "<li><span class=\"swatch\" style=\"background:" << it.colour << "\"></span>" << html_escape(it.text)
      << "</li>";
  s << "</ul>";
  return s.str();
}

// Teams by their total over the range (largest first); past the palette's
// size they are drawn as one "Other" series.
std::vector<std::string> teams_in_series(const Report& r) {
  std::map<std::string, int64_t> totals;
  for (const auto& [b, m] : r.cost_by_team_over_time)
    for (const auto& [t, v] : m) totals[t] += v;
  std::vector<std::string> teams;
  for (const auto& [t, v] : totals) teams.push_back(t);
  std::stable_sort(teams.begin(), teams.end(),
                   [&](const std::string& a, const std::string& b) { return totals[a] > totals[b]; });
  return teams;
}

std::string cost_over_time(const Report& r, const AccountName& name) {
  const std::vector<std::string> teams = teams_in_series(r);
  std::map<std::string, size_t> series_of;  // team -> its colour (kColours: "Other")
  for (size_t i = 0; i < teams.size(); ++i)
    series_of[teams[i]] = teams.size() > kColours + 1 ? std::min(i, kColours) : i;
  const int64_t span = std::max<int64_t>(1, r.to - r.from);
  const int64_t bucket = std::max<int64_t>(1, r.bucket_seconds);
  // Per bucket, per series: a stack whose height never depends on rounding.
  std::vector<std::pair<int64_t, std::map<size_t, int64_t>>> stacks;
  int64_t max_total = 0;
  for (const auto& [b, m] : r.cost_by_team_over_time) {
    std::map<size_t, int64_t> stack;
    int64_t sum = 0;
    for (const auto& [t, v] : m) {
      stack[series_of[t]] += v;
      sum += v;
    }
    max_total = std::max(max_total, sum);
    stacks.emplace_back(b, std::move(stack));
  }
  const size_t others = teams.size() > kColours + 1 ? teams.size() - kColours : 0;
  std::ostringstream s;
  s << "<div class=\"chart-box\">";
  for (const Frame& f : {kWide, kNarrow}) {
    s << svg_open(f, "chart-cost-over-time", "Cost over time by team");
    const double top = y_axis(s, f, static_cast<double>(max_total) / 1e6,
                              "Cost per " + duration_words_short(bucket) + " (" + r.currency + ")");
    auto x_of = [&](int64_t t) {
      return f.L + f.plot_w() * static_cast<double>(t - r.from) / static_cast<double>(span);
    };
    for (const auto& tick : time_ticks(r.from, r.to, f.max_time_ticks()))
      x_tick(s, f, x_of(tick.t), tick.label, tick.context);
    x_title(s, f, "Time (UTC)");
    for (const auto& [b, stack] : stacks) {
      const double x0 = x_of(std::max(b, r.from)), x1 = x_of(std::min(b + bucket, r.to));
      const double gap = (x1 - x0) > 4 ? 1 : 0;
      double y = f.axis_y();
      for (const auto& [series, micros] : stack) {
        if (micros <= 0) continue;
        const double h = f.plot_h() * (static_cast<double>(micros) / 1e6) / top;
        y -= h;
        const std::string who = series == kColours && others ? "Other (" + std::to_string(others) + ")"
                                                             : name(teams[series]);
        s << "<rect class=\"bar\" x=\"" << fixed(x0 + gap, 2) << "\" y=\"" << fixed(y, 2) << "\" width=\""
          << fixed(std::max(0.5, x1 - x0 - 2 * gap), 2) << "\" height=\"" << fixed(h, 2) << "\" fill=\""
          << colour(series) << "\"><title>" << html_escape(who) << ", " << bucket_range_text(b, bucket) << ": "
          << money_cents(micros) << " " << html_escape(r.currency) << "</title></rect>";
      }
    }
    if (stacks.empty()) empty_note(s, f, "No cost in this range");
    s << "</svg>";
  }
  s << "</div>";
  std::vector<LegendItem> items;
  for (size_t i = 0; i < teams.size() && (others == 0 || i < kColours); ++i) items.push_back({colour(i), name(teams[i])});
  if (others) {
    std::string names;
    for (size_t i = kColours; i < teams.size(); ++i) names += (names.empty() ? "" : ", ") + name(teams[i]);
    items.push_back({kOtherColour, "Other (" + std::to_string(others) + ": " + names + ")"});
  }
  return s.str() + legend("legend-cost-over-time", items);
}

// Points are numbered by rank (cost); the names are in the legend below, so
// labels never overlap however close the points are.
std::string cost_vs_efficiency(const Report& r, const AccountName& name) {
  int64_t max_cost = 0;
  for (const auto& row : r.rows) max_cost = std::max(max_cost, row.cost_total_micros());
  std::ostringstream s;
  std::vector<LegendItem> items;
  s << "<div class=\"chart-box\">";
  for (const Frame& f : {kWide, kNarrow}) {
    s << svg_open(f, "chart-cost-vs-efficiency", "Cost against SM active");
    const double top = y_axis(s, f, static_cast<double>(max_cost) / 1e6, "Total cost (" + r.currency + ")");
    const int every = f.narrow() ? 25 : 20;
    for (int p = 0; p <= 100; p += every) x_tick(s, f, f.L + f.plot_w() * p / 100.0, std::to_string(p) + "%", "");
    x_title(s, f, f.narrow() ? "SM active (time the GPU's cores were busy)"
                             : "SM active (share of time the GPU's cores were busy)");
    items.clear();
    for (size_t i = 0; i < r.rows.size(); ++i) {
      const Row& row = r.rows[i];
      if (!row.efficiency.sm_active) continue;
      const double x = f.L + f.plot_w() * std::clamp(*row.efficiency.sm_active, 0.0, 1.0);
      const double y = f.axis_y() - f.plot_h() * (static_cast<double>(row.cost_total_micros()) / 1e6) / top;
      const std::string c = colour(i % kColours);
      s << "<circle class=\"point\" cx=\"" << fixed(x, 2) << "\" cy=\"" << fixed(y, 2) << "\" r=\"7\" fill=\"" << c
        << "\"><title>" << html_escape(name(row.key)) << ": " << money_cents(row.cost_total_micros()) << " "
        << html_escape(r.currency) << ", SM active " << pct(row.efficiency.sm_active) << "</title></circle>";
      s << "<text x=\"" << fixed(x, 2) << "\" y=\"" << fixed(y + 3, 2)
        << "\" text-anchor=\"middle\" font-size=\"9\" fill=\"#fff\">" << i + 1 << "</text>";
      items.push_back({c, std::to_string(i + 1) + ". " + name(row.key)});
    }
    if (items.empty()) empty_note(s, f, f.narrow() ? "No device readings: efficiency unknown"
                                                    : "No device readings in this range: efficiency is unknown");
    s << "</svg>";
  }
  s << "</div>";
  return s.str() + legend("legend-cost-vs-efficiency", items);
}

// A bar per row, in HTML: the names wrap at any width and are never cut.
std::string idle_share(const Report& r, const AccountName& name) {
  std::ostringstream s;
  s << "<div id=\"chart-idle-share\" class=\"hbars\" role=\"img\" aria-label=\"Idle share of cost\">";
  for (const auto& row : r.rows) {
    const double total = static_cast<double>(row.cost_total_micros());
    const double share = total > 0 ? static_cast<double>(row.cost_idle_micros) / total : 0;
    const std::string percent = fixed(share * 100, 1) + "%";
    s << "<div class=\"hbar\"><span class=\"hbar-name\">" << html_escape(name(row.key))
      << "</span><span class=\"hbar-track\"><span class=\"idle\" style=\"width:" << fixed(share * 100, 2)
      << "%\" title=\"" << html_escape(name(row.key)) << ": idle " << percent << " of its cost\"></span></span>"
      << "<span class=\"hbar-value\">" << percent << "</span></div>";
  }
  if (r.rows.empty()) s << "<p class=\"empty\">No cost in this range</p>";
  s << "<p class=\"hbar-caption\"><small>Idle cost as a share of each row's total</small></p></div>";
  return s.str();
}

}  // namespace

std::string html_charts(const Report& r, const AccountName& name) {
  return "<h2>Cost over time by team</h2>\n" + cost_over_time(r, name) + "\n<h2>Cost against efficiency</h2>\n" +
         cost_vs_efficiency(r, name) + "\n<h2>Idle share of cost</h2>\n" + idle_share(r, name) + "\n";
}

const char* charts_and_layout_style() {
  return
      // Wide tables scroll in their own box; the page never scrolls sideways.
      "table{display:block;max-width:100%;overflow-x:auto}"
      "dl.facts{grid-template-columns:minmax(0,max-content) minmax(0,1fr)}dd,td,li,p{overflow-wrap:anywhere}"
      "td,th{overflow-wrap:normal}"
      // One drawing of each chart shows: the wide one, or on a phone the narrow one.
      ".chart-box{max-width:900px}.chart-box svg{display:block;width:100%;height:auto}.chart-box svg.narrow{display:none}"
      "ul.legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px;"
      "max-width:900px}ul.legend li{display:flex;align-items:baseline;gap:6px;min-width:0}"
      ".swatch{display:inline-block;flex:none;width:11px;height:11px;border-radius:2px}"
      ".hbars{max-width:900px;font-size:13px}.hbar{display:grid;grid-template-columns:minmax(6em,2fr) 3fr 4.5em;"
      "gap:8px;align-items:center;margin:3px 0}.hbar-name{min-width:0}.hbar-track{background:#f0f0f0;height:14px}"
      ".hbar-track .idle{display:block;height:100%;background:#e15759}.hbar-value{text-align:right}"
      "@media (max-width:640px){body{margin:12px auto;padding:0 12px}dl.facts{grid-template-columns:minmax(0,1fr)}"
      "dl.facts dd{margin-bottom:6px}.big{font-size:24px}h1{font-size:24px}"
      ".chart-box svg.wide{display:none}.chart-box svg.narrow{display:block}"
      ".hbar{grid-template-columns:minmax(0,1fr) 4.5em}.hbar-track{grid-column:1/-1;grid-row:2}}";
}

}  // namespace gpuledger::report
