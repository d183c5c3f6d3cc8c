#include "fleet/canonical_window_json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "ledger/window_fields.h"

namespace gpuledger::fleet {

namespace {

// Thrown where the text leaves the one shape; caught at the top (rare: the
// bodies a report reads are window_to_json's).
struct NotCanonical {};
[[noreturn]] void bail() { throw NotCanonical{}; }

using Span = std::string_view;

// ---- Where a value's text ends (nullptr: not in the shape) ----

const char* string_end(const char* p, const char* end) {
  for (++p; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"') return p + 1;
    if (c < 0x20 || c > 0x7f || c == '\\') return nullptr;  // an escape or UTF-8: the general reader's
  }
  return nullptr;
}
const char* digits_end(const char* p, const char* end) {
  while (p < end && *p >= '0' && *p <= '9') ++p;
  return p;
}
// JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
const char* number_end(const char* p, const char* end) {
  if (p < end && *p == '-') ++p;
  if (p < end && *p == '0') {
    ++p;
  } else if (p < end && *p >= '1' && *p <= '9') {
    p = digits_end(p, end);
  } else {
    return nullptr;
  }
  if (p < end && *p == '.') {
    const char* d = digits_end(p + 1, end);
    if (d == p + 1) return nullptr;
    p = d;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    const char* d = digits_end(p, end);
    if (d == p) return nullptr;
    p = d;
  }
  return p;
}
const char* word_end(const char* p, const char* end, Span word) {
  return static_cast<size_t>(end - p) >= word.size() && Span(p, word.size()) == word ? p + word.size() : nullptr;
}
const char* scalar_end(const char* p, const char* end) {
  switch (*p) {
    case '"': return string_end(p, end);
    case 't': return word_end(p, end, "true");
    case 'f': return word_end(p, end, "false");
    case 'n': return word_end(p, end, "null");
    default: return number_end(p, end);
  }
}

// ---- A scalar's text as a field's value, as JsonTape::Ref::get gives it ----

bool is_null(Span s) { return s == "null"; }
bool is_number(Span s) { return !s.empty() && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')); }
bool integral(Span s) {  // a loop: find_first_of calls memchr per byte
  for (const char c : s)
    if (c == '.' || c == 'e' || c == 'E') return false;
  return true;
}

void convert(Span s, std::string& v) {
  if (s.size() < 2 || s.front() != '"') bail();
  v.assign(s.data() + 1, s.size() - 2);
}
void convert(Span s, bool& v) {
  if (s == "true")
    v = true;
  else if (s == "false")
    v = false;
  else
    bail();
}
// An integer that int64 holds; the general reader converts the rest (a
// fraction truncated, past int64 wrapped or refused).
void convert(Span s, int64_t& v) {
  if (!is_number(s) || !integral(s)) bail();
  if (std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc()) bail();
}
void convert(Span s, uint64_t& v) {  // a negative one: its int64's bits, as the general reader casts it
  if (!s.empty() && s[0] == '-') {
    int64_t i = 0;
    convert(s, i);
    v = static_cast<uint64_t>(i);
    return;
  }
  if (!is_number(s) || !integral(s)) bail();
  if (std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc()) bail();
}
// An integer is the int64's double (so "-0" is 0.0, as the tape reads it);
// else the nearest double, an out-of-range one left to the general reader.
void convert(Span s, double& v) {
  if (!is_number(s)) bail();
  if (integral(s)) {
    int64_t i = 0;
    convert(s, i);
    v = static_cast<double>(i);
    return;
  }
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) bail();
}
// The device findings have no JSON key (window_fields.h): never read here.
void convert(Span, std::map<std::string, int64_t>&) { bail(); }
template <typename T>
void convert(Span s, std::optional<T>& v) {
  if (is_null(s)) {
    v.reset();
    return;
  }
  T value{};
  convert(s, value);
  v = std::move(value);
}

// ---- The text, read left to right ----

// A value's text where it is kept for later: trivial, so that a body's
// tables of them cost no initialising (a string_view's zeroing was ~6 KB a body).
struct Piece {
  const char* data;
  size_t size;
  Piece& operator=(Span s) {
    data = s.data();
    size = s.size();
    return *this;
  }
  operator Span() const { return {data, size}; }
};

// An array's cells (at most N).
template <size_t N>
struct Cells {
  std::array<Piece, N> at;
  size_t size = 0;
};

class Text {
 public:
  explicit Text(Span text) : p_(text.data()), end_(text.data() + text.size()) {}
  bool done() const { return p_ == end_; }
  bool next_is(char c) const { return p_ != end_ && *p_ == c; }
  bool take(char c) {
    if (!next_is(c)) return false;
    ++p_;
    return true;
  }
  void expect(char c) {
    if (!take(c)) bail();
  }
  const char* here() const { return p_; }
  Span scalar() {
    if (p_ == end_) bail();
    const char* e = scalar_end(p_, end_);
    if (!e) bail();
    const Span s(p_, static_cast<size_t>(e - p_));
    p_ = e;
    return s;
  }
  // A member's key (its bytes, unquoted) and its ':'.
  Span key() {
    if (!next_is('"')) bail();
    const Span s = scalar();
    expect(':');
    return s.substr(1, s.size() - 2);
  }
  // An array of scalars.
  template <size_t N>
  void scalars(Cells<N>& out) {
    expect('[');
    out.size = 0;
    if (take(']')) return;
    do {
      if (out.size == N) bail();
      out.at[out.size++] = scalar();
    } while (take(','));
    expect(']');
  }
  // Calls f for each element of an array, f reading it.
  template <typename F>
  void each(F&& f) {
    expect('[');
    if (take(']')) return;
    do {
      f();
    } while (take(','));
    expect(']');
  }

