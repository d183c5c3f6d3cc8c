// The HTML report's layout as a reader sees it: headless Chromium, driven over
// the DevTools pipe (report_layout.mjs), shows the bill of a 40-second range,
// 30 seconds, five minutes, a day and a month at a desktop's width (1280) and a phone's
// (390), and measures it: the page never scrolls sideways, the summary fits,
// wide tables and charts scroll in their own boxes, time ticks are round,
// distinct and apart, bucket titles name a real length, legends are whole.
// GL_REPORT_SHOTS=DIR also writes screenshots of each page's summary and
// charts there (docs/report-html.md: how docs/images/ was made).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "bpf_requirement.h"  // running_in_ci()
#include "cli_process.h"
#include "ledger/window_split.h"
#include "report/report.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kChromium = "/usr/bin/chromium";
constexpr const char* kLongTeam = "research-and-development-computer-vision-foundation-models-europe-west";

struct Scene {
  std::string name;
  int64_t from, to, window;
  std::string bucket_title;             // the time chart's y-axis title
  std::vector<std::string> wide_ticks;    // its x ticks at 1280 px: label and date line, as the DOM's text
  std::vector<std::string> narrow_ticks;  // at 390 px (the phone's drawing)
};

const std::vector<Scene>& scenes() {
  static const std::vector<Scene> all = {
      {"40s", 1796060820, 1796060860, 5, "Cost per 5 s (USD)",
       {"17:47:00Nov 30", "17:47:10", "17:47:20", "17:47:30", "17:47:40"},
       {"17:47:00Nov 30", "17:47:15", "17:47:30"}},
      // Ends on a tick to the second: its label at the drawing's right edge.
      {"30s", 1796060820, 1796060850, 5, "Cost per 5 s (USD)",
       {"17:47:00Nov 30", "17:47:10", "17:47:20", "17:47:30"},
       {"17:47:00Nov 30", "17:47:15", "17:47:30"}},
      {"5min", 1796060700, 1796061000, 10, "Cost per 10 s (USD)",
       {"17:45Nov 30", "17:46", "17:47", "17:48", "17:49", "17:50"},
       {"17:46Nov 30", "17:48", "17:50"}},
      {"day", 1796000000 - 1796000000 % 86400, 1796000000 - 1796000000 % 86400 + 86400, 60, "Cost per 30 min (USD)",
       {"00:00Nov 30", "06:00", "12:00", "18:00", "00:00Dec 01"},
       {"00:00Nov 30", "12:00", "00:00Dec 01"}},
      {"month", 1793491200, 1796083200, 3600, "Cost per 1 day (USD)",
       {"Nov 022026", "Nov 09", "Nov 16", "Nov 23", "Nov 30"},
       {"Nov 022026", "Nov 16", "Nov 30"}},
  };
  return all;
}

// Twelve teams (the largest with a long name), an unallocated and an idle
// account, on one GPU, with costs that change over time.
std::vector<ledger::WindowRecord> windows_of(const Scene& s) {
  const std::vector<std::string> teams = {kLongTeam, "vision",   "nlp",     "speech",        "recsys",   "ads",
                                          "search",  "robotics", "medical", "finance-risk", "platform", "games"};
  std::vector<ledger::WindowRecord> out;
  int64_t k = 0;
  for (int64_t t = s.from; t < s.to; t += s.window, ++k) {
    ledger::WindowRecord w;
    w.start = t;
    w.end = t + s.window;
    w.slot = {"GPU-5d2c8a41-0b7e-4c3f-9a6d-1e2f3a4b5c6d", "NVIDIA H100 80GB HBM3", std::nullopt, ""};
    w.busy_fraction = 0.5;
    w.observed_seconds = static_cast<double>(s.window);
    const double held = 1.0 / static_cast<double>(teams.size());
    for (size_t i = 0; i < teams.size(); ++i) {
      ledger::AccountRecord a;
      a.account = "pod-uid-" + std::to_string(i);
      a.labels = {"ns-" + teams[i], "pod-" + std::to_string(i), "main", teams[i]};
      a.held_share = held;
      a.allocated_share = held;
      a.efficiency.sm_active = 0.05 + 0.075 * static_cast<double>(i);
      w.accounts.push_back(a);
      const int64_t busy = s.window * (i == 0 ? 2000 : 400 - 25 * static_cast<int64_t>(i)) * (1 + (k + static_cast<int64_t>(i)) % 5);
      const int64_t idle = s.window * 40 * static_cast<int64_t>(i % 3);
      w.charges.push_back({a.account, ledger::ChargeKind::kBusy, busy});
      w.charges.push_back({a.account, ledger::ChargeKind::kIdle, idle});
    }
    for (std::string_view special : {ledger::kUnallocatedAccount, ledger::kIdleAccount}) {
      ledger::AccountRecord a;
      a.account = std::string(special);
      w.accounts.push_back(a);
      w.charges.push_back({a.account, ledger::ChargeKind::kIdle, s.window * 30});
    }
    for (const auto& c : w.charges) {
      (c.kind == ledger::ChargeKind::kBusy ? w.busy_micros : w.idle_micros) += c.micros;
      w.cost_micros += c.micros;
    }
    out.push_back(std::move(w));
  }
  return out;
}

using Box = std::array<double, 4>;  // left, top, right, bottom
Box box_of(const json& j) { return {j[0].get<double>(), j[1].get<double>(), j[2].get<double>(), j[3].get<double>()}; }
constexpr double kSlack = 0.5;  // sub-pixel rounding

