// The HTML report in a real browser: headless Chromium loads it, the DOM has
// the SVG charts, and a screenshot is produced.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bpf_requirement.h"  // running_in_ci()
#include "report/report.h"
#include "cli_process.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;
using testing::kT0;

using gpuledger::testing::gpuledger;
using gpuledger::testing::kRange;
using gpuledger::testing::Proc;
using gpuledger::testing::run;
using gpuledger::testing::slurp;

// Renders the HTML report in headless Chromium: the page loads, the DOM holds
// the three SVG charts with their marks, and a screenshot is produced.
TEST(ReportHtmlE2E, RendersInHeadlessChromium) {
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) {
    if (gpuledger::testing::running_in_ci()) FAIL() << "chromium is required under CI=true (apt-get install chromium)";
    GTEST_SKIP() << "chromium not installed";
  }
  testing::FixtureStore store("html");
  fs::path html = store.dir() / "report.html";
  Proc gen = run(gpuledger() + " report --store " + store.path() + kRange + " --format html -o " + html.string());
  ASSERT_EQ(gen.status, 0) << gen.out;
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update --disable-sync"
                            " --disable-dev-shm-usage --user-data-dir=" +
                            (store.dir() / "profile").string() + " --window-size=1200,900 ";
  fs::path png = store.dir() / "report.png";
  Proc shot = run("timeout 90 " + chromium + flags + "--screenshot=" + png.string() + " file://" + html.string());
  ASSERT_TRUE(fs::exists(png)) << shot.out;
  if (const char* keep = std::getenv("GL_REPORT_PNG")) fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
  EXPECT_GT(fs::file_size(png), 10'000u);  // a real picture, not a blank page
  std::string header = slurp(png).substr(0, 8);
  EXPECT_EQ(header, std::string("\x89PNG\r\n\x1a\n", 8));

  Proc dom = run("timeout 90 " + chromium + flags + "--dump-dom file://" + html.string());
  ASSERT_EQ(dom.status, 0) << dom.out;
  for (const char* id : {"chart-cost-over-time", "chart-cost-vs-efficiency"})
    EXPECT_NE(dom.out.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(dom.out.find("<div id=\"chart-idle-share\""), std::string::npos);
  EXPECT_NE(dom.out.find("class=\"bar\""), std::string::npos);
  EXPECT_NE(dom.out.find("class=\"point\""), std::string::npos);
  EXPECT_NE(dom.out.find("class=\"idle\""), std::string::npos);
  EXPECT_NE(dom.out.find("title=\"0.351429 USD (exact)\">0.35</td>"), std::string::npos);
  // A bill for finance: the summary, who pays what, axes with ticks, legends, coverage and the glossary.
  for (const char* part : {"id=\"summary\"", "id=\"who-pays\"", "id=\"prices\"", "class=\"tick ",
                           "class=\"legend\"", "id=\"coverage\"", "id=\"glossary\"", "id=\"generated\""})
    EXPECT_NE(dom.out.find(part), std::string::npos) << part;
}

}  // namespace
}  // namespace gpuledger::report