 private:
  const char* p_;
  const char* end_;
};

// ---- The window's top-level keys, from the field table ----

enum class Kind : uint8_t { kScalar, kCells, kObject, kAccounts, kCharges };
constexpr size_t kMaxKeys = 48, kMaxCells = 8, kMaxMembers = 8;

struct Layout {
  std::vector<std::string> keys;  // in byte order, as nlohmann writes an object's
  std::vector<Kind> kinds;
  std::vector<int> field_slot;  // each window field, in for_each_window_field's order: its key's place; -1 none
};

const Layout& layout() {
  static const Layout built = [] {
    std::map<std::string, Kind> kinds = {{"accounts", Kind::kAccounts}, {"charges", Kind::kCharges}};
    std::vector<std::string> field_key;
    ledger::WindowRecord none;
    ledger::for_each_window_field(
        [&](const ledger::WindowField& f, auto&&) {
          if (!f.json_group && !f.json) {
            field_key.emplace_back();
            return;
          }
          field_key.emplace_back(f.json_group ? f.json_group : f.json);
          kinds[field_key.back()] = !f.json_group ? Kind::kScalar : f.json ? Kind::kObject : Kind::kCells;
        },
        none);
    Layout l;
    for (const auto& [key, kind] : kinds) {
      l.keys.push_back(key);
      l.kinds.push_back(kind);
    }
    for (const auto& key : field_key) {
      int slot = -1;
      for (size_t i = 0; i < l.keys.size(); ++i)
        if (!key.empty() && l.keys[i] == key) slot = static_cast<int>(i);
      l.field_slot.push_back(slot);
    }
    // A body's state holds kMaxKeys keys and one object group's members.
    if (l.keys.size() > kMaxKeys || std::count(l.kinds.begin(), l.kinds.end(), Kind::kObject) > 1)
      throw Error("fleet: the window JSON has more keys or objects than its reader's table");
    return l;
  }();
  return built;
}

// ---- One body ----

using AccountCells = Cells<ledger::account_field::kJsonFields + 2>;

struct Body {
  std::array<bool, kMaxKeys> seen{};
  std::array<Piece, kMaxKeys> scalar;
  std::array<Cells<kMaxCells>, kMaxKeys> cells;
  Cells<kMaxMembers> member_keys, member_values;  // the object group's (energy)
  std::optional<std::vector<ledger::EnergyCharge>> parts;
};

// `expected`: how many there usually are (two an account), reserved so that
// the vector is not grown and moved element by element as it fills.
template <typename Charge>
void read_charges(Text& t, std::vector<Charge>& out, size_t expected) {
  out.reserve(expected);
  t.each([&] {
    Cells<3> c;
    t.scalars(c);
    if (c.size != 3) bail();
    Charge charge;
    convert(c.at[0], charge.account);
    const Span kind = c.at[1];
    if (kind.size() < 2 || kind.front() != '"') bail();
    charge.kind = ledger::parse_charge_kind(kind.substr(1, kind.size() - 2));  // unknown: the general reader's error
    if constexpr (std::is_same_v<Charge, ledger::Charge>)
      convert(c.at[2], charge.micros);
    else
      convert(c.at[2], charge.millijoules);
    out.push_back(std::move(charge));
  });
}

// An account's array: its cells, and those that are arrays (the device
// efficiency, the idle runs) as their own cells.
struct Account {
  AccountCells cells;
  std::array<int8_t, std::tuple_size_v<decltype(AccountCells::at)>> sub_of;
  std::array<Cells<kMaxCells>, 4> subs;
  size_t nsubs = 0;

