#include "fleet/window_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

#include "common/error.h"
#include "fleet/canonical_window_json.h"
#include "fleet/json_tape.h"
#include "ledger/window_fields.h"

namespace gpuledger::fleet {

namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
// A window field's place in the JSON (ledger/window_fields.h): j's key, or its
// group's key or position.
json& place(json& j, const ledger::WindowField& f) {
  json& in = f.json_group ? j[f.json_group] : j;
  return f.json ? in[f.json] : in[static_cast<size_t>(f.json_at)];
}
template <typename T>
void put(json& j, const ledger::WindowField& f, const T& v) {
  place(j, f) = json(v);
}
template <typename T>
void put(json& j, const ledger::WindowField& f, const std::optional<T>& v) {
  place(j, f) = opt(v);
}
template <typename W, typename T>
void put(json& j, const ledger::WindowField& f, const ledger::Part<const W, T>& p) {  // no energy: no "energy"
  if (p.whole) put(j, f, (*p.whole).*p.member);
}

// Reading goes through a JsonTape (json_tape.h): the same values as
// nlohmann's parser, without a tree per body.
using Ref = JsonTape::Ref;

// The field's value in j (a key that is not there: an Error).
Ref required(const Ref& j, const ledger::WindowField& f) {
  const Ref in = f.json_group ? j.at(f.json_group) : j;
  return f.json ? in.at(f.json) : in.at(static_cast<size_t>(f.json_at));
}
template <typename T>
void take(const Ref& j, const ledger::WindowField& f, T& v) {
  v = required(j, f).get<T>();
}
// An optional's key that is not there: unknown, like null.
template <typename T>
void take(const Ref& j, const ledger::WindowField& f, std::optional<T>& v) {
  const Ref in = f.json_group ? j.at(f.json_group) : j;
  const std::optional<Ref> at = f.json ? in.find(f.json) : std::optional<Ref>(in.at(static_cast<size_t>(f.json_at)));
  v = !at || at->is_null() ? std::nullopt : std::optional<T>(at->get<T>());
}
template <typename W, typename T>
void take(const Ref& j, const ledger::WindowField& f, ledger::Part<W, T>&& p) {  // no "energy": unknown
  ledger::read_part(p, !j.contains(f.json_group), [&](T& v) { take(j, f, v); });
}

// An account as an array (positions: ledger/window_fields.h, AccountField's
// json_at): a month of a fleet's day roll-ups is 720,000 accounts, and arrays
// parse about twice as fast as objects. The Slurm user and account (fleet
// schema 5) follow only when one is not "": an account without them is the
// array it was before they existed.
constexpr size_t kAccountFields = ledger::account_field::kJsonFields, kAccountFieldsWithSlurm = kAccountFields + 2;

template <typename T>
json value(const T& v) {
  return json(v);
}
template <typename T>
json value(const std::optional<T>& v) {
  return opt(v);
}

json& slot_of(json& out, const ledger::AccountField& f) {
  json& at = out[static_cast<size_t>(f.json_at)];
  return f.json_sub < 0 ? at : at[static_cast<size_t>(f.json_sub)];
}
template <typename T>
void put_account(json& out, const ledger::AccountField& f, const T& v) {
  slot_of(out, f) = value(v);
}
template <typename W, typename T>
void put_account(json& out, const ledger::AccountField& f, const ledger::Part<const W, T>& p) {  // none: null
  if (p.whole) put_account(out, f, (*p.whole).*p.member);
}

json account(const ledger::AccountRecord& a) {
  const bool slurm = !a.labels.slurm_user.empty() || !a.labels.slurm_account.empty();
  json out = json::array();
  for (size_t i = 0; i < (slurm ? kAccountFieldsWithSlurm : kAccountFields); ++i) out.push_back(nullptr);
  ledger::for_each_account_field(
      [&](const ledger::AccountField& f, auto&& v) {
        if (f.json_at >= 0 && static_cast<size_t>(f.json_at) < out.size()) put_account(out, f, v);
      },
      a);
  return out;
}

Ref slot_of(const Ref& j, const ledger::AccountField& f) {
  const Ref at = j.at(static_cast<size_t>(f.json_at));
  return f.json_sub < 0 ? at : at.at(static_cast<size_t>(f.json_sub));
}
template <typename T>
void take_account(const Ref& j, const ledger::AccountField& f, T& v) {
  v = slot_of(j, f).get<T>();
}
template <typename T>
void take_account(const Ref& j, const ledger::AccountField& f, std::optional<T>& v) {
  const Ref at = slot_of(j, f);
  v = at.is_null() ? std::nullopt : std::optional<T>(at.get<T>());
}
template <typename W, typename T>
void take_account(const Ref& j, const ledger::AccountField& f, ledger::Part<W, T>&& p) {  // null: no idle runs
  ledger::read_part(p, j.at(static_cast<size_t>(f.json_at)).is_null(), [&](T& v) { take_account(j, f, v); });
}

ledger::AccountRecord account(const Ref& j) {
  if (!j.is_array() || (j.size() != kAccountFields && j.size() != kAccountFieldsWithSlurm))
    throw Error("fleet database: a roll-up's account is malformed");
  ledger::AccountRecord a;
  ledger::for_each_account_field(
      [&](const ledger::AccountField& f, auto&& v) {
        if (f.json_at >= 0 && static_cast<size_t>(f.json_at) < j.size())
          take_account(j, f, std::forward<decltype(v)>(v));
      },
      a);
  return a;
}

}  // namespace

