// Feeds the parsers thousands of mutated inputs: truncated lines, bad escapes,
// huge values, random bytes. Passing means no crash, no hang, no exception
// (and, under ASan/UBSan builds, no memory error).
#include <gtest/gtest.h>

#include <random>

#include "device/dcgm_readings.h"
#include "device/proc_inventory.h"
#include "device/prometheus_parser.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

std::string mutate(std::string text, std::mt19937_64& rng) {
  static const std::vector<std::string> tokens = {
      "\\", "\"", "{", "}", "=", ",", "\n", "\r\n", " ", "\t", "NaN", "+Inf", "-Inf", "1e999999", "-1e-99999",
      "99999999999999999999999999", "\\q", "\\n", "\\\"", "#", "# HELP ", "# TYPE x ", "\xff\xfe", std::string(1, '\0'),
      "DCGM_FI_DEV_FB_USED", "UUID=\"", "GPU_I_ID=\"", "pod=\"p\",", std::string(300, 'a')};
  int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    size_t pos = text.empty() ? 0 : rng() % (text.size() + 1);
    switch (rng() % 6) {
      case 0:  // truncate
        text.resize(pos);
        break;
      case 1:  // flip a byte
        if (!text.empty()) text[rng() % text.size()] ^= static_cast<char>(1 + rng() % 255);
        break;
      case 2:  // insert a token
        text.insert(pos, tokens[rng() % tokens.size()]);
        break;
      case 3:  // delete a span
        if (pos < text.size()) text.erase(pos, 1 + rng() % 40);
        break;
      case 4: {  // random bytes
        std::string junk(1 + rng() % 64, '\0');
        for (auto& c : junk) c = static_cast<char>(rng());
        text.insert(pos, junk);
        break;
      }
      case 5:  // duplicate a slice
        if (pos < text.size()) text.insert(rng() % (text.size() + 1), text.substr(pos, 1 + rng() % 200));
        break;
    }
  }
  return text;
}

TEST(ParserFuzz, ThousandsOfMutationsNeverCrash) {
  std::vector<std::string> corpus;
  for (const char* name : {"two-a100-kubernetes.txt", "t4-time-slicing-virtual-gpus.txt", "mig-a100.txt",
                           "hostname-lowercase-old-labels.txt", "reordered-crlf-garbage.txt"})
    corpus.push_back(test::read_fixture(std::string("dcgm-exporter/") + name));
  corpus.push_back(test::read_fixture("proc-driver-nvidia/gpus/0000:07:00.0/information"));
  std::mt19937_64 rng(20240229);  // fixed seed: failures reproduce
  size_t samples = 0, errors = 0;
  constexpr int kIterations = 5000;
  for (int i = 0; i < kIterations; ++i) {
    std::string input = mutate(corpus[i % corpus.size()], rng);
    ParsedPage page;
    ASSERT_NO_THROW(page = parse_prometheus_text(input)) << "iteration " << i;
    samples += page.samples.size();
    errors += page.error_count;
    ASSERT_NO_THROW(extract_dcgm_readings(page)) << "iteration " << i;
    ASSERT_NO_THROW(parse_information_file(input));
    for (const auto& s : page.samples)
      for (const auto& [n, v] : s.labels) (void)normalize_pci_bus_id(v);
  }
  // Mutations leave most lines intact: the parser kept reading past the bad ones.
  EXPECT_GT(samples, static_cast<size_t>(kIterations));
  EXPECT_GT(errors, 0u);
}

TEST(ParserFuzz, PureRandomBytes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 2048, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    ASSERT_NO_THROW(extract_dcgm_readings(parse_prometheus_text(junk)));
    ASSERT_NO_THROW(parse_information_file(junk));
  }
}

TEST(ParserFuzz, PathologicalLines) {
  std::string long_label = "m{a=\"" + std::string(1 << 20, 'x') + "\"} 1\n";
  EXPECT_EQ(parse_prometheus_text(long_label).samples.size(), 1u);
  std::string many_labels = "m{";
  for (int i = 0; i < 2000; ++i) many_labels += "l" + std::to_string(i) + "=\"v\",";
  many_labels += "} 1\n";
  EXPECT_EQ(parse_prometheus_text(many_labels).samples.size(), 1u);
  std::string escapes = "m{a=\"" + std::string(100001, '\\') + "\"} 1\n";  // odd count: unterminated
  EXPECT_EQ(parse_prometheus_text(escapes).samples.size(), 0u);
  EXPECT_EQ(parse_prometheus_text(std::string(1 << 20, '\n')).samples.size(), 0u);
  EXPECT_EQ(parse_prometheus_text("DCGM_FI_DEV_FB_USED{UUID=\"GPU-x\"} 1e308\n").samples.size(), 1u);
  auto x = extract_dcgm_readings(parse_prometheus_text("DCGM_FI_DEV_FB_USED{UUID=\"GPU-x\"} 1e308\n"));
  EXPECT_FALSE(x.readings[0][DeviceField::kMemoryUsedBytes]);  // 1e308 MiB overflows to Inf: absent
}

}  // namespace
}  // namespace gpuledger::device
