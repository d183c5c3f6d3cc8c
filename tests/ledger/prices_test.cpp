#include "ledger/prices.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace gpuledger::ledger {
namespace {

const char* kYaml = R"(currency: EUR
default_per_hour: 1.5
per_model:
  "NVIDIA H100 80GB HBM3": 4.10
  "H100": 3.90
  "a100": 3
per_uuid:
  GPU-aaaa: 2.25
  MIG-own: 0.5
window_seconds: 300
idle_policy: usage
retention_days: 30
rollup_after_hours: 48
)";

TEST(Prices, ParsesEveryKey) {
  PriceBook b = parse_prices(kYaml, "p.yaml");
  EXPECT_EQ(b.currency, "EUR");
  EXPECT_EQ(b.default_micros_per_hour, 1'500'000);
  ASSERT_EQ(b.per_model.size(), 3u);
  EXPECT_EQ(b.per_model[0].second, 4'100'000);
  EXPECT_EQ(b.per_uuid[0], (std::pair<std::string, int64_t>{"GPU-aaaa", 2'250'000}));
  EXPECT_EQ(b.window_seconds, 300);
  EXPECT_EQ(b.idle_policy, IdlePolicy::kUsage);
  EXPECT_EQ(b.retention_days, 30);
  EXPECT_EQ(PriceBook{}.retention_days, 365);
  EXPECT_EQ(b.rollup_after_hours, 48);
  EXPECT_EQ(PriceBook{}.rollup_after_hours, 24);
  EXPECT_THROW(parse_prices("rollup_after_hours: -1\n"), Error);
}

TEST(Prices, CostSectionAndEmpty) {
  PriceBook b = parse_prices("cost:\n  default_per_hour: 2\n");
  EXPECT_EQ(b.default_micros_per_hour, 2'000'000);
  EXPECT_EQ(parse_prices("").currency, "USD");
}

// Issue 10: an agent --config without a `cost:` section was read as a price
// list and the agent exited with "unknown key 'team'".
TEST(Prices, AConfigWithoutCostSectionHasNoPrices) {
  EXPECT_FALSE(parse_cost_section("team:\n  pod_label_key: team\nteams: []\n"));
  EXPECT_FALSE(parse_cost_section(""));
  auto book = parse_cost_section("team:\n  pod_label_key: owner\ncost:\n  default_per_hour: 2\n");
  ASSERT_TRUE(book);
  EXPECT_EQ(book->default_micros_per_hour, 2'000'000);
  EXPECT_THROW(parse_cost_section("cost:\n  default_per_hour: -1\n"), Error);
}

struct MatchCase {
  GpuSlot slot;
  int64_t micros_per_hour, num, den;
  std::string matched;
};

