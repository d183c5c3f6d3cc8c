// The cost policies and the memory split (window_split.h), with exact micros.
// The "Worked*" tests are the worked examples of docs/ledger.md, number for
// number: one H100 at 3.60 USD/h, a 60 s window (C = 60'000 micro-USD), the
// device 50 % busy; two HAMi pods a (share 0.3) and b (share 0.5) and a user
// c holding no allocation; busy seconds 6, 12, 12; VRAM held 10, 20, 10 GiB of
// 80 GiB for the whole window.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "ledger/allocation_use.h"
#include "ledger/prices.h"
#include "ledger/share_seconds.h"
#include "ledger/vram_price.h"
#include "ledger/window_split.h"

namespace gpuledger::ledger {
namespace {

using K = ChargeKind;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

WindowInput worked(CostPolicy policy, IdlePolicy idle = IdlePolicy::kHolders, double memory_share = 0) {
  WindowInput in;
  in.cost_micros = 60'000;
  in.window_seconds = 60;
  in.holders = {{"a", 0.3}, {"b", 0.5}};
  in.activity = {{"a", Activity{6, 10 * kGiB * 60, 100}},
                 {"b", Activity{12, 20 * kGiB * 60, 100}},
                 {"c", Activity{12, 10 * kGiB * 60, 100}}};
  in.device_busy_fraction = 0.5;
  in.idle_policy = idle;
  in.cost_policy = policy;
  in.memory_price_share = memory_share;
  in.vram_capacity_bytes = 80 * kGiB;
  return in;
}

void expect_conserved(const WindowInput& in, const WindowSplit& s) {
  int64_t sum = 0;
  for (const auto& c : s.charges) {
    EXPECT_GE(c.micros, 0);
    sum += c.micros;
  }
  EXPECT_EQ(sum, in.cost_micros);
  EXPECT_EQ(s.busy_micros + s.idle_micros + s.memory_micros, in.cost_micros);
}

TEST(WorkedExample, UsageIdleToHolders) {
  const auto in = worked(CostPolicy::kUsage);
  const auto s = split_window(in);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"a", K::kBusy, 6'000}, {"a", K::kIdle, 11'250},
                                            {"b", K::kBusy, 12'000}, {"b", K::kIdle, 18'750},
                                            {"c", K::kBusy, 12'000}}));
  EXPECT_DOUBLE_EQ(s.allocated_total, 0.8);
  EXPECT_FALSE(s.overcommitted);
  expect_conserved(in, s);
}

TEST(WorkedExample, UsageIdleByUsage) {
  const auto in = worked(CostPolicy::kUsage, IdlePolicy::kUsage);
  EXPECT_EQ(split_window(in).charges, (std::vector<Charge>{{"a", K::kBusy, 6'000}, {"a", K::kIdle, 6'000},
                                                           {"b", K::kBusy, 12'000}, {"b", K::kIdle, 12'000},
                                                           {"c", K::kBusy, 12'000}, {"c", K::kIdle, 12'000}}));
}

TEST(WorkedExample, UsageIdleToIdle) {
  const auto in = worked(CostPolicy::kUsage, IdlePolicy::kIdle);
  EXPECT_EQ(split_window(in).charges, (std::vector<Charge>{{"__idle__", K::kIdle, 30'000}, {"a", K::kBusy, 6'000},
                                                           {"a", K::kIdle, 0}, {"b", K::kBusy, 12'000},
                                                           {"b", K::kIdle, 0}, {"c", K::kBusy, 12'000}}));
}

TEST(WorkedExample, Allocated) {
  const auto in = worked(CostPolicy::kAllocated);
  const auto s = split_window(in);
  // c used 40 % of the work and pays nothing: the report names it an over-user.
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"__unallocated__", K::kBusy, 6'000}, {"__unallocated__", K::kIdle, 6'000},
                                            {"a", K::kBusy, 9'000}, {"a", K::kIdle, 9'000},
                                            {"b", K::kBusy, 15'000}, {"b", K::kIdle, 15'000}}));
  expect_conserved(in, s);
}

TEST(WorkedExample, BlendHalfAndHalf) {
  const auto in = worked(CostPolicy::kBlend);
  const auto s = split_window(in);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"__unallocated__", K::kBusy, 3'000}, {"__unallocated__", K::kIdle, 3'000},
                                            {"a", K::kBusy, 7'500}, {"a", K::kIdle, 10'125},
                                            {"b", K::kBusy, 13'500}, {"b", K::kIdle, 16'875},
                                            {"c", K::kBusy, 6'000}}));
  expect_conserved(in, s);
}

TEST(WorkedExample, UsageWithMemorySplit) {
  const auto in = worked(CostPolicy::kUsage, IdlePolicy::kHolders, 0.3);
  const auto s = split_window(in);
  EXPECT_EQ(s.memory_micros, 18'000);
  EXPECT_EQ(s.busy_micros, 21'000);
  EXPECT_EQ(s.idle_micros, 21'000);
  // Memory: held 10:20:10 of 80 GiB -> 2'250, 4'500, 2'250; unheld 9'000 to the holders 3:5.
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"a", K::kBusy, 4'200}, {"a", K::kIdle, 7'875}, {"a", K::kMemory, 5'625},
                                            {"b", K::kBusy, 8'400}, {"b", K::kIdle, 13'125}, {"b", K::kMemory, 10'125},
                                            {"c", K::kBusy, 8'400}, {"c", K::kMemory, 2'250}}));
  expect_conserved(in, s);
}

TEST(WorkedExample, AllocatedWithMemorySplit) {
  const auto in = worked(CostPolicy::kAllocated, IdlePolicy::kHolders, 0.3);
  const auto s = split_window(in);
  // Unheld memory 9'000 by allocation: a 2'700, b 4'500, __unallocated__ 1'800.
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"__unallocated__", K::kBusy, 4'200}, {"__unallocated__", K::kIdle, 4'200},
                                            {"__unallocated__", K::kMemory, 1'800},
                                            {"a", K::kBusy, 6'300}, {"a", K::kIdle, 6'300}, {"a", K::kMemory, 4'950},
                                            {"b", K::kBusy, 10'500}, {"b", K::kIdle, 10'500}, {"b", K::kMemory, 9'000},
                                            {"c", K::kMemory, 2'250}}));
  expect_conserved(in, s);
}

// vram_per_gib_hour (vram_price.h): the memory share derived from a price per
// GiB-hour. The worked example's GPU, 80 GiB at 3.60/h, at 0.0135 per GiB-hour:
// m = 0.0135 x 80 / 3.60 = 0.3, so the window bills the "memory 0.3" rows.
PriceBook vram_priced(const char* vram_per_gib_hour) {
  return parse_prices(std::string("default_per_hour: 3.60\nvram_per_gib_hour: ") + vram_per_gib_hour + "\n");
}
const GpuSlot kH100{"GPU-h100", "NVIDIA H100 80GB HBM3", std::nullopt, ""};

TEST(VramPrice, DerivesTheWorkedExampleShare) {
  const PriceBook book = vram_priced("0.0135");
  const MemoryShare m = memory_share_for(book, kH100, price_for(book, kH100), 80 * kGiB);
  EXPECT_EQ(m.basis, MemoryShareBasis::kDerived);
  EXPECT_DOUBLE_EQ(m.share, 0.3);
  for (auto [policy, charges] :
       {std::pair{CostPolicy::kUsage,
                  std::vector<Charge>{{"a", K::kBusy, 4'200}, {"a", K::kIdle, 7'875}, {"a", K::kMemory, 5'625},
                                      {"b", K::kBusy, 8'400}, {"b", K::kIdle, 13'125}, {"b", K::kMemory, 10'125},
                                      {"c", K::kBusy, 8'400}, {"c", K::kMemory, 2'250}}},
        std::pair{CostPolicy::kAllocated,
                  std::vector<Charge>{{"__unallocated__", K::kBusy, 4'200}, {"__unallocated__", K::kIdle, 4'200},
                                      {"__unallocated__", K::kMemory, 1'800},
                                      {"a", K::kBusy, 6'300}, {"a", K::kIdle, 6'300}, {"a", K::kMemory, 4'950},
                                      {"b", K::kBusy, 10'500}, {"b", K::kIdle, 10'500}, {"b", K::kMemory, 9'000},
                                      {"c", K::kMemory, 2'250}}}}) {
    const auto in = worked(policy, IdlePolicy::kHolders, m.share);
    EXPECT_EQ(in.cost_micros, window_cost_micros(price_for(book, kH100), 60));
    const auto s = split_window(in);
    EXPECT_EQ(s.memory_micros, 18'000);
    EXPECT_EQ(s.charges, charges) << to_string(policy);
    expect_conserved(in, s);
  }
}

// A partial holder pays the VRAM price x the GiB-hours it held: 20 GiB for an
// hour at 0.0135 = 0.27; the 60 GiB nobody held (1.08 - 0.27) goes like idle
// time (idle policy idle: __idle__), the compute part (3.60 - 1.08) by use.
TEST(VramPrice, AHolderPaysThePriceOfTheGibHoursItHeld) {
  const PriceBook book = vram_priced("0.0135");
  WindowInput in{.cost_micros = window_cost_micros(price_for(book, kH100), 3600), .window_seconds = 3600,
                 .holders = {{"h", 1}}, .activity = {{"h", Activity{900, 20 * kGiB * 3600, 10}}},
                 .device_busy_fraction = 0.25};
  in.idle_policy = IdlePolicy::kIdle;
  in.memory_price_share = memory_share_for(book, kH100, price_for(book, kH100), 80 * kGiB).share;
  in.vram_capacity_bytes = 80 * kGiB;
  const auto s = split_window(in);
  EXPECT_EQ(in.cost_micros, 3'600'000);
  EXPECT_EQ(s.memory_micros, 1'080'000);
  // One holder and no other user: exclusive, so the unheld memory is its too.
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"h", K::kBusy, 630'000}, {"h", K::kIdle, 1'890'000},
                                            {"h", K::kMemory, 1'080'000}}));
  in.holders.push_back({"g", 1});  // shared: the unheld memory goes like idle time, to __idle__
  in.memory_price_share = memory_share_for(book, kH100, price_for(book, kH100), 80 * kGiB).share;
  const auto shared = split_window(in);
  EXPECT_EQ(shared.charges, (std::vector<Charge>{{"__idle__", K::kIdle, 1'890'000}, {"__idle__", K::kMemory, 810'000},
                                                 {"g", K::kIdle, 0}, {"h", K::kBusy, 630'000}, {"h", K::kIdle, 0},
                                                 {"h", K::kMemory, 270'000}}));
  expect_conserved(in, shared);
}

// The memory price above the GPU's: capped at 1, the whole window is memory.
TEST(VramPrice, ShareAboveOneIsCapped) {
  const PriceBook book = vram_priced("0.05");  // 0.05 x 80 GiB = 4.00 > 3.60
  const MemoryShare m = memory_share_for(book, kH100, price_for(book, kH100), 80 * kGiB);
  EXPECT_EQ(m.basis, MemoryShareBasis::kCapped);
  EXPECT_EQ(m.share, 1.0);
  auto in = worked(CostPolicy::kUsage, IdlePolicy::kHolders, m.share);
  const auto s = split_window(in);
  EXPECT_EQ(s.memory_micros, 60'000);
  EXPECT_EQ(s.busy_micros + s.idle_micros, 0);
  // Held 10:20:10 of 80 GiB -> 7'500 / 15'000 / 7'500; unheld 30'000 to the holders 3:5 (11'250 / 18'750).
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"a", K::kIdle, 0}, {"a", K::kMemory, 18'750}, {"b", K::kIdle, 0},
                                            {"b", K::kMemory, 33'750}, {"c", K::kMemory, 7'500}}));
  expect_conserved(in, s);
  // Exactly the GPU's price (0.045 x 80 = 3.60): 1, not capped.
  const PriceBook even = vram_priced("0.045");
  EXPECT_EQ(memory_share_for(even, kH100, price_for(even, kH100), 80 * kGiB).basis, MemoryShareBasis::kDerived);
  EXPECT_DOUBLE_EQ(memory_share_for(even, kH100, price_for(even, kH100), 80 * kGiB).share, 1.0);
}

// No capacity, never a guess: no memory part (m = 0) for a slot whose memory
// is unknown, a bad reading, or a MIG slot (no reading of its own); the whole
// window goes by the cost policy, as without a memory price.
TEST(VramPrice, UnknownCapacityDerivesNoMemoryPart) {
  const PriceBook book = vram_priced("0.0135");
  const SlotPrice p = price_for(book, kH100);
  for (std::optional<double> capacity : {std::optional<double>{}, std::optional<double>{0.0},
                                         std::optional<double>{-1.0}, std::optional<double>{std::nan("")},
                                         std::optional<double>{std::numeric_limits<double>::infinity()}}) {
    const MemoryShare m = memory_share_for(book, kH100, p, capacity);
    EXPECT_EQ(m.basis, MemoryShareBasis::kCapacityUnknown);
    EXPECT_EQ(m.share, 0.0);
  }
  const GpuSlot mig{"MIG-m", "NVIDIA H100 80GB HBM3", "3g.40gb", "GPU-h100"};
  const MemoryShare m = memory_share_for(book, mig, price_for(book, mig), 80 * kGiB);
  EXPECT_EQ(m.basis, MemoryShareBasis::kCapacityUnknown);
  EXPECT_EQ(m.share, 0.0);
  auto in = worked(CostPolicy::kUsage, IdlePolicy::kHolders, m.share);
  in.vram_capacity_bytes.reset();
  const auto s = split_window(in);
  EXPECT_EQ(s.memory_micros, 0);
  EXPECT_EQ(s.charges, split_window(worked(CostPolicy::kUsage)).charges);
  expect_conserved(in, s);
}

// Without vram_per_gib_hour the configured memory_price_share stands (as
// before); a VRAM price of 0 or a slot priced at 0 derive 0.
TEST(VramPrice, ConfiguredShareZeroPriceAndUnpricedSlot) {
  PriceBook book = parse_prices("default_per_hour: 3.60\nmemory_price_share: 0.25\n");
  MemoryShare m = memory_share_for(book, kH100, price_for(book, kH100), std::nullopt);
  EXPECT_EQ(m.basis, MemoryShareBasis::kConfigured);
  EXPECT_EQ(m.share, 0.25);
  book = vram_priced("0");
  m = memory_share_for(book, kH100, price_for(book, kH100), std::nullopt);
  EXPECT_EQ(m.basis, MemoryShareBasis::kDerived);
  EXPECT_EQ(m.share, 0.0);
  book = parse_prices("vram_per_gib_hour: 0.0135\n");  // no GPU price at all
  m = memory_share_for(book, kH100, price_for(book, kH100), 80 * kGiB);
  EXPECT_EQ(m.basis, MemoryShareBasis::kUnpriced);
  EXPECT_EQ(m.share, 0.0);
}

// Time-slicing as the seam reports it until each replica carries 1/N: two
// pods at share 1 each over-commit the GPU (2): scaled to halves, flagged.
TEST(CostPolicy, OvercommitIsScaledAndFlagged) {
  WindowInput in{.cost_micros = 1'001, .window_seconds = 60, .holders = {{"x", 1}, {"y", 1}}};
  in.cost_policy = CostPolicy::kAllocated;
  const auto s = split_window(in);
  EXPECT_TRUE(s.overcommitted);
  EXPECT_DOUBLE_EQ(s.allocated_total, 2);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"x", K::kIdle, 501}, {"y", K::kIdle, 500}}));
}

// Three of four time-slicing replicas held (x two of them, y one): the fourth is unallocated.
TEST(CostPolicy, ReplicasLeaveTheUnheldReplicaUnallocated) {
  WindowInput in{.cost_micros = 100'000, .window_seconds = 60, .holders = {{"x", 0.25}, {"y", 0.25}, {"x", 0.25}},
                 .activity = {{"x", Activity{30, 0, 1}}}, .device_busy_fraction = 0.5};
  in.cost_policy = CostPolicy::kAllocated;
  const auto s = split_window(in);
  EXPECT_FALSE(s.overcommitted);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"__unallocated__", K::kBusy, 12'500}, {"__unallocated__", K::kIdle, 12'500},
                                            {"x", K::kBusy, 25'000}, {"x", K::kIdle, 25'000},
                                            {"y", K::kBusy, 12'500}, {"y", K::kIdle, 12'500}}));
}

// A MIG slice held whole, or a DRA claim shared by two pods (0.5 each): every
// policy bills the slice's cost to its holders alone.
TEST(CostPolicy, WholeSliceAndSharedClaimAreFullyAllocated) {
  for (auto policy : {CostPolicy::kUsage, CostPolicy::kAllocated, CostPolicy::kBlend}) {
    WindowInput mig{.cost_micros = 8'571, .window_seconds = 60, .holders = {{"m", 1.0}},
                    .activity = {{"m", Activity{15, 0, 1}}}};
    mig.cost_policy = policy;
    EXPECT_EQ(split_window(mig).charges, (std::vector<Charge>{{"m", K::kBusy, 2'143}, {"m", K::kIdle, 6'428}}))
        << to_string(policy);
    WindowInput claim{.cost_micros = 1'000, .window_seconds = 60, .holders = {{"p", 0.5}, {"q", 0.5}}};
    claim.cost_policy = policy;
    EXPECT_EQ(split_window(claim).charges, (std::vector<Charge>{{"p", K::kIdle, 500}, {"q", K::kIdle, 500}}))
        << to_string(policy);
  }
}

// Rounding: 100 micros over three equal thirds, busy half: 50 -> 17, 17, 16
// (ties by account id), twice; a blend cut of an odd part rounds half up
// towards the allocated side.
// A holder whose share the sources could not tell (GpuAllocation::share_known
// false) is never billed by its placeholder weight: the allocation-based part
// goes by activity, and nothing is called over-committed.
TEST(CostPolicy, UnknownShareBillsTheAllocatedPartByActivity) {
  auto in = worked(CostPolicy::kAllocated);
  in.holders = {{"a", 0.3}, {"b", 1.0, false}};
  auto s = split_window(in);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"a", K::kBusy, 6'000}, {"a", K::kIdle, 6'000},
                                            {"b", K::kBusy, 12'000}, {"b", K::kIdle, 12'000},
                                            {"c", K::kBusy, 12'000}, {"c", K::kIdle, 12'000}}));
  EXPECT_TRUE(s.allocation_unknown);
  EXPECT_FALSE(s.overcommitted);
  expect_conserved(in, s);

  // Blend: the allocated half by activity, the usage half as always (idle to holders by weight).
  in.cost_policy = CostPolicy::kBlend;
  s = split_window(in);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"a", K::kBusy, 6'000}, {"a", K::kIdle, 6'462},
                                            {"b", K::kBusy, 12'000}, {"b", K::kIdle, 17'538},
                                            {"c", K::kBusy, 12'000}, {"c", K::kIdle, 6'000}}));
  expect_conserved(in, s);

  // The usage policy is unchanged by it; all shares known: not marked.
  in.cost_policy = CostPolicy::kUsage;
  EXPECT_EQ(split_window(in).charges, (std::vector<Charge>{{"a", K::kBusy, 6'000}, {"a", K::kIdle, 6'923},
                                                           {"b", K::kBusy, 12'000}, {"b", K::kIdle, 23'077},
                                                           {"c", K::kBusy, 12'000}}));
  EXPECT_FALSE(split_window(worked(CostPolicy::kAllocated)).allocation_unknown);

  // Two holders of unknown parts, nobody ran: not "over-committed"; the usage
  // targets (the holders) take the parts, memory included.
  in = worked(CostPolicy::kAllocated, IdlePolicy::kHolders, 0.3);
  in.holders = {{"a", 1.0, false}, {"b", 1.0, false}};
  in.activity.clear();
  s = split_window(in);
  EXPECT_TRUE(s.allocation_unknown);
  EXPECT_FALSE(s.overcommitted);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"a", K::kBusy, 10'500}, {"a", K::kIdle, 10'500}, {"a", K::kMemory, 9'000},
                                            {"b", K::kBusy, 10'500}, {"b", K::kIdle, 10'500}, {"b", K::kMemory, 9'000}}));
  expect_conserved(in, s);
}

TEST(CostPolicy, RoundingEdges) {
  WindowInput in{.cost_micros = 100, .window_seconds = 60, .holders = {{"c", 1.0 / 3}, {"a", 1.0 / 3}, {"b", 1.0 / 3}},
                 .device_busy_fraction = 0.5};
  in.cost_policy = CostPolicy::kAllocated;
  auto s = split_window(in);
  EXPECT_FALSE(s.overcommitted);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"a", K::kBusy, 17}, {"a", K::kIdle, 17}, {"b", K::kBusy, 17},
                                            {"b", K::kIdle, 17}, {"c", K::kBusy, 16}, {"c", K::kIdle, 16}}));
  // Blend 0.5 of busy 5 (C = 10, f = 0.5): 3 by allocation (h alone), 2 by usage (u alone).
  WindowInput odd{.cost_micros = 10, .window_seconds = 60, .holders = {{"h", 1}}, .activity = {{"u", Activity{30, 0, 1}}},
                  .device_busy_fraction = 0.5};
  odd.cost_policy = CostPolicy::kBlend;
  s = split_window(odd);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"h", K::kBusy, 3}, {"h", K::kIdle, 5}, {"u", K::kBusy, 2}}));
  // Memory share of 1 micro: rounds half up (0.5 -> 1); all of C memory when the share is 1.
  WindowInput tiny{.cost_micros = 1, .window_seconds = 60, .holders = {{"h", 1}}};
  tiny.memory_price_share = 0.5;
  s = split_window(tiny);
  EXPECT_EQ(s.memory_micros, 1);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"h", K::kIdle, 0}, {"h", K::kMemory, 1}}));
}