std::string window_to_json(const ledger::WindowRecord& w) {
  json j = json::object();
  ledger::for_each_window_field(
      [&](const ledger::WindowField& f, auto&& v) {
        if (f.json || f.json_group) put(j, f, v);
      },
      w);
  json& accounts = j["accounts"] = json::array();
  for (const auto& a : w.accounts) accounts.push_back(account(a));
  json& charges = j["charges"] = json::array();
  for (const auto& c : w.charges) charges.push_back({c.account, std::string(ledger::to_string(c.kind)), c.micros});
  if (w.energy) {
    json parts = json::array();
    for (const auto& c : w.energy->charges)
      parts.push_back({c.account, std::string(ledger::to_string(c.kind)), c.millijoules});
    j["energy"]["parts"] = parts;
  }
  // Strings are the store's (valid UTF-8); replace rather than throw on any other byte.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// A window's body is written straight into its text (the shipper made a JSON
// tree of each window before: 16 % of its CPU, docs/performance.md), the
// values nlohmann's dump would write, but that a NUL byte becomes '?' as it does
// in every fleet row (PostgreSQL text holds none, and a body the server
// cannot read as text would be refused, holding the node's batch), and that
// an unsigned count is written as the signed 64-bit number its column holds.
void put_text(std::string& out, const std::string& v) {
  bool plain = true;
  for (const unsigned char c : v) plain = plain && c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  if (plain) {
    out += '"';
    out += v;
    out += '"';
    return;
  }
  std::string clean = v;
  for (auto& c : clean)
    if (c == '\0') c = '?';
  out += json(clean).dump(-1, ' ', false, json::error_handler_t::replace);
}
void put_value(std::string& out, const std::string& v) { put_text(out, v); }
// The shortest text that reads back as the same double (nlohmann writes the
// same value, at times other digits: a body is read as numbers, not bytes).
// What JSON has no number for is the text PostgreSQL reads as that float
// ("NaN", "Infinity"), as the rows of schema 6 stored it: null would leave a
// column that may not be null empty, and the body refused.
void put_value(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += std::isnan(v) ? "\"NaN\"" : v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char buf[32];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
void put_value(std::string& out, bool v) { out += v ? "true" : "false"; }
void put_value(std::string& out, int64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}
void put_value(std::string& out, uint64_t v) { put_value(out, static_cast<int64_t>(v)); }
template <typename T>
void put_value(std::string& out, const std::optional<T>& v) {
  if (v)
    put_value(out, *v);
  else
    out += "null";
}

// An account's array (window_fields.h positions): each position's text, a
// position with sub-positions an array of theirs (null when none was put).
// The values are written once, in field order, into one buffer kept by the
// thread, and copied out in position order: a string per position (~30 an
// account, three accounts a window) was half of this function's time in a
// fleet shipper's `perf`.
void put_account(std::string& out, const ledger::AccountRecord& a) {
  struct Span {
    uint32_t at = 0, size = 0;  // size 0: not put (a value's text is never empty)
  };
  constexpr size_t kMaxSub = 8;
  const bool slurm = !a.labels.slurm_user.empty() || !a.labels.slurm_account.empty();
  const size_t n = slurm ? kAccountFieldsWithSlurm : kAccountFields;
  std::array<Span, kAccountFieldsWithSlurm> at{};
  std::array<std::array<Span, kMaxSub>, kAccountFieldsWithSlurm> sub{};
  std::array<size_t, kAccountFieldsWithSlurm> subs{};  // sub-positions put, up to the last
  thread_local std::string values;
  values.clear();
  ledger::for_each_account_field(
      [&](const ledger::AccountField& f, auto&& v) {
        if (f.json_at < 0 || static_cast<size_t>(f.json_at) >= n) return;
        auto put = [&](const auto& value) {
          const auto i = static_cast<size_t>(f.json_at);
          const size_t from = values.size();
          put_value(values, value);
          const Span span{static_cast<uint32_t>(from), static_cast<uint32_t>(values.size() - from)};
          if (f.json_sub < 0) {
            at[i] = span;
            return;
          }
          const auto k = static_cast<size_t>(f.json_sub);
          if (k >= kMaxSub) throw Error("fleet: an account field's sub-position is past " + std::to_string(kMaxSub));
          sub[i][k] = span;
          subs[i] = std::max(subs[i], k + 1);
        };
        if constexpr (requires { v.whole; }) {
          if (v.whole) put((*v.whole).*v.member);  // a Part: none, nothing put
        } else {
          put(v);
        }
      },
      a);
  auto text = [&](const Span& s) { out.append(s.size ? std::string_view(values).substr(s.at, s.size) : "null"); };
  out += '[';
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    if (subs[i] > 0) {
      out += '[';
      for (size_t k = 0; k < subs[i]; ++k) {
        if (k) out += ',';
        text(sub[i][k]);
      }
      out += ']';
    } else {
      text(at[i]);
    }
  }
  out += ']';
}

template <typename Charge>
void put_charges(std::string& out, const std::vector<Charge>& charges, int64_t Charge::*amount) {
  out += '[';
  for (size_t i = 0; i < charges.size(); ++i) {
    out += i ? ",[" : "[";
    put_text(out, charges[i].account);
    out += ",\"";
    out += ledger::to_string(charges[i].kind);
    out += "\",";
    put_value(out, charges[i].*amount);
    out += ']';
  }
  out += ']';
}

}  // namespace