TEST(Prices, Matching) {
  PriceBook b = parse_prices(kYaml);
  std::vector<MatchCase> cases = {
      {{"GPU-1", "NVIDIA H100 80GB HBM3", {}, ""}, 4'100'000, 1, 1, "model:NVIDIA H100 80GB HBM3"},
      {{"GPU-2", "NVIDIA H100 PCIe", {}, ""}, 3'900'000, 1, 1, "model:H100"},
      {{"GPU-3", "NVIDIA A100-SXM4-40GB", {}, ""}, 3'000'000, 1, 1, "model:a100"},
      {{"GPU-aaaa", "NVIDIA H100 80GB HBM3", {}, ""}, 2'250'000, 1, 1, "uuid:GPU-aaaa"},
      {{"GPU-4", "Tesla T4", {}, ""}, 1'500'000, 1, 1, "default"},
      {{"MIG-x", "NVIDIA H100 80GB HBM3", "3g.40gb", "GPU-9"}, 4'100'000, 3, 7, "model:NVIDIA H100 80GB HBM3"},
      {{"MIG-y", "NVIDIA H100 80GB HBM3", "1c.2g.20gb", "GPU-aaaa"}, 2'250'000, 2, 7, "uuid:GPU-aaaa"},
      {{"MIG-own", "NVIDIA H100 80GB HBM3", "1g.10gb", "GPU-aaaa"}, 500'000, 1, 1, "uuid:MIG-own"},
      {{"MIG-z", "NVIDIA A30", "2g.12gb", "GPU-5"}, 1'500'000, 2, 4, "default"},
  };
  for (const auto& c : cases) {
    SlotPrice p = price_for(b, c.slot);
    EXPECT_EQ(p.micros_per_hour, c.micros_per_hour) << c.slot.uuid;
    EXPECT_EQ(p.numerator, c.num) << c.slot.uuid;
    EXPECT_EQ(p.denominator, c.den) << c.slot.uuid;
    EXPECT_EQ(p.matched, c.matched) << c.slot.uuid;
  }
  EXPECT_THROW(price_for(b, {"MIG-bad", "NVIDIA H100", "8g.80gb", "GPU-1"}), Error);
  EXPECT_THROW(price_for(b, {"MIG-bad", "NVIDIA H100", "weird", "GPU-1"}), Error);
}

TEST(Prices, MigSlicesConfigurable) {
  PriceBook b = parse_prices("mig_slices: {default: 8, \"B200\": 10}\n");
  EXPECT_EQ(mig_slices_for(b, "NVIDIA B200"), 10);
  EXPECT_EQ(mig_slices_for(b, "NVIDIA H100"), 8);
  EXPECT_EQ(mig_slices_for(parse_prices("mig_slices: 4"), "x"), 4);
  EXPECT_EQ(mig_slices_for(PriceBook{}, "NVIDIA A100"), 7);
}

TEST(Prices, WindowCost) {
  // 4.10/h for 60 s = 0.068333.. -> 68'333 micro-units.
  EXPECT_EQ(window_cost_micros({4'100'000, 1, 1, ""}, 60), 68'333);
  // 3/7 of 4.10/h for 60 s = 29'285.71 -> 29'286.
  EXPECT_EQ(window_cost_micros({4'100'000, 3, 7, ""}, 60), 29'286);
  EXPECT_EQ(window_cost_micros({3'600'000, 1, 1, ""}, 3600), 3'600'000);
  EXPECT_EQ(window_cost_micros({3'600'000, 1, 1, ""}, 0), 0);
}

// The error parsing `yaml` as prices.yaml gives, or "no error".
std::string msg(const std::string& yaml) {
  try {
    parse_prices(yaml, "prices.yaml");
  } catch (const Error& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

TEST(Prices, ErrorsNameFileAndLine) {
  EXPECT_EQ(msg("currency: USD\nper_model:\n  H100: cheap\n"),
            "prices prices.yaml:3:9: per_model.H100: not a non-negative decimal amount: 'cheap'");
  EXPECT_EQ(msg("currency: USD\ndefualt_per_hour: 1\n"), "prices prices.yaml:2:1: unknown key 'defualt_per_hour'");
  EXPECT_NE(msg("per_model: {H100: 1\n").find("prices prices.yaml:"), std::string::npos);
  EXPECT_EQ(msg("idle_policy: everyone\n"),
            "prices prices.yaml:1:14: unknown idle policy 'everyone' (expected holders, usage or idle)");
  EXPECT_EQ(msg("window_seconds: 7\n"),
            "prices prices.yaml:1:17: window_seconds: expected a divisor of 86400 (e.g. 60, 300, 3600)");
  EXPECT_THROW(load_prices("/nonexistent/prices.yaml"), Error);
}

// vram_per_gib_hour: a price like the others (decimal, >= 0, 6 decimals at
// most), also under cost:; never together with a nonzero memory_price_share.
TEST(Prices, VramPerGibHour) {
  EXPECT_FALSE(parse_prices("default_per_hour: 3.60\n").vram_micros_per_gib_hour);
  EXPECT_EQ(parse_prices("vram_per_gib_hour: 0.0135\n").vram_micros_per_gib_hour, 13'500);
  EXPECT_EQ(parse_prices("cost:\n  vram_per_gib_hour: 0.000001\n").vram_micros_per_gib_hour, 1);
  EXPECT_EQ(parse_cost_section("team: {}\ncost:\n  vram_per_gib_hour: 0\n  memory_price_share: 0\n")
                ->vram_micros_per_gib_hour,
            0);
  EXPECT_EQ(msg("vram_per_gib_hour: -0.01\n"),
            "prices prices.yaml:1:20: vram_per_gib_hour: not a non-negative decimal amount: '-0.01'");
  EXPECT_EQ(msg("vram_per_gib_hour: 0.0000001\n"),
            "prices prices.yaml:1:20: vram_per_gib_hour: more than 6 decimals (micro-units) in '0.0000001'");
  EXPECT_EQ(msg("vram_per_gib_hour: [1]\n"), "prices prices.yaml:1:20: vram_per_gib_hour: expected a price per GiB-hour "
                                               "of VRAM");
  const std::string both =
      ": vram_per_gib_hour and memory_price_share are two ways of pricing the same memory part: set one of them "
      "(vram_per_gib_hour derives each GPU's memory share from its price and memory size)";
  EXPECT_EQ(msg("memory_price_share: 0.3\nvram_per_gib_hour: 0.0135\n"), "prices prices.yaml:2:20" + both);
  EXPECT_EQ(msg("cost:\n  vram_per_gib_hour: 0.0135\n  memory_price_share: 0.3\n"), "prices prices.yaml:2:22" + both);
}

}  // namespace
}  // namespace gpuledger::ledger
