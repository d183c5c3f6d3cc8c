#include "common/recent_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>

namespace gpuledger {
namespace {

TEST(RecentMap, LooksUpAsAStdMapWhateverTheOrderOfItsKeys) {
  // Runs of one key (as a fleet's windows come a GPU at a time), keys again
  // after others, keys before every other: the same entries and values as
  // std::map's operator[].
  RecentMap<std::string, int> recent;
  std::map<std::string, int> plain;
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const std::string key = "GPU-" + std::to_string(rng() % 97);
    const int run = static_cast<int>(rng() % 4) + 1;
    for (int k = 0; k < run; ++k) {
      recent[key] += i;
      plain[key] += i;
    }
  }
  EXPECT_EQ(recent.all(), plain);
  EXPECT_EQ(recent.size(), plain.size());
}

TEST(RecentMap, ACopyForgetsTheEntryItRememberedAndAClearForgetsEverything) {
  RecentMap<std::string, int> a;
  a["x"] = 1;
  RecentMap<std::string, int> b = a;  // remembered "x" in a: b must not write there
  b["x"] = 2;
  EXPECT_EQ(a.all().at("x"), 1);
  EXPECT_EQ(b.all().at("x"), 2);
  RecentMap<std::string, int> c;
  c = b;
  c["x"] = 3;
  EXPECT_EQ(b.all().at("x"), 2);
  RecentMap<std::string, int> moved = std::move(c);
  moved["x"] += 1;
  EXPECT_EQ(moved.all().at("x"), 4);
  moved.clear();
  EXPECT_TRUE(moved.empty());
  moved["x"] += 5;  // a fresh entry, not the cleared one
  EXPECT_EQ(moved.all().at("x"), 5);
}

TEST(RecentMap, TupleKeysInAndOutOfOrder) {
  // FOCUS's slots: (period start, node, GPU), mostly in key order.
  RecentMap<std::tuple<int64_t, std::string, std::string>, int> recent;
  std::map<std::tuple<int64_t, std::string, std::string>, int> plain;
  for (int64_t start : {3600, 0, 7200, 0})
    for (const char* node : {"c/b", "c/a"})
      for (const char* gpu : {"GPU-2", "GPU-1", "GPU-1"}) {
        ++recent[{start, node, gpu}];
        ++plain[{start, node, gpu}];
      }
  EXPECT_EQ(recent.all(), plain);
}

}  // namespace
}  // namespace gpuledger
