#include "fleet/json_tape.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace gpuledger::fleet {

class JsonTape::Parser {
 public:
  Parser(JsonTape& tape, std::string_view text) : tape_(tape), p_(text.data()), end_(text.data() + text.size()) {}

  void document() {
    tape_.nodes_.clear();
    tape_.strings_.clear();
    space();
    value(0);
    space();
    if (p_ != end_) fail("text after the document");
  }

 private:
  [[noreturn]] void fail(const char* what) const { throw Error(std::string("JSON: ") + what); }
  void space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool take(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  void word(std::string_view w) {
    if (static_cast<size_t>(end_ - p_) < w.size() || std::string_view(p_, w.size()) != w) fail("an unknown word");
    p_ += w.size();
  }
  uint32_t push(Type type) {
    if (tape_.nodes_.size() >= UINT32_MAX - 1) fail("too many values");
    tape_.nodes_.emplace_back().type = type;
    return static_cast<uint32_t>(tape_.nodes_.size() - 1);
  }
  void close(uint32_t node) { tape_.nodes_[node].end = static_cast<uint32_t>(tape_.nodes_.size()); }

  void value(unsigned depth) {
    if (p_ == end_) fail("a value is missing");
    switch (*p_) {
      case '{': return container(Type::kObject, '}', depth);
      case '[': return container(Type::kArray, ']', depth);
      case '"': return close(string());
      case 't': word("true"), close(boolean(true)); return;
      case 'f': word("false"), close(boolean(false)); return;
      case 'n': word("null"), close(push(Type::kNull)); return;
      default: return close(number());
    }
  }
  uint32_t boolean(bool b) {
    const uint32_t n = push(Type::kBool);
    tape_.nodes_[n].b = b;
    return n;
  }

  void container(Type type, char closer, unsigned depth) {
    if (depth >= kMaxDepth) fail("nested too deep");
    ++p_;
    const uint32_t n = push(type);
    uint32_t size = 0;
    space();
    if (!take(closer)) {
      do {
        space();
        if (type == Type::kObject) {
          if (p_ == end_ || *p_ != '"') fail("a member's key is not a string");
          const uint32_t key = string();
          close(key);
          tape_.nodes_[key].hash = key_hash(Ref(&tape_, key).string());
          space();
          if (!take(':')) fail("a member's ':' is missing");
          space();
        }
        value(depth + 1);
        ++size;
        space();
      } while (take(','));
      if (!take(closer)) fail("a container is not closed");
    }
    tape_.nodes_[n].size = size;
    close(n);
  }

  uint32_t number() {
    const char* start = p_;
    bool integer = true;
    take('-');
    if (take('0')) {
    } else if (p_ != end_ && *p_ >= '1' && *p_ <= '9') {
      digits();
    } else {
      fail("not a value");
    }
    if (take('.')) {
      integer = false;
      if (!digits()) fail("a fraction without digits");
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integer = false;
      if (!take('+')) take('-');
      if (!digits()) fail("an exponent without digits");
    }
    const uint32_t n = push(Type::kInt);
    Node& node = tape_.nodes_[n];
    if (integer && *start == '-' && std::from_chars(start, p_, node.i).ec == std::errc()) return n;
    if (integer && *start != '-' && std::from_chars(start, p_, node.u).ec == std::errc()) {
      node.type = Type::kUint;
      return n;
    }
    // A fraction, an exponent, or an integer past 64 bits: the nearest double.
    node.type = Type::kDouble;
    const auto r = std::from_chars(start, p_, node.d);
    if (r.ec == std::errc::result_out_of_range) {
      // Past double's range either way: strtod's answer, as nlohmann takes it
      // (0 below the smallest subnormal, infinity above the largest).
      node.d = std::strtod(std::string(start, p_).c_str(), nullptr);
    } else if (r.ec != std::errc() || r.ptr != p_) {
      fail("a number that does not read");
    }
    if (!std::isfinite(node.d)) fail("a number out of range");
    return n;
  }
  bool digits() {
    const char* from = p_;
    while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ != from;
  }

  uint32_t string() {
    ++p_;  // the opening quote
    std::string& out = tape_.strings_;
    const size_t offset = out.size();
    for (;;) {
      // A run of plain ASCII taken at once (most of a body's strings are all of it).
      const char* run = p_;
      while (p_ != end_ && plain(static_cast<unsigned char>(*p_))) ++p_;
      out.append(run, static_cast<size_t>(p_ - run));
      if (p_ == end_) fail("a string is not closed");
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') break;
      if (c < 0x20) fail("a control byte in a string");
      if (c == '\\')
        escape(out);
      else
        utf8(out);
    }
    ++p_;
    if (out.size() > UINT32_MAX) fail("strings too long");
    const uint32_t n = push(Type::kString);
    tape_.nodes_[n].s = {static_cast<uint32_t>(offset), static_cast<uint32_t>(out.size() - offset)};
    return n;
  }
  static bool plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }
  void escape(std::string& out) {
    if (++p_ == end_) fail("a string is not closed");
    const char c = *p_++;
    switch (c) {
      case '"': case '\\': case '/': out.push_back(c); return;
      case 'b': out.push_back('\b'); return;
      case 'f': out.push_back('\f'); return;
      case 'n': out.push_back('\n'); return;
      case 'r': out.push_back('\r'); return;
      case 't': out.push_back('\t'); return;
      case 'u': break;
      default: fail("an unknown escape");
    }
    uint32_t cp = hex4();
    if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: its low one must follow
      if (!take('\\') || !take('u')) fail("a lone surrogate");
      const uint32_t low = hex4();
      if (low < 0xDC00 || low > 0xDFFF) fail("a lone surrogate");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      fail("a lone surrogate");
    }
    append_utf8(out, cp);
  }
  uint32_t hex4() {
    if (end_ - p_ < 4) fail("a short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k, ++p_) {
      const char c = *p_;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else fail("a bad \\u escape");
    }
    return v;
  }
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  // One UTF-8 sequence, checked as nlohmann's lexer does (RFC 3629: no
  // overlong forms, no surrogates, nothing past U+10FFFF).
  void utf8(std::string& out) {
    const auto b0 = static_cast<unsigned char>(*p_);
    int more;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (b0 >= 0xC2 && b0 <= 0xDF) more = 1;
    else if (b0 == 0xE0) more = 2, lo = 0xA0;
    else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) more = 2;
    else if (b0 == 0xED) more = 2, hi = 0x9F;
    else if (b0 == 0xF0) more = 3, lo = 0x90;
    else if (b0 >= 0xF1 && b0 <= 0xF3) more = 3;
    else if (b0 == 0xF4) more = 3, hi = 0x8F;
    else fail("a string is not UTF-8");
    if (end_ - p_ <= more) fail("a string is not UTF-8");
    for (int k = 1; k <= more; ++k) {
      const auto b = static_cast<unsigned char>(p_[k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) fail("a string is not UTF-8");
    }
    out.append(p_, static_cast<size_t>(more + 1));
    p_ += more + 1;
  }

  JsonTape& tape_;
  const char* p_;
  const char* end_;
};

