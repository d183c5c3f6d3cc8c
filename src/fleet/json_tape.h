#pragma once
// One JSON document read into a flat array of nodes: the reader of the fleet
// database's roll-up bodies (window_json.h), which a month's report reads by
// the hundred thousand. nlohmann::json built a tree of maps, strings and
// vectors for each and spent most of a report's CPU doing so
// (docs/performance.md, section 6); a tape kept per thread grows once and is
// reused, so a body costs no allocation but its own strings.
//
// It reads what nlohmann's parser reads, the same way, so a roll-up comes back
// exactly as window_to_json wrote it (and as PostgreSQL's jsonb gives it back,
// keys reordered, numbers in plain decimals): integers as int64 (negative)
// or uint64, past those a double; fractions and exponents as the nearest
// double (std::from_chars, correctly rounded like strtod); strings unescaped
// (\uXXXX and surrogate pairs to UTF-8) and checked as UTF-8; a repeated key
// reads as its last value. Anything else - trailing text, a control byte in a
// string, a number out of double's range, nesting deeper than kMaxDepth -
// throws Error, and the reader reads the period finer (fleet_reader.cpp).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/error.h"

namespace gpuledger::fleet {

class JsonTape {
 public:
  static constexpr unsigned kMaxDepth = 64;
  enum class Type : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kArray, kObject };

 private:
  struct Node {
    Type type = Type::kNull;
    uint32_t end = 0;   // the index after this node's subtree
    uint32_t size = 0;  // containers: elements, or members (each a key node, then its value)
    uint32_t hash = 0;  // an object's keys: key_hash of the bytes, so a key is found without comparing every one
    union {
      bool b;
      int64_t i;
      uint64_t u;
      double d;
      struct {
        uint32_t offset, length;  // in strings_
      } s;
    };
    Node() : u(0) {}
  };

 public:
  // A value on the tape; valid until the tape parses again.
  class Ref {
   public:
    Type type() const { return node().type; }
    bool is_null() const { return type() == Type::kNull; }
    bool is_array() const { return type() == Type::kArray; }
    bool is_object() const { return type() == Type::kObject; }
    size_t size() const;  // elements or members; 0 for a scalar
    Ref at(size_t index) const;              // an array's element; throws when absent
    Ref at(std::string_view key) const;      // an object's member; throws when absent
    std::optional<Ref> find(std::string_view key) const;
    bool contains(std::string_view key) const { return find(key).has_value(); }
    // An object's members in order, each as (key, value); throws when this is
    // not an object. A repeated key comes once per time it is there.
    template <typename F>
    void members(F&& f) const {
      if (!is_object()) mismatch("object");
      for (uint32_t key = first_child(), k = 0; k < node().size; ++k, key = next(next(key)))
        f(Ref(tape_, key).string(), Ref(tape_, next(key)));
    }
    // An array's elements in order; throws when this is not an array.
    template <typename F>
    void each(F&& f) const {
      if (!is_array()) mismatch("array");
      for (uint32_t child = first_child(), k = 0; k < node().size; ++k, child = next(child)) f(Ref(tape_, child));
    }
    // As nlohmann's get<T>: numbers convert between each other (a fraction
    // into an integer truncates, out of the integer's range throws); an
    // object into a map from strings (a repeated key: its last value); any
    // other mismatch throws.
    template <typename T>
    T get() const;

   private:
    friend class JsonTape;
    Ref(const JsonTape* tape, uint32_t index) : tape_(tape), index_(index) {}
    const Node& node() const { return tape_->nodes_[index_]; }
    uint32_t first_child() const { return index_ + 1; }
    uint32_t next(uint32_t child) const { return tape_->nodes_[child].end; }
    std::string_view string() const;
    [[noreturn]] void mismatch(const char* want) const;
    const JsonTape* tape_;
    uint32_t index_;
  };

  // The document's root. Throws Error when `text` is not one JSON value.
  Ref parse(std::string_view text);

 private:
  class Parser;
  static uint32_t key_hash(std::string_view s);
  // An object's keys in an open-addressing table, made at its first find
  // when it has more than kIndexedMembers: a roll-up body's object is asked
  // for each of its ~30 fields, and walking its members for each was a fifth
  // of a fleet report's client time (docs/performance.md).
  static constexpr uint32_t kIndexedMembers = 8;
  struct KeyIndex {
    uint32_t object, offset, mask;  // the object's node; its slots in key_slots_
  };
  const KeyIndex& key_index(uint32_t object) const;
  std::vector<Node> nodes_;
  std::string strings_;  // every string's unescaped bytes, one after another
  // The indexes of this document's objects (reset by parse): a key node's
  // index + 1 per slot, 0 empty. A tape is one thread's, so they may grow in a const find.
  mutable std::vector<KeyIndex> key_indexes_;
  mutable std::vector<uint32_t> key_slots_;
  struct Element {
    uint32_t array = UINT32_MAX, index = 0, node = 0;
  };
  mutable Element last_element_;  // the last element at() walked to
};

namespace json_tape_detail {
template <typename T>
struct StringMap : std::false_type {};
template <typename V>
struct StringMap<std::map<std::string, V>> : std::true_type {};
}  // namespace json_tape_detail

template <typename T>
T JsonTape::Ref::get() const {
  const auto& n = node();
  if constexpr (json_tape_detail::StringMap<T>::value) {
    T out;
    members([&](std::string_view key, const Ref& v) {
      out.insert_or_assign(std::string(key), v.get<typename T::mapped_type>());
    });
    return out;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (n.type != Type::kString) mismatch("string");
    return std::string(string());
  } else if constexpr (std::is_same_v<T, bool>) {
    if (n.type != Type::kBool) mismatch("boolean");
    return n.b;
  } else {
    static_assert(std::is_arithmetic_v<T>, "JsonTape::Ref::get: a number, a string or a boolean");
    switch (n.type) {
      case Type::kInt: return static_cast<T>(n.i);
      case Type::kUint: return static_cast<T>(n.u);
      case Type::kDouble:
        if constexpr (std::is_floating_point_v<T>) {
          return static_cast<T>(n.d);
        } else {
          // In range only: a cast of a double past the integer's range is undefined.
          if (!(n.d >= -9.2233720368547758e18 && n.d < 9.2233720368547758e18) ||
              (std::is_unsigned_v<T> && n.d <= -1.0))
            mismatch("number in range");
          return static_cast<T>(static_cast<int64_t>(n.d));
        }
      default: mismatch("number");
    }
  }
}

}  // namespace gpuledger::fleet