std::string window_children_to_json(const ledger::WindowRecord& w) {
  std::string out = "{\"accounts\":[";
  for (size_t i = 0; i < w.accounts.size(); ++i) {
    if (i) out += ',';
    put_account(out, w.accounts[i]);
  }
  out += "],\"charges\":";
  put_charges(out, w.charges, &ledger::Charge::micros);
  if (w.energy) {
    out += ",\"energy\":";
    put_charges(out, w.energy->charges, &ledger::EnergyCharge::millijoules);
  }
  out += '}';
  return out;
}

// A charge or an energy part: [account, kind, amount].
template <typename Charge>
Charge charge_of(const Ref& c) {
  return {c.at(0).get<std::string>(), ledger::parse_charge_kind(c.at(1).get<std::string>()), c.at(2).get<int64_t>()};
}

ledger::WindowRecord window_from_json(std::string_view text) {
  // As window_to_json wrote it (every body a report reads): one pass.
  if (auto w = window_from_canonical_json(text)) return std::move(*w);
  return window_from_any_json(text);
}

ledger::WindowRecord window_from_any_json(std::string_view text) {
  thread_local JsonTape tape;  // grown once per reading thread (fleet_reader.cpp parses on every core)
  try {
    const Ref j = tape.parse(text);
    ledger::WindowRecord w;
    ledger::for_each_window_field(
        [&](const ledger::WindowField& f, auto&& v) {
          if (f.json || f.json_group) take(j, f, std::forward<decltype(v)>(v));
        },
        w);
    j.at("accounts").each([&](const Ref& a) { w.accounts.push_back(account(a)); });
    j.at("charges").each([&](const Ref& c) { w.charges.push_back(charge_of<ledger::Charge>(c)); });
    if (w.energy)
      j.at("energy").at("parts").each([&](const Ref& c) { w.energy->charges.push_back(charge_of<ledger::EnergyCharge>(c)); });
    return w;
  } catch (const Error& e) {
    throw Error(std::string("fleet database: a roll-up's body is not a window (") + e.what() + ")");
  }
}

}  // namespace gpuledger::fleet