// FNV-1a: a key's hash, compared before its bytes (a body's object has tens of keys).
uint32_t JsonTape::key_hash(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h;
}

JsonTape::Ref JsonTape::parse(std::string_view text) {
  key_indexes_.clear();
  key_slots_.clear();
  last_element_ = {};
  Parser(*this, text).document();
  return Ref(this, 0);
}

size_t JsonTape::Ref::size() const { return is_array() || is_object() ? node().size : 0; }

JsonTape::Ref JsonTape::Ref::at(size_t index) const {
  if (!is_array()) mismatch("array");
  if (index >= node().size) throw Error("JSON: an array has no element " + std::to_string(index));
  // Scalars only (a node each): the element is at its place; else walked to,
  // from the last element asked for when it is of this array and not after
  // (an account's fields are read in order: walking from the first each time
  // was 6 % of a 10,000-node report).
  if (node().end == index_ + 1 + node().size) return Ref(tape_, first_child() + static_cast<uint32_t>(index));
  auto& last = tape_->last_element_;
  uint32_t child = first_child(), k = 0;
  if (last.array == index_ && last.index <= index) child = last.node, k = last.index;
  for (; k < index; ++k) child = next(child);
  last = {index_, k, child};
  return Ref(tape_, child);
}

const JsonTape::KeyIndex& JsonTape::key_index(uint32_t object) const {
  for (const KeyIndex& ix : key_indexes_)
    if (ix.object == object) return ix;
  const uint32_t members = nodes_[object].size;
  uint32_t capacity = 16;
  while (capacity < 2 * members) capacity *= 2;
  const KeyIndex ix{object, static_cast<uint32_t>(key_slots_.size()), capacity - 1};
  key_slots_.resize(key_slots_.size() + capacity, 0);
  uint32_t key = object + 1;
  for (uint32_t k = 0; k < members; ++k, key = nodes_[nodes_[key].end].end) {
    const std::string_view name = Ref(this, key).string();
    for (uint32_t i = nodes_[key].hash & ix.mask;; i = (i + 1) & ix.mask) {
      uint32_t& slot = key_slots_[ix.offset + i];
      // Empty, or the same key before: the last of a repeated key is the one read.
      if (slot == 0 || (nodes_[slot - 1].hash == nodes_[key].hash && Ref(this, slot - 1).string() == name)) {
        slot = key + 1;
        break;
      }
    }
  }
  key_indexes_.push_back(ix);
  return key_indexes_.back();
}

std::optional<JsonTape::Ref> JsonTape::Ref::find(std::string_view key) const {
  if (!is_object()) mismatch("object");
  const uint32_t hash = key_hash(key);
  if (node().size > kIndexedMembers) {
    const KeyIndex& ix = tape_->key_index(index_);
    for (uint32_t i = hash & ix.mask;; i = (i + 1) & ix.mask) {
      const uint32_t slot = tape_->key_slots_[ix.offset + i];
      if (slot == 0) return std::nullopt;
      if (tape_->nodes_[slot - 1].hash == hash && Ref(tape_, slot - 1).string() == key) return Ref(tape_, next(slot - 1));
    }
  }
  std::optional<Ref> found;
  uint32_t child = first_child();
  for (uint32_t k = 0; k < node().size; ++k) {
    const uint32_t value = next(child);
    if (tape_->nodes_[child].hash == hash && Ref(tape_, child).string() == key)
      found = Ref(tape_, value);  // the last of a repeated key
    child = next(value);
  }
  return found;
}

JsonTape::Ref JsonTape::Ref::at(std::string_view key) const {
  auto found = find(key);
  if (!found) throw Error("JSON: no key \"" + std::string(key) + "\"");
  return *found;
}

std::string_view JsonTape::Ref::string() const {
  const auto& s = node().s;
  return std::string_view(tape_->strings_).substr(s.offset, s.length);
}

void JsonTape::Ref::mismatch(const char* want) const {
  static constexpr const char* kNames[] = {"null", "boolean", "number", "number", "number", "string", "array", "object"};
  throw Error(std::string("JSON: a ") + want + " is wanted, not a " + kNames[static_cast<int>(type())]);
}

}  // namespace gpuledger::fleet