void expect_inside(const Box& inner, const Box& outer, const std::string& what) {
  EXPECT_GE(inner[0], outer[0] - kSlack) << what << " sticks out on the left";
  EXPECT_LE(inner[2], outer[2] + kSlack) << what << " sticks out on the right";
}

void check_page(const Scene& scene, int width, const json& m) {
  const std::string at = scene.name + " at " + std::to_string(width) + " px: ";
  const double vw = m["innerWidth"].get<double>();
  EXPECT_EQ(vw, width) << at;
  const Box page{0, 0, vw, 0};
  EXPECT_LE(m["scrollWidth"].get<double>(), vw) << at << "the page scrolls sideways";
  expect_inside(box_of(m["summary"]), page, at + "the summary");
  EXPECT_LE(m["summaryScroll"].get<double>(), m["summaryClient"].get<double>()) << at << "the summary overflows";
  for (const auto& t : m["tables"]) expect_inside(box_of(t["box"]), page, at + "table " + t["id"].get<std::string>());
  for (const auto& b : m["bars"]) expect_inside(box_of(b["box"]), page, at + "idle share row " + b["text"].get<std::string>());

  ASSERT_TRUE(m["charts"].contains("chart-cost-over-time")) << at;
  ASSERT_TRUE(m["charts"].contains("chart-cost-vs-efficiency")) << at;
  for (const auto& [id, c] : m["charts"].items()) {
    const std::string chart = at + id + ": ";
    expect_inside(box_of(c["holder"]), page, chart + "its box");
    const Box svg = box_of(c["svg"]);
    std::vector<std::string> texts;
    Box previous{-1e9, 0, -1e9, 0};
    for (const auto& tick : c["xTicks"]) {
      const Box b = box_of(tick["box"]);
      texts.push_back(tick["text"].get<std::string>());
      expect_inside(b, svg, chart + "x tick " + texts.back());
      EXPECT_GE(b[0], previous[2]) << chart << "x tick " << texts.back() << " overlaps the one before";
      previous = b;
    }
    EXPECT_EQ(std::set<std::string>(texts.begin(), texts.end()).size(), texts.size()) << chart << "two x ticks read the same";
    for (const auto& tick : c["yTicks"]) expect_inside(box_of(tick["box"]), svg, chart + "y tick " + tick["text"].get<std::string>());
    for (const auto& title : c["titles"]) expect_inside(box_of(title["box"]), svg, chart + "title " + title["text"].get<std::string>());
    EXPECT_EQ(c["variant"], width < 640 ? "narrow" : "wide") << chart << "the drawing shown";
    if (id == "chart-cost-over-time") {
      EXPECT_EQ(texts, width < 640 ? scene.narrow_ticks : scene.wide_ticks) << chart;
      ASSERT_FALSE(c["titles"].empty());
      EXPECT_EQ(c["titles"][0]["text"], scene.bucket_title) << chart;
    }
  }

  ASSERT_EQ(m["legends"].size(), 2u) << at;
  for (const auto& legend : m["legends"]) {
    const std::string which = at + legend["id"].get<std::string>() + ": ";
    expect_inside(box_of(legend["box"]), page, which + "the legend");
    for (const auto& item : legend["items"]) {
      expect_inside(box_of(item["box"]), page, which + item["text"].get<std::string>());
      EXPECT_LE(item["scroll"].get<double>(), item["client"].get<double>()) << which << item["text"] << " is cut";
    }
  }
  // Every team by its whole name: the nine largest, then the rest as one "Other".
  const auto& teams = m["legends"][0]["items"];
  ASSERT_EQ(teams.size(), 10u) << at;
  EXPECT_EQ(teams[0]["text"], kLongTeam) << at;
  EXPECT_EQ(teams[9]["text"].get<std::string>().rfind("Other (5: ", 0), 0u) << at << teams[9]["text"];
  EXPECT_EQ(m["legends"][1]["items"][0]["text"], std::string("1. ") + kLongTeam) << at;
}

TEST(ReportLayoutE2E, ReadsAtAnyRangeAndWidth) {
  if (!fs::exists(kChromium) || std::system("command -v node >/dev/null") != 0) {
    if (gpuledger::testing::running_in_ci()) FAIL() << "chromium and node are required under CI=true";
    GTEST_SKIP() << "chromium or node not installed";
  }
  const fs::path dir = fs::temp_directory_path() / ("gl_report_layout_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string pages;
  for (const Scene& s : scenes()) {
    Report r = build_report(windows_of(s), s.from, s.to, GroupBy::kTeam);
    r.generated_at = s.to;
    const fs::path html = dir / ("report-" + s.name + ".html");
    std::ofstream(html) << render_html(r);
    pages += " " + html.string();
  }
  const char* shots = std::getenv("GL_REPORT_SHOTS");
  const fs::path out = dir / "layout.json";
  const auto got = gpuledger::testing::run("node " GL_REPORT_LAYOUT_MJS " " + std::string(kChromium) + " " +
                                           (dir / "profile").string() + " " + out.string() + " 1280,390" + pages +
                                           (shots ? std::string(" --shots ") + shots : ""));
  ASSERT_EQ(got.status, 0) << got.out;
  const json layout = json::parse(gpuledger::testing::slurp(out));
  for (const Scene& s : scenes())
    for (int width : {1280, 390}) {
      const std::string page = (dir / ("report-" + s.name + ".html")).string();
      ASSERT_TRUE(layout.contains(page) && layout[page].contains(std::to_string(width))) << page << " " << width;
      check_page(s, width, layout[page][std::to_string(width)]);
    }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::report
