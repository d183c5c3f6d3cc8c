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

#include "report/report.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;
using testing::kT0;

struct Proc {
  int status = -1;
  std::string out;
};

Proc run(const std::string& cmd) {
  Proc r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string gpuledger() { return GPULEDGER_BINARY; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kRange = " --from 2027-01-15T08:00:00Z --to 2027-01-15T08:02:00Z";

bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

// Renders the HTML report in headless Chromium: the page loads, the DOM holds
// the three SVG charts with their marks, and a screenshot is produced.
TEST(ReportHtmlE2E, RendersInHeadlessChromium) {
  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) {
    if (under_ci()) FAIL() << "chromium is required under CI=true (apt-get install chromium)";
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
  for (const char* id : {"chart-cost-over-time", "chart-cost-vs-efficiency", "chart-idle-share"})
    EXPECT_NE(dom.out.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(dom.out.find("class=\"bar\""), std::string::npos);
  EXPECT_NE(dom.out.find("class=\"point\""), std::string::npos);
  EXPECT_NE(dom.out.find("class=\"idle\""), std::string::npos);
  EXPECT_NE(dom.out.find("<td>0.351428</td>"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::report
