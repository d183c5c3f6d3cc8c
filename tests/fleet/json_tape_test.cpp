// fleet/json_tape.h: the roll-up bodies' reader reads what nlohmann's parser
// reads, the same way (the values, and which texts are refused), so a report
// read at roll-ups is the one it was before the tape (window_fields_test.cpp
// round-trips every window field through it, and through PostgreSQL's jsonb).
#include "fleet/json_tape.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace gpuledger::fleet {
namespace {

using nlohmann::json;

// The tape's value as nlohmann's, to compare the two whole.
json as_json(const JsonTape::Ref& r) {
  switch (r.type()) {
    case JsonTape::Type::kNull: return nullptr;
    case JsonTape::Type::kBool: return r.get<bool>();
    case JsonTape::Type::kInt: return r.get<int64_t>();
    case JsonTape::Type::kUint: return r.get<uint64_t>();
    case JsonTape::Type::kDouble: return r.get<double>();
    case JsonTape::Type::kString: return r.get<std::string>();
    case JsonTape::Type::kArray: {
      json out = json::array();
      r.each([&](const JsonTape::Ref& e) { out.push_back(as_json(e)); });
      return out;
    }
    case JsonTape::Type::kObject: {
      json out = json::object();
      r.members([&](std::string_view k, const JsonTape::Ref& v) { out[std::string(k)] = as_json(v); });
      return out;
    }
  }
  return nullptr;
}

// Both refuse it, or both read the same value (and the same kind of number).
void expect_same(JsonTape& tape, const std::string& text) {
  std::optional<json> want;
  try {
    want = json::parse(text);
  } catch (const json::exception&) {
  }
  std::optional<json> got;
  try {
    got = as_json(tape.parse(text));
  } catch (const Error&) {
  }
  ASSERT_EQ(got.has_value(), want.has_value()) << "text: " << json(text).dump(-1, ' ', true, json::error_handler_t::replace);
  if (!want) return;
  EXPECT_EQ(*got, *want) << got->dump() << " against " << want->dump();
  EXPECT_EQ(got->dump(), want->dump()) << "the same numbers, bit for bit";
  EXPECT_EQ(got->type(), want->type());
}

TEST(JsonTape, ReadsEveryKindOfValueAsNlohmannDoes) {
  JsonTape tape;
  for (const std::string& text : std::vector<std::string>{
           "null", "true", "false", "0", "-0", "7", "-7", "18446744073709551615", "-9223372036854775808",
           "18446744073709551616", "-9223372036854775809", "123456789012345678901234567890", "0.1", "-2.5e-3",
           "1E+300", "1e-320", "1e-400", "-1e-999", "0.00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001", "4.9406564584124654e-324", "1.7976931348623157e308", "0.30000000000000004",
           "1000000000000", "0.0000001", R"("")", R"("plain")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\u20ac")",
           R"("\ud83d\ude00")", R"("\u0000x")", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", "[]", "{}",
           R"([1, [2, [3, []]], {"a": {"b": [null]}}])", R"({"k": 1, "k": 2})", " \n\t\r[ 1 , 2 ]\r\n ",
           R"({"accounts": [["k8s/ns/pod", "team", null, 0.3333, 123456]], "charges": [["a", "busy", 500000]]})"}) {
    SCOPED_TRACE(text);
    expect_same(tape, text);
  }
}

