#include "common/handed_over.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpuledger {
namespace {

using Push = std::function<void(std::string&&)>;

TEST(HandOver, EveryValueArrivesOnceInTheOrderItWasMadeOnTheCallersThread) {
  const auto caller = std::this_thread::get_id();
  std::thread::id maker;
  std::vector<std::string> got;
  hand_over<std::string>(
      [&](const Push& push) {
        maker = std::this_thread::get_id();
        for (int i = 0; i < 10'007; ++i) push(std::to_string(i));  // not a whole number of batches
      },
      [&](std::string&& v) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        got.push_back(std::move(v));
      },
      64, 3);
  EXPECT_NE(maker, caller);
  ASSERT_EQ(got.size(), 10'007u);
  for (int i = 0; i < 10'007; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], std::to_string(i));
  int none = 0;
  hand_over<std::string>([](const Push&) {}, [&](std::string&&) { ++none; });
  EXPECT_EQ(none, 0);
  int one_at_a_time = 0;  // no room asked for: one batch of one value at a time, not a hang
  hand_over<std::string>([](const Push& push) { push("a"), push("b"); }, [&](std::string&&) { ++one_at_a_time; }, 0, 0);
  EXPECT_EQ(one_at_a_time, 2);
}

TEST(HandOver, AtMostTheBoundWaitsAheadOfASlowConsumer) {
  std::atomic<int> made{0};
  int used = 0, most_ahead = 0;
  hand_over<std::string>(
      [&](const Push& push) {
        for (int i = 0; i < 2'000; ++i) {
          push("x");
          ++made;
        }
      },
      [&](std::string&&) {
        ++used;
        most_ahead = std::max(most_ahead, made.load() - used);
        if (used % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // slower than the maker
      },
      10, 4);
  EXPECT_EQ(used, 2'000);
  // 4 batches waiting, the one being used and the one being filled, and the value in hand.
  EXPECT_LE(most_ahead, 10 * 6 + 1);
}

TEST(HandOver, TheMakersFailureIsThrownHereAfterWhatItMadeBefore) {
  int used = 0;
  EXPECT_THROW(hand_over<std::string>(
                   [](const Push& push) {
                     for (int i = 0; i < 1'000; ++i) push("x");
                     throw std::runtime_error("the server went away");
                   },
                   [&](std::string&&) { ++used; }, 64, 2),
               std::runtime_error);
  EXPECT_EQ(used, 1'000);
}

TEST(HandOver, TheUsersFailureStopsAMakerThatWouldNeverEnd) {
  std::atomic<bool> maker_ended{false};
  try {
    hand_over<std::string>(
        [&](const Push& push) {
          struct End {
            std::atomic<bool>& ended;
            ~End() { ended = true; }
          } end{maker_ended};
          for (;;) push("x");
        },
        [](std::string&&) { throw std::logic_error("a bill that cannot be built"); }, 8, 2);
    FAIL() << "the user's failure was not thrown";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "a bill that cannot be built");
  }
  EXPECT_TRUE(maker_ended);
}

}  // namespace
}  // namespace gpuledger
