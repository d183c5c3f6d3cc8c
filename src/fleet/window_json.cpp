#include "fleet/window_json.h"

#include <nlohmann/json.hpp>

#include <utility>

#include "common/error.h"
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

// A window's accounts and charges into j, and its energy parts into energy
// (when it knows its energy).
void put_children(json& j, json* energy, const ledger::WindowRecord& w) {
  json& accounts = j["accounts"] = json::array();
  for (const auto& a : w.accounts) accounts.push_back(account(a));
  json& charges = j["charges"] = json::array();
  for (const auto& c : w.charges) charges.push_back({c.account, std::string(ledger::to_string(c.kind)), c.micros});
  if (w.energy && energy) {
    json parts = json::array();
    for (const auto& c : w.energy->charges)
      parts.push_back({c.account, std::string(ledger::to_string(c.kind)), c.millijoules});
    *energy = std::move(parts);
  }
}

// Strings are the store's (valid UTF-8); replace rather than throw on any other byte.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string window_to_json(const ledger::WindowRecord& w) {
  json j = json::object();
  ledger::for_each_window_field(
      [&](const ledger::WindowField& f, auto&& v) {
        if (f.json || f.json_group) put(j, f, v);
      },
      w);
  json parts;
  put_children(j, &parts, w);
  if (w.energy) j["energy"]["parts"] = std::move(parts);
  return dump(j);
}

std::string window_children_to_json(const ledger::WindowRecord& w) {
  json j = json::object();
  json parts;
  put_children(j, &parts, w);
  if (w.energy) j["energy"] = std::move(parts);
  return dump(j);
}

// A charge or an energy part: [account, kind, amount].
template <typename Charge>
Charge charge_of(const Ref& c) {
  return {c.at(0).get<std::string>(), ledger::parse_charge_kind(c.at(1).get<std::string>()), c.at(2).get<int64_t>()};
}

ledger::WindowRecord window_from_json(const std::string& text) {
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