TEST(JsonTape, RefusesWhatNlohmannRefuses) {
  JsonTape tape;
  for (const std::string& text : std::vector<std::string>{"", " ", "{", "[1,]", "[1 2]", R"({"a" 1})", R"({"a":})", R"({1: 2})", "01", "-", "1.", ".5", "1e", "1e+",
        "+1", "0x10", "NaN", "Infinity", "1e400", "-1e400", "tru", "nul", "[1] 2", "\"abc", "\"\x01\"", R"("\x")",
        R"("\u12")", R"("\ud800")", R"("\udc00")", R"("\ud800\u0041")", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
        "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "[\"a\"]]", std::string("[1,\0 2]", 7)}) {
    SCOPED_TRACE(json(text).dump(-1, ' ', true, json::error_handler_t::replace));
    expect_same(tape, text);
  }
}

// Random documents, and the same with random bytes changed: whatever nlohmann
// reads, the tape reads the same; whatever it refuses, the tape refuses.
TEST(JsonTape, AgreesWithNlohmannOnRandomAndDamagedDocuments) {
  std::mt19937_64 rng(20261204);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> pieces = {"a", "\"", "\\", "\n", "\x01", "\xc3\xa9", "\xf0\x9f\x98\x80", "\xff", " ",
                                           "{", "]", ",", "NULL", "\u20ac"};
  std::function<json(int)> random_value = [&](int depth) -> json {
    switch (pick(depth > 3 ? 6 : 8)) {
      case 0: return nullptr;
      case 1: return static_cast<bool>(pick(2));
      case 2: return static_cast<int64_t>(rng());
      case 3: return rng();
      case 4: return std::ldexp(static_cast<double>(static_cast<int64_t>(rng())), static_cast<int>(pick(200)) - 100);
      case 5: {
        std::string s;
        for (size_t k = pick(6); k > 0; --k) s += pieces[pick(pieces.size())];
        return s;
      }
      case 6: {
        json a = json::array();
        for (size_t k = pick(5); k > 0; --k) a.push_back(random_value(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (size_t k = pick(5); k > 0; --k) o["k" + std::to_string(pick(8))] = random_value(depth + 1);
        return o;
      }
    }
  };
  JsonTape tape;
  const std::string bytes = "{}[],:\"\\0123456789.eE+-tfnul \x80\xbf\xc3\xff";
  for (int round = 0; round < 20000; ++round) {
    std::string text = random_value(0).dump(pick(2) ? -1 : 1, ' ', pick(2), json::error_handler_t::replace);
    expect_same(tape, text);
    for (size_t k = 1 + pick(3); k > 0 && !text.empty(); --k) text[pick(text.size())] = bytes[pick(bytes.size())];
    expect_same(tape, text);
    if (testing::Test::HasFailure()) return;
  }
}

// find() on objects large enough to be indexed (JsonTape::kIndexedMembers)
// and small ones, with repeated keys (the last is read) and keys not there;
// at() on arrays of scalars (read at their place) and of containers (walked).
TEST(JsonTape, FindsKeysAndElementsAsNlohmannReadsThem) {
  std::mt19937_64 rng(20261205);
  JsonTape tape;
  for (int round = 0; round < 2000; ++round) {
    const size_t members = rng() % 60;
    std::string text = "{";
    for (size_t k = 0; k < members; ++k) {
      const std::string key = "\"f" + std::to_string(rng() % 40) + "\"";  // repeats at random
      std::string value = std::to_string(rng() % 1000);
      if (k % 7 == 3) value = "{\"x\":" + value + ",\"f1\":[1,{\"y\":2},3]}";  // nested: indexed apart
      if (k % 5 == 1) value = "[" + value + ",[4,5]," + value + "]";
      if (k % 5 == 2) value = "[" + value + ",6,7]";
      text += (k ? "," : "") + key + ":" + value;
    }
    text += "}";
    const json want = json::parse(text);
    const JsonTape::Ref got = tape.parse(text);
    for (int f = 0; f < 45; ++f) {
      const std::string key = "f" + std::to_string(f);
      const auto found = got.find(key);
      ASSERT_EQ(found.has_value(), want.contains(key)) << key << " in " << text;
      if (!found) continue;
      EXPECT_EQ(as_json(*found), want.at(key)) << key << " in " << text;
      if (found->is_array()) {
        for (size_t i = 0; i < found->size(); ++i) EXPECT_EQ(as_json(found->at(i)), want.at(key).at(i));
        for (size_t i = found->size(); i-- > 0;) EXPECT_EQ(as_json(found->at(i)), want.at(key).at(i));  // walked again
      }
      if (found->is_object()) {
        EXPECT_EQ(as_json(found->at("x")), want.at(key).at("x"));
      }
    }
  }
}

TEST(JsonTape, RefusesNestingDeeperThanItsBound) {
  JsonTape tape;
  const auto nested = [](unsigned depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(tape.parse(nested(JsonTape::kMaxDepth)));
  EXPECT_THROW(tape.parse(nested(JsonTape::kMaxDepth + 1)), Error);
  EXPECT_THROW(tape.parse(nested(100000)), Error);  // no stack for the taking
}

TEST(JsonTape, NumbersConvertAsNlohmannsGet) {
  JsonTape tape;
  const auto r = tape.parse(R"([3.9, -3.9, 7, 18446744073709551615, 1e19, "7", true])");
  EXPECT_EQ(r.at(0).get<int64_t>(), 3);
  EXPECT_EQ(r.at(1).get<int64_t>(), -3);
  EXPECT_DOUBLE_EQ(r.at(2).get<double>(), 7.0);
  EXPECT_EQ(r.at(3).get<int64_t>(), static_cast<int64_t>(UINT64_MAX));  // as nlohmann: the bits, cast
  EXPECT_THROW(r.at(4).get<int64_t>(), Error);                          // past the integer's range
  EXPECT_THROW(r.at(5).get<int64_t>(), Error);
  EXPECT_THROW(r.at(6).get<double>(), Error);
  EXPECT_THROW(r.at(2).get<std::string>(), Error);
  EXPECT_THROW(r.at(7), Error);
  EXPECT_THROW(r.at("k"), Error);
  // A thousand accounts are read in order, each once.
  std::string many = "[";
  for (int k = 0; k < 1000; ++k) many += (k ? "," : "") + std::to_string(k);
  int next = 0;
  tape.parse(many + "]").each([&](const JsonTape::Ref& e) { EXPECT_EQ(e.get<int>(), next++); });
  EXPECT_EQ(next, 1000);
}

}  // namespace
}  // namespace gpuledger::fleet