// Memory nobody holds, capacity unknown: like idle time (here: no holder -> __unallocated__).
TEST(CostPolicy, UnheldMemoryWithoutHoldersIsUnallocated) {
  WindowInput in{.cost_micros = 1'000, .window_seconds = 60};
  in.memory_price_share = 0.25;
  const auto s = split_window(in);
  EXPECT_EQ(s.charges, (std::vector<Charge>{{"__unallocated__", K::kIdle, 750}, {"__unallocated__", K::kMemory, 250}}));
}

// A capacity reading that is not a finite positive number counts as none.
TEST(CostPolicy, BadCapacityIsNoCapacity) {
  for (double capacity : {std::numeric_limits<double>::infinity(), std::nan(""), -1.0, 1e308}) {
    WindowInput in{.cost_micros = 1'000, .window_seconds = 60, .holders = {{"h", 1}},
                   .activity = {{"h", Activity{0, 5, 0}}, {"u", Activity{0, 15, 0}}}};
    in.memory_price_share = 1;
    in.vram_capacity_bytes = capacity;
    EXPECT_EQ(split_window(in).charges, (std::vector<Charge>{{"h", K::kIdle, 0}, {"h", K::kMemory, 250},
                                                             {"u", K::kMemory, 750}}))
        << capacity;
  }
}

TEST(CostPolicy, ParsesAndRejects) {
  EXPECT_EQ(parse_cost_policy("allocated"), CostPolicy::kAllocated);
  EXPECT_EQ(parse_cost_policy("blend"), CostPolicy::kBlend);
  EXPECT_THROW(parse_cost_policy("fair"), Error);
  EXPECT_EQ(parse_charge_kind("memory"), ChargeKind::kMemory);
  EXPECT_THROW(parse_charge_kind("spare"), Error);
  WindowInput bad{.cost_micros = 1};
  bad.memory_price_share = 1.5;
  EXPECT_THROW(split_window(bad), Error);
  bad.memory_price_share = 0;
  bad.blend_allocated_weight = -0.1;
  EXPECT_THROW(split_window(bad), Error);
  const PriceBook book = parse_prices("cost_policy: blend\nblend_allocated_weight: 0.25\nmemory_price_share: 0.3\n");
  EXPECT_EQ(book.cost_policy, CostPolicy::kBlend);
  EXPECT_DOUBLE_EQ(book.blend_allocated_weight, 0.25);
  EXPECT_DOUBLE_EQ(book.memory_price_share, 0.3);
  EXPECT_THROW(parse_prices("cost_policy: fair\n"), Error);
  EXPECT_THROW(parse_prices("memory_price_share: 1.2\n"), Error);
  EXPECT_THROW(parse_prices("blend_allocated_weight: x\n"), Error);
}

// Allocated against used from a stored window: over-commitment scaled, the
// unheld part __unallocated__'s, energy shares from the busy energy, flags at
// the documented margin.
TEST(AllocationUse, SharesAndFlags) {
  WindowRecord w;
  w.accounts.resize(3);
  w.accounts[0].account = "a", w.accounts[0].allocated_share = 1, w.accounts[0].activity_share = 0.75;
  w.accounts[0].vram_byte_seconds = 3;
  w.accounts[1].account = "b", w.accounts[1].allocated_share = 1, w.accounts[1].activity_share = 0.25;
  w.accounts[1].vram_byte_seconds = 1;
  w.accounts[2].account = "__idle__";
  EXPECT_EQ(allocated_shares(w), (std::map<std::string, double>{{"a", 0.5}, {"b", 0.5}}));
  w.energy = WindowEnergyRecord{10, "nvml", {{"a", K::kBusy, 6}, {"b", K::kBusy, 2}, {"b", K::kIdle, 2}}, std::nullopt};
  auto used = used_shares(w);
  ASSERT_EQ(used.size(), 2u);
  EXPECT_DOUBLE_EQ(used["a"].activity, 0.75);
  EXPECT_DOUBLE_EQ(used["a"].vram, 0.75);
  EXPECT_DOUBLE_EQ(*used["a"].energy, 0.75);
  EXPECT_DOUBLE_EQ(*used["b"].energy, 0.25);
  w.accounts[1].allocated_share = 0.25;
  w.accounts[0].allocated_share = 0.5;
  EXPECT_EQ(allocated_shares(w), (std::map<std::string, double>{{"__unallocated__", 0.25}, {"a", 0.5}, {"b", 0.25}}));
  w.energy.reset();
  EXPECT_FALSE(used_shares(w)["a"].energy);
  EXPECT_EQ(share_flag(0.3, 0.41), ShareFlag::kOver);
  EXPECT_EQ(share_flag(0.3, 0.4), ShareFlag::kNone);
  EXPECT_EQ(share_flag(0.5, 0.39), ShareFlag::kUnder);
  EXPECT_EQ(share_flag(0, 0.05), ShareFlag::kNone);
}

// share_seconds works the shares out in place (no map a window: every report
// adds every window's); they must be allocation_use.h's to the bit. The
// oracle below is those functions multiplied out as share_seconds defines it.
std::map<std::string, ShareSeconds> shares_from_allocation_use(const WindowRecord& w) {
  const double gpu_seconds = static_cast<double>(w.end - w.start) * w.gpu_fraction;
  const auto used = used_shares(w);
  bool energy_known = false;
  for (const auto& [account, u] : used) energy_known |= u.energy.has_value();
  const auto allocated = allocated_shares(w);
  const auto unknown = unknown_allocated_shares(w);
  std::map<std::string, ShareSeconds> out;
  for (const auto& [account, u] : used) {
    ShareSeconds& s = out[account];
    s.share = gpu_seconds;
    if (unknown.contains(account))
      s.allocated_unknown = gpu_seconds;
    else if (auto it = allocated.find(account); it != allocated.end())
      s.allocated = it->second * gpu_seconds;
    s.used_activity = u.activity * gpu_seconds;
    s.used_vram = u.vram * gpu_seconds;
    if (energy_known) {
      s.energy_share = gpu_seconds;
      s.used_energy = u.energy.value_or(0) * gpu_seconds;
    }
  }
  return out;
}

TEST(AllocationUse, ShareSecondsAreTheSharesOfAllocationUseToTheBit) {
  auto account = [](std::string name, double allocated, double activity, double vram, bool known = true) {
    AccountRecord a;
    a.account = std::move(name);
    a.allocated_share = allocated, a.activity_share = activity, a.vram_byte_seconds = vram;
    a.allocated_share_known = known;
    return a;
  };
  std::vector<WindowRecord> windows(6);
  for (auto& w : windows) w.start = 1'700'000'000, w.end = w.start + 60, w.gpu_fraction = 1;
  // Over-committed (scaled by 1/S), a third of a slot, busy energy with an idle part.
  windows[0].accounts = {account("b", 0.7, 0.1, 7), account("a", 0.9, 0.9, 3), account("__idle__", 0, 0, 0)};
  windows[0].energy =
      WindowEnergyRecord{10, "nvml", {{"a", K::kBusy, 7}, {"b", K::kBusy, 3}, {"b", K::kIdle, 1}}, 300.0};
  windows[0].gpu_fraction = 1.0 / 3;
  // Under-committed: __unallocated__ is the rest (and has no shares of its own).
  windows[1].accounts = {account("a", 0.3, 0.6, 1), account("c", 0.1, 0.4, 0)};
  // One share unknown: none scaled, that account's allocated unknown.
  windows[2].accounts = {account("a", 0.8, 0.5, 2), account("b", 0.9, 0.5, 2, false)};
  // An account named twice (the last record's used shares, the allocations summed), energy of an account with no
  // record.
  windows[3].accounts = {account("a", 0.25, 0.2, 1), account("b", 0.5, 0.3, 2), account("a", 0.5, 0.5, 4)};
  windows[3].energy =
      WindowEnergyRecord{9, "dcgm", {{"z", K::kBusy, 5}, {"a", K::kBusy, 3}, {"a", K::kBusy, 1}}, std::nullopt};
  // Energy known but no busy energy; a user holding nothing.
  windows[4].accounts = {account("a", 1, 0.7, 5), account("u", 0, 0.3, 0)};
  windows[4].energy = WindowEnergyRecord{4, "nvml", {{"a", K::kIdle, 4}}, 200.0};
  // Nobody but the special accounts.
  windows[5].accounts = {account("__idle__", 0, 0, 0), account("__unallocated__", 1, 0, 0)};
  for (size_t i = 0; i < windows.size(); ++i) {
    const auto expected = shares_from_allocation_use(windows[i]);
    const WindowShares got = share_seconds(windows[i]);
    ASSERT_EQ(got.size(), expected.size()) << "window " << i;
    auto e = expected.begin();
    for (const auto& [name, s] : got) {
      EXPECT_EQ(name, e->first) << "window " << i;
      EXPECT_EQ(s.share, e->second.share) << i << " " << name;
      EXPECT_EQ(s.allocated, e->second.allocated) << i << " " << name;
      EXPECT_EQ(s.allocated_unknown, e->second.allocated_unknown) << i << " " << name;
      EXPECT_EQ(s.used_activity, e->second.used_activity) << i << " " << name;
      EXPECT_EQ(s.used_vram, e->second.used_vram) << i << " " << name;
      EXPECT_EQ(s.used_energy, e->second.used_energy) << i << " " << name;
      EXPECT_EQ(s.energy_share, e->second.energy_share) << i << " " << name;
      ASSERT_NE(got.find(e->first), nullptr);
      ++e;
    }
    EXPECT_EQ(got.find("__idle__"), nullptr);
    EXPECT_EQ(got.find("nobody"), nullptr);
  }
  // The scaled share of window 0: 0.9 / 1.6 of a third of 60 s.
  EXPECT_EQ(share_seconds(windows[0]).find("a")->allocated, 0.9 / 1.6 * (60.0 / 3));
}

}  // namespace
}  // namespace gpuledger::ledger
