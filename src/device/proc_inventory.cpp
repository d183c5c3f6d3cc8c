#include "device/proc_inventory.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpuledger::device {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::map<std::string, std::string> parse_information_file(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = trim(line.substr(0, colon));
    if (key.empty()) continue;
    out.emplace(std::string(key), std::string(trim(line.substr(colon + 1))));
  }
  return out;
}

std::vector<GpuInfo> read_proc_inventory(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<GpuInfo> gpus;
  std::error_code ec;
  fs::directory_iterator it(fs::path(root) / "gpus", ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::ifstream in(it->path() / "information");
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    auto fields = parse_information_file(ss.str());
    auto excluded = fields.find("GPU Excluded");
    if (excluded != fields.end() && excluded->second.rfind("Yes", 0) == 0) continue;
    GpuInfo g;
    g.origins = {"procfs"};
    if (auto f = fields.find("Model"); f != fields.end()) g.model = f->second;
    if (auto f = fields.find("GPU UUID"); f != fields.end()) g.uuid = f->second;
    auto bus = fields.find("Bus Location");
    g.pci_bus_id = normalize_pci_bus_id(bus != fields.end() ? bus->second : it->path().filename().string());
    if (auto f = fields.find("Device Minor"); f != fields.end()) {
      unsigned minor = 0;
      auto [p, err] = std::from_chars(f->second.data(), f->second.data() + f->second.size(), minor);
      if (err == std::errc() && p == f->second.data() + f->second.size()) g.minor = minor;
    }
    if (g.uuid.empty() && g.model.empty()) continue;  // not an information file we understand
    gpus.push_back(std::move(g));
  }
  std::sort(gpus.begin(), gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.pci_bus_id < b.pci_bus_id; });
  for (size_t i = 0; i < gpus.size(); ++i) gpus[i].index = static_cast<unsigned>(i);
  return gpus;
}

}  // namespace gpuledger::device
