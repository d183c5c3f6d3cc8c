// `gpuledger doctor` on the pinned data plane (device/doctor_pins.h): the
// judging; tests/reliability/pins_on_exit_test.cpp runs it against real pins.
#include <gtest/gtest.h>

#include "device/doctor_pins.h"

namespace gpuledger::device {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

PinFacts pinned(bool held, seconds age) {
  PinFacts f;
  f.dir = "/sys/fs/bpf/gpuledger";
  f.pinned = true;
  f.agent_holds = held;
  f.heartbeat_age = age;
  return f;
}

TEST(DoctorPins, NothingPinnedIsFine) {
  PinFacts none;
  EXPECT_EQ(judge_pins(none).status, PlaneStatus::kOk);
  EXPECT_EQ(judge_pins(none).reason, "no bpffs is mounted: nothing is pinned");
  none.dir = "/sys/fs/bpf/gpuledger";
  EXPECT_EQ(judge_pins(none).reason, "nothing pinned in /sys/fs/bpf/gpuledger");
}

TEST(DoctorPins, PinsARunningAgentHoldsAreFine) {
  auto r = judge_pins(pinned(true, seconds(3)));
  EXPECT_EQ(r.plane, "bpf-pins");
  EXPECT_EQ(r.status, PlaneStatus::kOk);
  EXPECT_EQ(r.reason, "the data plane in /sys/fs/bpf/gpuledger is held by a running agent (last agent heartbeat 3 s ago)");
  EXPECT_EQ(judge_pins(pinned(true, hours(30))).status, PlaneStatus::kDegraded) << "held, but no heartbeat for 30 h";
}

TEST(DoctorPins, PinsWithNoAgentSayWhatTheyCostAndHowToRemoveThem) {
  auto r = judge_pins(pinned(false, seconds(600)));
  EXPECT_EQ(r.status, PlaneStatus::kDegraded);
  EXPECT_EQ(r.reason,
            "pins in /sys/fs/bpf/gpuledger and no agent running (last agent heartbeat 10 min ago): CUDA calls on this "
            "node are being trapped by gpuledger's probes and counted by nobody; remove them with `gpuledger "
            "uninstall`, or start the agent");
  auto orphaned = judge_pins(pinned(false, hours(25)));
  EXPECT_NE(orphaned.reason.find("(last agent heartbeat 25 h 0 min ago, orphaned)"), std::string::npos)
      << orphaned.reason;
  auto elsewhere = pinned(false, seconds(5));
  elsewhere.dir = "/mnt/bpf/gl";
  EXPECT_NE(judge_pins(elsewhere).reason.find("`gpuledger uninstall --bpf-pin-dir /mnt/bpf/gl`"), std::string::npos);
}

TEST(DoctorPins, DoctorExitCodeStillFollowsTheAttributionPlane) {
  std::vector<PlaneReport> reports = {{"attribution", PlaneStatus::kOk, ""}, judge_pins(pinned(false, hours(99)))};
  EXPECT_EQ(doctor_exit_code(reports), 0);
}

}  // namespace
}  // namespace gpuledger::device
