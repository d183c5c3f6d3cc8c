// fleet/canonical_window_json.h: the one-pass reader of a roll-up's body
// gives what the general reader gives (window_from_any_json), or nothing and
// leaves the body to it. Whatever it reads - every field's shapes, and
// bodies with random bytes changed, keys reordered, repeated or unknown,
// numbers in forms nlohmann does not write - the general reader reads the
// same window, bit for bit; what the general reader refuses, it never reads.
#include "fleet/canonical_window_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "fleet/window_json.h"
#include "full_window.h"

namespace gpuledger::testing {
namespace {

using fleet::window_from_any_json;
using fleet::window_from_canonical_json;
using fleet::window_to_json;

// The canonical reader read it: the general one reads the same, to the bit
// (window_to_json writes -0.0 and 0.0 apart).
void expect_agree(const std::string& text) {
  const auto fast = window_from_canonical_json(text);
  if (!fast) return;
  ledger::WindowRecord general;
  try {
    general = window_from_any_json(text);
  } catch (const Error& e) {
    FAIL() << "read canonically, refused by the general reader (" << e.what() << "): " << text;
  }
  EXPECT_EQ(*fast, general) << text;
  EXPECT_EQ(window_to_json(*fast), window_to_json(general)) << text;
}

std::vector<ledger::WindowRecord> shapes() {
  std::vector<ledger::WindowRecord> ws = {full_window(kFleetT0, 0), full_window(kFleetT0, 1), unknown_window(kFleetT0)};
  auto plain = fleet_window(kFleetT0 + 60, "GPU-plain");  // no Slurm names: 23 cells
  ws.push_back(plain);
  plain.accounts.push_back(plain.accounts[0]);
  plain.accounts.back().account = "k8s/pod-b";
  plain.accounts.back().evidence.idle.reset();
  plain.accounts.back().launches = 0;
  plain.energy->carbon_g_per_kwh.reset();
  ws.push_back(plain);
  auto extremes = full_window(kFleetT0 + 120, 7);
  extremes.start = INT64_MIN;
  extremes.cost_micros = INT64_MAX;
  extremes.gpu_fraction = 5e-324;
  extremes.allocated_total = 1.7976931348623157e308;
  extremes.busy_fraction = -0.0;
  extremes.observed_seconds = 1e22;
  extremes.accounts[0].launches = 1ull << 63;  // past int64: nlohmann writes it unsigned
  extremes.accounts[0].evidence.vram_peak_bytes = 0;
  ws.push_back(extremes);
  auto empty = fleet_window(kFleetT0 + 180, "GPU-empty");
  empty.accounts.clear();
  empty.charges.clear();
  empty.energy->charges.clear();
  ws.push_back(empty);
  return ws;
}

TEST(CanonicalWindowJson, ReadsEveryShapeWindowToJsonWritesAsTheGeneralReaderDoes) {
  for (const auto& w : shapes()) {
    const std::string text = window_to_json(w);
    const auto fast = window_from_canonical_json(text);
    ASSERT_TRUE(fast.has_value()) << text;
    EXPECT_EQ(*fast, window_from_any_json(text)) << text;
    EXPECT_EQ(fleet::window_from_json(text), *fast);
    expect_agree(text);
  }
}

// What it leaves to the general reader, which still reads (or refuses) it.
TEST(CanonicalWindowJson, LeavesEveryOtherFormToTheGeneralReader) {
  const ledger::WindowRecord w = full_window(kFleetT0, 3);
  const std::string text = window_to_json(w);
  nlohmann::json j = nlohmann::json::parse(text);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string out = text;
    const size_t at = out.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return out.replace(at, from.size(), to);
  };
  // The scalar after "key": written as `token`.
  auto raw = [&](const std::string& key, const std::string& token) {
    std::string out = text;
    const size_t at = out.find("\"" + key + "\":");
    EXPECT_NE(at, std::string::npos) << key;
    const size_t from = at + key.size() + 3;
    return out.replace(from, out.find_first_of(",}", from) - from, token);
  };
  struct Case {
    std::string text;
    bool general_reads;
  };
  std::vector<Case> cases = {
      {j.dump(1), true},                                                         // spaced
      {with("\"currency\":\"EUR\"", "\"currency\":\"E\\u0055R\""), true},       // an escape
      {with("\"currency\":\"EUR\"", "\"currency\":\"\xe2\x82\xac\""), true},    // UTF-8
      {with("\"end\":", "\"zzz\":1,\"end\":"), true},                           // an unknown key
      {with("\"end\":", "\"currency\":\"USD\",\"end\":"), true},                // repeated, out of order
      {with("{\"accounts\"", "{\"start\":1,\"accounts\""), true},               // out of byte order
      {with("\"exclusive\":true", "\"exclusive\":true,\"exclusive\":false"), true},
      {raw("start", "1.5e3"), true},                                             // a fraction in an integer
      {raw("start", "18446744073709551615"), true},                              // past int64: wrapped
      {raw("mj", "-9223372036854775809"), true},                                 // below int64: a double
      {raw("gpu_fraction", "1e-400"), true},                                     // underflows to 0
      {raw("gpu_fraction", "123456789012345678901234567890"), true},             // an integer past 64 bits
      {text + " ", true},
      {with("\"carbon\":", "\"mj\":1,\"carbon\":"), true},                      // a repeated energy member
      {raw("gpu_fraction", "1e400"), false},                                     // out of double's range
      {raw("gpu_fraction", "01"), false},
      {raw("gpu_fraction", "\"NaN\""), false},
      {raw("exclusive", "1"), false},
      {with("\"busy\"", "\"spent\""), false},                                   // an unknown charge kind
      {text.substr(0, text.size() - 1), false},
      {with("\"charges\":[", "\"charges\":[[\"a\",\"busy\"],"), false},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(window_from_canonical_json(c.text).has_value()) << c.text;
    if (c.general_reads)
      EXPECT_NO_THROW(fleet::window_from_json(c.text)) << c.text;
    else
      EXPECT_THROW(fleet::window_from_json(c.text), Error) << c.text;
  }
  // Integers in double fields, "-0" among them (the tape reads 0.0, not -0.0), and exponents: read here, the same.
  for (const auto& [key, token] : std::vector<std::pair<std::string, std::string>>{
           {"gpu_fraction", "-0"}, {"gpu_fraction", "-0.0"}, {"observed_s", "60"}, {"carbon", "9007199254740993"},
           {"busy_fraction", "1E-3"}, {"allocated_total", "-2.5e+2"}, {"mj", "-0"}}) {
    const std::string text2 = raw(key, token);
    EXPECT_TRUE(window_from_canonical_json(text2).has_value()) << text2;
    expect_agree(text2);
  }
}

// Random bytes changed in every shape's body, many times: whatever the
// canonical reader reads, the general one reads the same.
TEST(CanonicalWindowJson, AgreesWithTheGeneralReaderOnDamagedBodies) {
  std::mt19937_64 rng(20261205);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::string bytes = "{}[],:\"\\0123456789.eE+-tfnul az\x7f\x01\xc3";
  size_t read = 0;
  for (const auto& w : shapes()) {
    const std::string body = window_to_json(w);
    for (int round = 0; round < 4000; ++round) {
      std::string text = body;
      for (size_t k = 1 + pick(3); k > 0 && !text.empty(); --k) {
        const size_t at = pick(text.size());
        switch (pick(3)) {
          case 0: text[at] = bytes[pick(bytes.size())]; break;
          case 1: text.erase(at, 1); break;
          default: text.insert(at, 1, bytes[pick(bytes.size())]);
        }
      }
      read += window_from_canonical_json(text).has_value();
      expect_agree(text);
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(read, 2000u) << "the damage reaches values it still reads (numbers, names)";
}

// A window row's body (window_children_to_json): read back part for part in
// the body's order; any other form, and a negative zero (which the database's
// views read as 0), left to the views.
TEST(CanonicalWindowJson, ReadsAWindowRowsBodyAsWrittenAndLeavesEveryOtherForm) {
  for (const auto& w : shapes()) {
    const std::string text = fleet::window_children_to_json(w);
    const auto parts = fleet::window_children_from_canonical_json(text);
    ASSERT_TRUE(parts.has_value()) << text;
    // What a body holds of a window's parts is what its roll-up JSON holds of them.
    const auto whole = fleet::window_from_json(window_to_json(w));
    EXPECT_EQ(parts->accounts, whole.accounts) << text;
    EXPECT_EQ(parts->charges, whole.charges) << text;
    EXPECT_EQ(parts->energy.has_value(), whole.energy.has_value()) << text;
    if (whole.energy && parts->energy) {
      EXPECT_EQ(*parts->energy, whole.energy->charges) << text;
    }
  }
  const std::string text = fleet::window_children_to_json(full_window(kFleetT0, 0));
  const nlohmann::json j = nlohmann::json::parse(text);
  auto with_busy = [&](const std::string& value) {  // the first account's busy seconds written as `value`
    std::string t = text;
    return t.replace(t.find(",27.25,"), 7, "," + value + ",");
  };
  // "-0" reads as 0, as PostgreSQL's numeric reads it; "-0.0" would read -0.0 here: left.
  const auto zero = fleet::window_children_from_canonical_json(with_busy("-0"));
  ASSERT_TRUE(zero.has_value());
  EXPECT_FALSE(std::signbit(zero->accounts[0].busy_seconds));
  const std::vector<std::string> others = {
      with_busy("-0.0"),
      with_busy("-0e0"),
      j.dump(1),
      "{\"charges\":" + j["charges"].dump() + ",\"accounts\":" + j["accounts"].dump() + "}",
      "{\"accounts\":" + j["accounts"].dump() + "}",
      "{\"accounts\":" + j["accounts"].dump() + ",\"charges\":[],\"charges\":" + j["charges"].dump() + "}",
      text.substr(0, text.size() - 1) + ",\"zzz\":1}",
      text + " ",
      "{}",
  };
  for (const auto& other : others) EXPECT_FALSE(fleet::window_children_from_canonical_json(other)) << other;
}

}  // namespace
}  // namespace gpuledger::testing
