#pragma once
// The HTML report's charts: cost over time by team, cost against efficiency,
// and idle share of cost. Each is drawn to fit its box at any width (an SVG
// that scales with its viewBox, in a box that scrolls on its own when the page
// is narrower than the chart can read), with a time axis that fits the range
// (chart_time.h) and its legend as HTML below it, so names are never cut.
#include <functional>
#include <string>

#include "report/report.h"

namespace gpuledger::report {

// What people read for an account key ("__idle__" -> "Idle (...)"): the
// report's own naming, passed in so every view names rows alike.
using AccountName = std::function<std::string(const std::string& key)>;

// The three charts, each under its <h2>.
std::string html_charts(const Report& r, const AccountName& name);

// The CSS the charts and legends need, and the page's layout at any width: wide
// tables scroll in their own box, the summary's facts stack on a phone, long
// unbroken names wrap instead of widening the page.
const char* charts_and_layout_style();

}  // namespace gpuledger::report
