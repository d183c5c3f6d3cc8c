// The cross-checks of a GPU's device data (ledger/device_quality.h): each
// rule, its thresholds, and what it must not call suspect.
#include "ledger/device_quality.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ledger/device_checks_config.h"

namespace gpuledger::ledger {
namespace {

using F = CheckedField;

CheckSample busy_sample(double util = 0.9) {
  CheckSample s;
  s[F::kGrEngineActive] = 0.85;
  s[F::kSmActive] = 0.7;
  s[F::kSmOccupancy] = 0.4;
  s[F::kTensorActive] = 0.2;
  s[F::kDramActive] = 0.3;
  s[F::kDcgmUtilization] = util;
  return s;
}

CheckSample dead_profiling(double util = 0.9) {
  CheckSample s = busy_sample(util);
  for (F f : {F::kGrEngineActive, F::kSmActive, F::kSmOccupancy, F::kTensorActive, F::kDramActive}) s[f] = 0.0;
  return s;
}

// The fields a test does not look at, moving a little with sample i.
void jitter(CheckSample& s, int i) {
  s[F::kSmOccupancy] = 0.4 + 0.01 * i;
  s[F::kTensorActive] = 0.2 + 0.01 * i;
  s[F::kDramActive] = 0.3 + 0.01 * i;
}

// One 60 s window of samples every 10 s.
DeviceVerdict window(DeviceCrossCheck& c, const CheckSample& s, WindowWitness w, double start = 0) {
  for (double t = start + 10; t <= start + 60; t += 10) c.observe("GPU-a", t - 10, t, s);
  w.window_seconds = 60;
  return c.close("GPU-a", w);
}

WindowWitness spans(double seconds) { return WindowWitness{60, seconds, 0}; }

std::vector<DeviceFinding> zero(std::initializer_list<const char*> fields) {
  std::vector<DeviceFinding> out;
  for (const char* f : fields) out.push_back({f, "zero_while_busy"});
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DeviceQuality, ProfilingReadingZeroWhileUtilisationAndSpansSayBusyIsSuspect) {
  DeviceCrossCheck c;
  const DeviceVerdict v = window(c, dead_profiling(0.9), spans(48));
  EXPECT_EQ(v.quality, DeviceQuality::kSuspect);
  EXPECT_EQ(v.findings, zero({"dram_active", "gr_engine_active", "sm_active", "sm_occupancy", "tensor_active"}));
  EXPECT_TRUE(v.suspect(F::kSmActive));
  EXPECT_FALSE(v.suspect(F::kDcgmUtilization));
  EXPECT_EQ(encode_findings(finding_counts(v)),
            "dram_active:zero_while_busy=1,gr_engine_active:zero_while_busy=1,sm_active:zero_while_busy=1,"
            "sm_occupancy:zero_while_busy=1,tensor_active:zero_while_busy=1");
}

TEST(DeviceQuality, ZeroNeedsBothWitnessesOfWork) {
  DeviceCrossCheck c;
  // Utilisation busy, but the spans saw the GPU idle: no second witness.
  EXPECT_EQ(window(c, dead_profiling(0.9), spans(5)).quality, DeviceQuality::kOk);
  // Spans busy, utilisation low.
  EXPECT_EQ(window(c, dead_profiling(0.3), spans(50), 60).quality, DeviceQuality::kOk);
  // Exactly at the thresholds: busy (0.5 utilisation, spans over 0.25 of the window).
  EXPECT_EQ(window(c, dead_profiling(0.5), spans(15), 120).quality, DeviceQuality::kSuspect);
}

TEST(DeviceQuality, NvmlSamplesStandInForSpansWhenNoSpanWasTimed) {
  DeviceCrossCheck c;
  EXPECT_EQ(window(c, dead_profiling(0.9), WindowWitness{60, std::nullopt, 40}).quality, DeviceQuality::kSuspect);
  EXPECT_EQ(window(c, dead_profiling(0.9), WindowWitness{60, std::nullopt, 0}, 60).quality, DeviceQuality::kOk);
}

TEST(DeviceQuality, AnIdleGpuReadingZeroIsOk) {
  DeviceCrossCheck c;
  CheckSample idle = dead_profiling(0.0);
  EXPECT_EQ(window(c, idle, spans(0)).quality, DeviceQuality::kOk);
}

TEST(DeviceQuality, NoTensorWorkOrOneWarpPerSmIsNotSuspect) {
  DeviceCrossCheck c;
  CheckSample s = busy_sample(0.9);
  s[F::kTensorActive] = 0.0;  // FP32 work: no tensor instruction
  s[F::kDramActive] = 0.0;    // compute in registers
  EXPECT_EQ(window(c, s, spans(50)).quality, DeviceQuality::kOk);
  // A one-block kernel on a 132-SM GPU, busy 90 %: SM active 0.0068, occupancy 0.0001.
  s[F::kSmActive] = 0.9 / 132;
  s[F::kSmOccupancy] = 0.9 / 132 / 64;
  s[F::kGrEngineActive] = 0.9;
  EXPECT_EQ(window(c, s, spans(50), 60).quality, DeviceQuality::kOk);
}

TEST(DeviceQuality, AUtilisationReadingZeroWhileTheOtherSourceAndSpansSayBusy) {
  DeviceCrossCheck c;
  CheckSample s = busy_sample(0.0);
  s[F::kNvmlUtilization] = 0.9;
  const DeviceVerdict v = window(c, s, spans(50));
  EXPECT_EQ(v.findings, zero({"dcgm_utilization"}));
  EXPECT_TRUE(v.suspect(F::kDcgmUtilization));
  EXPECT_FALSE(v.suspect(F::kNvmlUtilization));
}

TEST(DeviceQuality, AFieldFrozenWhileTheOthersMoveIsSuspectAfterFrozenSeconds) {
  DeviceCrossCheck c;
  std::vector<DeviceVerdict> verdicts;
  for (int w = 0; w < 17; ++w) {
    for (int i = 1; i <= 6; ++i) {
      const double t = w * 60 + i * 10;
      CheckSample s = busy_sample(0.3 + 0.1 * (i % 7));  // utilisation moves 0.3..0.9
      jitter(s, i);
      s[F::kSmActive] = 0.42;                           // stuck
      s[F::kGrEngineActive] = 0.5 + 0.01 * i;
      c.observe("GPU-a", t - 10, t, s);
    }
    verdicts.push_back(c.close("GPU-a", spans(40)));
  }
  // The first sample at 10 s; 900 s later is 910 s, in the 16th window (index 15).
  for (int w = 0; w < 15; ++w) EXPECT_EQ(verdicts[w].quality, DeviceQuality::kOk) << w;
  EXPECT_EQ(verdicts[15].findings, (std::vector<DeviceFinding>{{"sm_active", "frozen"}}));
  EXPECT_EQ(verdicts[16].findings, (std::vector<DeviceFinding>{{"sm_active", "frozen"}}));
}

TEST(DeviceQuality, SaturatedOrIdleFieldsMayStandStill) {
  DeviceCrossCheck c;
  for (int w = 0; w < 30; ++w) {
    for (int i = 1; i <= 6; ++i) {
      const double t = w * 60 + i * 10;
      CheckSample s = busy_sample(1.0);  // utilisation pinned at 100 %
      jitter(s, i);
      s[F::kSmActive] = 0.5 + 0.05 * (i % 5);  // moves 0.5..0.7
      s[F::kTensorActive] = 0.0;           // never any tensor work
      s[F::kGrEngineActive] = 0.6 + 0.05 * (i % 5);
      s[F::kNvmlUtilization] = 1.0;
      c.observe("GPU-a", t - 10, t, s);
    }
    EXPECT_EQ(c.close("GPU-a", spans(55)).quality, DeviceQuality::kOk) << w;
  }
}

TEST(DeviceQuality, ASourceWithNoValueChangedWhileTheOtherMovesStopped) {
  DeviceCrossCheck c;
  DeviceVerdict last;
  std::vector<DeviceQuality> q;
  for (int w = 0; w < 12; ++w) {
    for (int i = 1; i <= 6; ++i) {
      const double t = w * 60 + i * 10;
      CheckSample s = busy_sample(0.9);  // the same DCGM page every time
      s.dcgm_all = {0.85, 0.7, 0.4, 0.2, 0.3, 0.9, 350.5, 1234567.0};
      s[F::kNvmlUtilization] = 0.5 + 0.1 * (i % 4);  // NVML moves 0.5..0.8
      s.nvml_all = {*s[F::kNvmlUtilization], 300.0 + i};
      c.observe("GPU-a", t - 10, t, s);
    }
    last = c.close("GPU-a", spans(50));
    q.push_back(last.quality);
  }
  // 600 s after the first sample (10 s): 610 s, the 11th window (index 10).
  // sm_active etc. are also frozen for 600 s, but frozen_seconds is 900.
  for (int w = 0; w < 10; ++w) EXPECT_EQ(q[w], DeviceQuality::kOk) << w;
  EXPECT_EQ(q[10], DeviceQuality::kSuspect);
  EXPECT_EQ(last.findings, (std::vector<DeviceFinding>{{"dcgm", "stopped"}}));
  EXPECT_TRUE(last.suspect(F::kSmActive));
  EXPECT_TRUE(last.suspect(F::kDcgmUtilization));
  EXPECT_FALSE(last.suspect(F::kNvmlUtilization));
}

TEST(DeviceQuality, NoSampleIsAbsent) {
  DeviceCrossCheck c;
  EXPECT_EQ(c.close("GPU-a", spans(30)).quality, DeviceQuality::kAbsent);
  window(c, busy_sample(), spans(30));
  EXPECT_EQ(c.close("GPU-a", spans(30)).quality, DeviceQuality::kAbsent);  // the next window saw none
}

// A noisy but healthy GPU at every load, over 6 hours of 10 s samples: DCGM
// in whole percent and noisy ratios, NVML's utilisation its own noise, spans
// that follow the load. Not one window suspect.
TEST(DeviceQuality, NoisyHealthyGpusAreNeverSuspect) {
  std::mt19937 rng(7);
  std::normal_distribution<double> n(0, 1);
  for (double load : {0.0, 0.02, 0.3, 0.5, 0.9, 1.0}) {
    DeviceCrossCheck c;
    double energy = 1e6;
    int suspect = 0, ok = 0;
    for (int w = 0; w < 360; ++w) {
      double span = 0;
      for (int i = 1; i <= 6; ++i) {
        const double t = w * 60 + i * 10;
        auto ratio = [&](double level, double sd) { return level <= 0 ? 0.0 : std::clamp(level + sd * n(rng), 0.0005, 1.0); };
        CheckSample s;
        s[F::kDcgmUtilization] = load >= 1 ? 1.0 : std::clamp(std::round(load * 100 + 4 * n(rng)), 0.0, 100.0) / 100;
        s[F::kNvmlUtilization] = load >= 1 ? 1.0 : std::clamp(std::round(load * 100 + 5 * n(rng)), 0.0, 100.0) / 100;
        s[F::kGrEngineActive] = ratio(load * 0.97, 0.02);
        s[F::kSmActive] = ratio(load * 0.8, 0.03);
        s[F::kSmOccupancy] = ratio(load * 0.5, 0.02);
        s[F::kTensorActive] = ratio(load * 0.2, 0.02);
        s[F::kDramActive] = ratio(load * 0.3, 0.02);
        const double power = 65 + 550 * load + 6 * n(rng);
        energy += power * 10;
        s.dcgm_all = {*s[F::kGrEngineActive], *s[F::kSmActive], *s[F::kDcgmUtilization], power, energy};
        s.nvml_all = {*s[F::kNvmlUtilization], power + 1, energy};
        c.observe("GPU-a", t - 10, t, s);
        span += 10 * std::clamp(load + 0.05 * n(rng), 0.0, 1.0);
      }
      const DeviceVerdict v = c.close("GPU-a", spans(span));
      (v.quality == DeviceQuality::kOk ? ok : suspect) += 1;
      if (v.quality != DeviceQuality::kOk) ADD_FAILURE() << "load " << load << " window " << w << ": " << v.findings.front().field;
    }
    EXPECT_EQ(ok, 360) << load;
    EXPECT_EQ(suspect, 0) << load;
  }
}

TEST(DeviceQuality, ThresholdsComeFromTheConfigSection) {
  const DeviceCheckConfig c = parse_device_checks_section(
      "device_checks:\n  busy_utilization: 0.7\n  busy_spans: 0.5\n  zero_epsilon: 0.01\n  frozen_after: 30m\n"
      "  stopped_after: 5m\n  moving_range: 0.1\n");
  EXPECT_EQ(c.busy_utilization, 0.7);
  EXPECT_EQ(c.busy_spans, 0.5);
  EXPECT_EQ(c.zero_epsilon, 0.01);
  EXPECT_EQ(c.frozen_seconds, 1800);
  EXPECT_EQ(c.stopped_seconds, 300);
  EXPECT_EQ(c.moving_range, 0.1);
  EXPECT_EQ(parse_device_checks_section("cost: {}\n"), DeviceCheckConfig{});
  EXPECT_THROW(parse_device_checks_section("device_checks:\n  busy: 1\n"), std::exception);
  EXPECT_THROW(parse_device_checks_section("device_checks:\n  busy_spans: 2\n"), std::exception);
  EXPECT_THROW(parse_device_checks_section("device_checks:\n  frozen_after: soon\n"), std::exception);
  // A stricter utilisation threshold: 0.6 is no longer busy.
  DeviceCrossCheck strict(c);
  EXPECT_EQ(window(strict, dead_profiling(0.6), spans(50)).quality, DeviceQuality::kOk);
}

TEST(DeviceQuality, FindingsRoundTripAsStored) {
  const std::map<std::string, int64_t> f = {{"sm_active:zero_while_busy", 12}, {"dcgm:stopped", 1}};
  EXPECT_EQ(encode_findings(f), "dcgm:stopped=1,sm_active:zero_while_busy=12");
  EXPECT_EQ(decode_findings(encode_findings(f)), f);
  EXPECT_TRUE(decode_findings("").empty());
  EXPECT_EQ(describe_findings(f), "dcgm: stopped, sm_active: zero_while_busy");
}

}  // namespace
}  // namespace gpuledger::ledger
