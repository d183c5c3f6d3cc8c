#include "identity/gpu_visibility.h"

#include "identity/gpu_evidence.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gpuledger::identity {
namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(trim(item));
  return out;
}

bool is_number(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() < 6;
}

bool is_uuid_entry(const std::string& s) { return s.rfind("GPU-", 0) == 0 || s.rfind("MIG-", 0) == 0; }

// CUDA accepts any unique prefix of a UUID.
std::optional<GpuIdentity> by_uuid(const std::string& entry, const std::vector<GpuIdentity>& inventory) {
  std::optional<GpuIdentity> found;
  for (const auto& g : inventory) {
    if (g.uuid.rfind(entry, 0) != 0) continue;
    if (found) return std::nullopt;  // ambiguous prefix
    found = g;
  }
  if (found) return found;
  // Not in the inventory (none on this node, or a MIG instance it does not
  // list): a whole UUID still names the device.
  if (entry.size() >= 40) return GpuIdentity{std::nullopt, entry, std::nullopt};
  return std::nullopt;
}

template <typename Pred>
std::optional<GpuIdentity> find_one(const std::vector<GpuIdentity>& inventory, Pred pred) {
  for (const auto& g : inventory)
    if (pred(g)) return g;
  return std::nullopt;
}

std::optional<GpuIdentity> by_index(unsigned index, const std::vector<GpuIdentity>& inventory) {
  return find_one(inventory, [&](const GpuIdentity& g) { return g.index == index; });
}

bool sees_every_gpu(const ProcessGpuView& view) {
  return !view.nvidia_visible_devices || *view.nvidia_visible_devices == "all";
}

}  // namespace

std::optional<ProcessGpuView> read_process_gpu_view(const std::string& proc_root, unsigned pid) {
  ProcessGpuView view;
  const std::string base = proc_root + "/" + std::to_string(pid);
  std::ifstream env(base + "/environ", std::ios::binary);
  if (!env) return std::nullopt;
  std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
  std::istringstream vars(all);
  for (std::string var; std::getline(vars, var, '\0');) {
    auto eq = var.find('=');
    if (eq == std::string::npos) continue;
    std::string name = var.substr(0, eq), value = var.substr(eq + 1);
    if (name == "CUDA_VISIBLE_DEVICES") view.cuda_visible_devices = value;
    if (name == "NVIDIA_VISIBLE_DEVICES") view.nvidia_visible_devices = value;
    if (name == "CUDA_DEVICE_ORDER") view.cuda_device_order = value;
  }
  view.opened_minors = read_open_gpu_minors(proc_root, pid);
  return view;
}

std::optional<GpuIdentity> resolve_ordinal(const ProcessGpuView& view, unsigned ordinal,
                                           const std::vector<GpuIdentity>& inventory) {
  const bool pci_order = view.cuda_device_order == "PCI_BUS_ID";
  if (view.cuda_visible_devices) {
    // CUDA stops reading the list at its first invalid entry.
    std::vector<std::string> entries;
    for (const auto& e : split_list(*view.cuda_visible_devices)) {
      if (!is_uuid_entry(e) && !is_number(e)) break;
      entries.push_back(e);
    }
    if (ordinal >= entries.size()) return std::nullopt;
    const std::string& entry = entries[ordinal];
    if (is_uuid_entry(entry)) return by_uuid(entry, inventory);
    // A number counts among the devices the process sees, in CUDA's order:
    // the host index only when it sees them all, in PCI order.
    if (sees_every_gpu(view) && pci_order) return by_index(std::stoul(entry), inventory);
    if (sees_every_gpu(view) && inventory.size() == 1 && entry == "0") return inventory.front();
    return std::nullopt;
  }
  if (view.nvidia_visible_devices && *view.nvidia_visible_devices != "all") {
    auto entries = split_list(*view.nvidia_visible_devices);
    if (entries.size() != 1 || ordinal != 0) return std::nullopt;
    if (is_uuid_entry(entries[0])) return by_uuid(entries[0], inventory);
    if (is_number(entries[0])) return by_index(std::stoul(entries[0]), inventory);
    return std::nullopt;
  }
  if (view.opened_minors.size() == 1 && ordinal == 0) {
    unsigned minor = view.opened_minors[0];
    return find_one(inventory, [&](const GpuIdentity& g) { return g.minor == minor; });
  }
  if (pci_order) return by_index(ordinal, inventory);
  if (inventory.size() == 1 && ordinal == 0) return inventory.front();
  return std::nullopt;
}

}  // namespace gpuledger::identity