  Span at(const ledger::AccountField& f) const {
    const auto i = static_cast<size_t>(f.json_at);
    if (f.json_sub < 0) return cells.at[i];
    if (sub_of[i] < 0) bail();
    const auto& sub = subs[static_cast<size_t>(sub_of[i])];
    if (static_cast<size_t>(f.json_sub) >= sub.size) bail();
    return sub.at[static_cast<size_t>(f.json_sub)];
  }
};

template <typename T>
void take_account(const Account& a, const ledger::AccountField& f, T& v) {
  convert(a.at(f), v);
}
template <typename W, typename T>
void take_account(const Account& a, const ledger::AccountField& f, ledger::Part<W, T>&& p) {  // null: none
  ledger::read_part(p, is_null(a.cells.at[static_cast<size_t>(f.json_at)]), [&](T& v) { take_account(a, f, v); });
}

ledger::AccountRecord read_account(Text& t) {
  Account a;
  a.sub_of.fill(-1);
  t.expect('[');
  do {
    if (a.cells.size == a.cells.at.size()) bail();
    if (t.next_is('[')) {
      if (a.nsubs == a.subs.size()) bail();
      const char* from = t.here();
      t.scalars(a.subs[a.nsubs]);
      a.sub_of[a.cells.size] = static_cast<int8_t>(a.nsubs++);
      a.cells.at[a.cells.size++] = Span(from, static_cast<size_t>(t.here() - from));
    } else {
      a.cells.at[a.cells.size++] = t.scalar();
    }
  } while (t.take(','));
  t.expect(']');
  const size_t n = a.cells.size;
  if (n != ledger::account_field::kJsonFields && n != ledger::account_field::kJsonFields + 2) bail();
  ledger::AccountRecord out;
  ledger::for_each_account_field(
      [&](const ledger::AccountField& f, auto&& v) {
        if (f.json_at >= 0 && static_cast<size_t>(f.json_at) < n) take_account(a, f, std::forward<decltype(v)>(v));
      },
      out);
  return out;
}

// A body's accounts. Most windows have a handful: room for four from the
// start, where the vector of 544-byte records grew to 1, 2 and 4, moving
// every record it held each time (9 % of a CSV by day's client in `perf`).
void read_accounts(Text& t, std::vector<ledger::AccountRecord>& out) {
  out.reserve(4);
  t.each([&] { out.push_back(read_account(t)); });
}

// `expected_parts`: read_charges' `expected` for the energy parts.
void read_object(Text& t, Body& b, size_t expected_parts) {
  t.expect('{');
  b.member_keys.size = b.member_values.size = 0;
  if (t.take('}')) return;
  do {
    const Span key = t.key();
    if (key == "parts") {
      if (b.parts) bail();
      b.parts.emplace();
      read_charges(t, *b.parts, expected_parts);
      continue;
    }
    if (b.member_keys.size == kMaxMembers) bail();
    for (size_t i = 0; i < b.member_keys.size; ++i)
      if (Span(b.member_keys.at[i]) == key) bail();  // repeated: the general reader takes the last
    b.member_keys.at[b.member_keys.size++] = key;
    b.member_values.at[b.member_values.size++] = t.scalar();
  } while (t.take(','));
  t.expect('}');
}

// A window field's value: where its key says, as the general reader's take().
template <typename T>
inline constexpr bool kIsOptional = false;
template <typename T>
inline constexpr bool kIsOptional<std::optional<T>> = true;

template <typename T>
void take(const Body& b, int slot, const ledger::WindowField& f, T& v) {
  constexpr bool kOptional = kIsOptional<T>;
  const auto s = static_cast<size_t>(slot);
  Span text;
  switch (layout().kinds[s]) {
    case Kind::kScalar:
      if (!b.seen[s]) {
        if constexpr (kOptional) return v.reset();  // an optional's key not there: unknown
        bail();
      }
      text = b.scalar[s];
      break;
    case Kind::kCells:
      if (!b.seen[s] || static_cast<size_t>(f.json_at) >= b.cells[s].size) bail();
      text = b.cells[s].at[static_cast<size_t>(f.json_at)];
      break;
    case Kind::kObject: {
      if (!b.seen[s] || !f.json) bail();
      const Span member = f.json;
      size_t i = 0;
      while (i < b.member_keys.size && Span(b.member_keys.at[i]) != member) ++i;
      if (i == b.member_keys.size) {
        if constexpr (kOptional) return v.reset();
        bail();
      }
      text = b.member_values.at[i];
      break;
    }
    default: bail();
  }
  convert(text, v);
}
template <typename W, typename T>
void take(const Body& b, int slot, const ledger::WindowField& f, ledger::Part<W, T>&& p) {  // no group: unknown
  ledger::read_part(p, !b.seen[static_cast<size_t>(slot)], [&](T& v) { take(b, slot, f, v); });
}

ledger::WindowRecord read_window(Span text) {
  const Layout& l = layout();
  Body b;
  ledger::WindowRecord w;
  Text t(text);
  t.expect('{');
  size_t next = 0;
  if (!t.take('}')) {
    do {
      const Span key = t.key();
      // Keys in byte order: those skipped are not there (an energy unknown); a repeat or an unknown key is not the shape.
      while (next < l.keys.size() && Span(l.keys[next]) < key) ++next;
      if (next == l.keys.size() || Span(l.keys[next]) != key) bail();
      const size_t slot = next++;
      b.seen[slot] = true;
      switch (l.kinds[slot]) {
        case Kind::kScalar: b.scalar[slot] = t.scalar(); break;
        case Kind::kCells: t.scalars(b.cells[slot]); break;
        case Kind::kObject: read_object(t, b, 2 * w.accounts.size()); break;
        case Kind::kAccounts: read_accounts(t, w.accounts); break;
        case Kind::kCharges: read_charges(t, w.charges, 2 * w.accounts.size()); break;
      }
    } while (t.take(','));
    t.expect('}');
  }
  if (!t.done()) bail();
  for (size_t i = 0; i < l.keys.size(); ++i)
    if ((l.kinds[i] == Kind::kAccounts || l.kinds[i] == Kind::kCharges) && !b.seen[i]) bail();
  size_t k = 0;
  ledger::for_each_window_field(
      [&](const ledger::WindowField& f, auto&& v) {
        const int slot = l.field_slot[k++];
        if (slot >= 0) take(b, slot, f, std::forward<decltype(v)>(v));
      },
      w);
  if (w.energy) {
    if (!b.parts) bail();
    w.energy->charges = std::move(*b.parts);
  }
  return w;
}

// A negative zero: PostgreSQL's numeric has none, so the views read "-0.0"
// as 0.0 where this reader gives -0.0 (printed "-0.000000" in a bill).
bool has_negative_zero(const ledger::AccountRecord& a) {
  bool found = false;
  auto check = [&](double v) { found = found || (v == 0.0 && std::signbit(v)); };
  ledger::for_each_account_field(
      [&](const ledger::AccountField&, auto&& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>)
          check(v);
        else if constexpr (std::is_same_v<T, std::optional<double>>)
          if (v) check(*v);
      },
      a);
  return found;
}

WindowChildren read_children(Span text) {
  WindowChildren out;
  Text t(text);
  t.expect('{');
  // The keys window_children_to_json writes, in its (byte) order, each once; accounts and charges always.
  static constexpr std::array<Span, 3> kKeys = {"accounts", "charges", "energy"};
  size_t next = 0;
  std::array<bool, kKeys.size()> seen{};
  do {
    const Span key = t.key();
    while (next < kKeys.size() && kKeys[next] != key) ++next;
    if (next == kKeys.size()) bail();
    seen[next] = true;
    switch (next++) {
      case 0: read_accounts(t, out.accounts); break;
      case 1: read_charges(t, out.charges, 2 * out.accounts.size()); break;
      default: read_charges(t, out.energy.emplace(), 2 * out.accounts.size()); break;
    }
  } while (t.take(','));
  t.expect('}');
  if (!t.done() || !seen[0] || !seen[1]) bail();
  for (const auto& a : out.accounts)
    if (has_negative_zero(a)) bail();
  return out;
}

// What `read` reads of the text, or nullopt where it leaves the shape.
template <class T>
std::optional<T> in_shape(T (*read)(Span), Span text) {
  try {
    return read(text);
  } catch (const NotCanonical&) {
    return std::nullopt;
  } catch (const Error&) {  // an unknown charge kind
    return std::nullopt;
  }
}

}  // namespace

std::optional<WindowChildren> window_children_from_canonical_json(std::string_view text) {
  return in_shape(read_children, text);
}

std::optional<ledger::WindowRecord> window_from_canonical_json(std::string_view text) {
  return in_shape(read_window, text);
}

}  // namespace gpuledger::fleet
