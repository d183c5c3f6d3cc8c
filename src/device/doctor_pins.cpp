#include "device/doctor_pins.h"

#include <filesystem>

#include <fmt/format.h>

#include "common/error.h"
#include "probes/pin_heartbeat.h"
#include "probes/pin_store.h"

namespace gpuledger::device {
namespace {

std::string age_text(std::chrono::seconds age) {
  const auto s = age.count();
  if (s < 120) return fmt::format("{} s", s);
  if (s < 2 * 3600) return fmt::format("{} min", s / 60);
  return fmt::format("{} h {} min", s / 3600, s % 3600 / 60);
}

}  // namespace

PlaneReport judge_pins(const PinFacts& f) {
  PlaneReport r{"bpf-pins", PlaneStatus::kOk, ""};
  if (f.dir.empty()) {
    r.reason = "no bpffs is mounted: nothing is pinned";
    return r;
  }
  if (!f.pinned) {
    r.reason = "nothing pinned in " + f.dir;
    return r;
  }
  const bool orphaned = f.heartbeat_age > f.orphaned_after;
  const std::string beat = "last agent heartbeat " + age_text(f.heartbeat_age) + " ago";
  if (!f.lock_error.empty()) {
    r.status = PlaneStatus::kDegraded;
    r.reason = "pins in " + f.dir + " (" + beat + "), whether an agent holds them is unknown: " + f.lock_error;
    return r;
  }
  if (f.agent_holds) {
    if (!orphaned) {
      r.reason = "the data plane in " + f.dir + " is held by a running agent (" + beat + ")";
      return r;
    }
    r.status = PlaneStatus::kDegraded;
    r.reason = "an agent holds the pins in " + f.dir + " but its " + beat + ", longer than --orphaned-pins-after: "
               "is it hung?";
    return r;
  }
  r.status = PlaneStatus::kDegraded;
  r.reason = "pins in " + f.dir + " and no agent running (" + beat + (orphaned ? ", orphaned" : "") +
             "): CUDA calls on this node are being trapped by gpuledger's probes and counted by nobody; remove "
             "them with `gpuledger uninstall" + (f.dir.ends_with("/gpuledger") ? "" : " --bpf-pin-dir " + f.dir) +
             "`, or start the agent";
  return r;
}

PinFacts gather_pins(const std::string& dir, std::chrono::seconds orphaned_after) {
  PinFacts f;
  f.dir = dir;
  f.orphaned_after = orphaned_after;
  const auto age = probes::pins_heartbeat_age(dir);
  f.pinned = age.has_value();
  if (!f.pinned) return f;
  f.heartbeat_age = *age;
  // The agent holds each plane's directory locked (probes/pin_store.h); taken
  // and let go at once here, never waited for.
  std::error_code ec;
  for (const auto& plane : std::filesystem::directory_iterator(dir, ec)) {
    if (!plane.is_directory(ec)) continue;
    try {
      probes::lock_pin_dir(plane.path());
    } catch (const probes::PinsHeld&) {
      f.agent_holds = true;
    } catch (const Error& e) {
      f.lock_error = e.what();
    }
  }
  return f;
}

}  // namespace gpuledger::device
