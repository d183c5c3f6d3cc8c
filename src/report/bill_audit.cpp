#include "report/bill_audit.h"

#include <cmath>
#include <cstdlib>

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <utility>

#include "common/error.h"
#include "ledger/window_fields.h"
#include "report/report_text.h"
#include "report/shown_money.h"
#include "report/report_time.h"

namespace gpuledger::report {

namespace {

// A canonical byte string of the fields hashed: lengths prefix strings, numbers
// in fixed forms (doubles by their exact bits), so no two inputs read alike.
class Canon {
 public:
  Canon& s(const std::string& v) {
    i(static_cast<int64_t>(v.size()));
    out_ += v;
    return *this;
  }
  Canon& i(int64_t v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Canon& d(double v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Canon& o(const std::optional<double>& v) { return v ? i(1).d(*v) : i(0); }
  // Bytes of another Canon, as they are.
  Canon& raw(const std::string& bytes) {
    out_ += bytes;
    return *this;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

std::array<unsigned char, 32> sha256(const std::string& bytes) {
  std::array<unsigned char, 32> out{};
  unsigned int n = 0;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 || EVP_DigestFinal_ex(ctx.get(), out.data(), &n) != 1)
    throw Error("cannot compute the bill identifier (SHA-256 unavailable)");
  return out;
}

// A window field's bytes in the bill id (ledger/window_fields.h, its audit place).
void hash_field(Canon& c, int64_t v) { c.i(v); }
void hash_field(Canon& c, double v) { c.d(v); }
void hash_field(Canon& c, bool v) { c.i(v); }
void hash_field(Canon& c, const std::string& v) { c.s(v); }
void hash_field(Canon& c, const std::optional<std::string>& v) { c.s(v.value_or("")); }
void hash_field(Canon& c, const std::optional<double>& v) { c.o(v); }
void hash_field(Canon& c, uint64_t v) { c.i(static_cast<int64_t>(v)); }
// Never hashed (audit 0): the device findings, the rightsizing evidence.
void hash_field(Canon&, const std::map<std::string, int64_t>&) {}
void hash_field(Canon&, const std::optional<uint64_t>&) {}
void hash_field(Canon&, const std::optional<int64_t>&) {}
template <class T>
void hash_field(Canon&, const ledger::Part<const ledger::IdleRun, T>&) {}
template <class T>
void hash_field(Canon& c, const ledger::Part<const ledger::WindowEnergyRecord, T>& p) {
  if (p.whole) hash_field(c, (*p.whole).*p.member);
}

// The window's hashed fields in their audit places: the window's own, and its
// energy's. The fields are visited in the table's order and hashed into one
// buffer; their spans are then taken in audit order (no string per field:
// this runs for every window of every report).
struct HashedFields {
  std::string window, energy;
};
HashedFields hashed_fields(const ledger::WindowRecord& w) {
  constexpr int kPlaces = ledger::window_field::kAudited + 1;
  Canon all;
  std::array<std::pair<size_t, size_t>, kPlaces> span{};  // audit place -> (offset, length) in all
  std::array<bool, kPlaces> energy{};
  ledger::for_each_window_field(
      [&](const ledger::WindowField& f, const auto& v) {
        if (f.audit == 0) return;
        const size_t from = all.bytes().size();
        hash_field(all, v);
        span[f.audit] = {from, all.bytes().size() - from};
        energy[f.audit] = f.table == ledger::StoreTable::kWindowEnergy;
      },
      w);
  HashedFields out;
  out.window.reserve(all.bytes().size());
  for (int i = 1; i < kPlaces; ++i)
    (energy[i] ? out.energy : out.window).append(all.bytes(), span[i].first, span[i].second);
  return out;
}

// The accounts' Slurm users and accounts (store schema 10), only where some
// account has one: a window without any hashes as it did before. After a -1,
// which no string's length is, so no window without them reads alike.
void slurm_names(Canon& c, const ledger::WindowRecord& w) {
  const bool any = std::any_of(w.accounts.begin(), w.accounts.end(), [](const ledger::AccountRecord& a) {
    return !a.labels.slurm_user.empty() || !a.labels.slurm_account.empty();
  });
  if (!any) return;
  c.i(-1).i(static_cast<int64_t>(w.accounts.size()));
  for (const auto& a : w.accounts) c.s(a.labels.slurm_user).s(a.labels.slurm_account);
}

}  // namespace

void BillHasher::add(const ledger::WindowRecord& w) {
  if (std::find(policies_.begin(), policies_.end(), w.cost_policy) == policies_.end()) policies_.push_back(w.cost_policy);
  if (named_by_source_) return;
  Canon c;
  const HashedFields fields = hashed_fields(w);
  c.raw(fields.window);
  c.i(static_cast<int64_t>(w.accounts.size()));
  for (const auto& a : w.accounts) {
    ledger::for_each_account_field(
        [&](const ledger::AccountField& f, const auto& v) {
          if (f.audit) hash_field(c, v);
        },
        a);
  }
  c.i(static_cast<int64_t>(w.charges.size()));
  for (const auto& ch : w.charges) c.s(ch.account).s(std::string(ledger::to_string(ch.kind))).i(ch.micros);
  c.i(w.energy.has_value());
  if (w.energy) {
    c.raw(fields.energy);
    for (const auto& e : w.energy->charges) c.s(e.account).s(std::string(ledger::to_string(e.kind))).i(e.millijoules);
  }
  slurm_names(c, w);
  windows_.push_back({w.start, w.slot.uuid, sha256(c.bytes())});
}

std::string BillHasher::finish(int64_t from, int64_t to, const ledger::BillInputs& inputs) {
  std::sort(windows_.begin(), windows_.end(),
            [](const Entry& a, const Entry& b) { return a.start != b.start ? a.start < b.start : a.uuid < b.uuid; });
  Canon c;
  c.s("gpuledger bill v1").i(from).i(to).s(inputs.node).s(inputs.cluster);
  c.i(static_cast<int64_t>(inputs.price_lists.size()));
  for (const auto& p : inputs.price_lists) c.i(p.since).s(p.json);
  if (!windows_digest_.empty()) {
    c.s("windows named by their source").s(windows_digest_);
  } else {
    c.i(static_cast<int64_t>(windows_.size()));
    for (const auto& e : windows_) c.s(std::string(e.digest.begin(), e.digest.end()));
  }
  const auto digest = sha256(c.bytes());
  std::string hex = "sha256:";
  char buf[3];
  for (unsigned char b : digest) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

void fill_audit(Report& r, BillHasher& hasher, const ledger::BillInputs& inputs, int64_t generated_at) {
  Audit& a = r.audit;
  a.node = inputs.node;
  a.cluster = inputs.cluster;
  a.bill_id = hasher.finish(r.from, r.to, inputs);
  a.partial_period = generated_at > 0 && r.to > generated_at;
  a.cost_policies = hasher.policies_;
  std::sort(a.cost_policies.begin(), a.cost_policies.end());
  a.price_lists.clear();
  for (const auto& p : inputs.price_lists) a.price_lists.emplace_back(p.since, p.json);
}

std::optional<int64_t> listed_rate_micros(const Audit& audit, const ledger::GpuSlot& slot) {
  std::optional<int64_t> rate;
  for (const auto& [since, json] : audit.price_lists) {
    const std::optional<ledger::PriceBook> book = ledger::price_book_from_json(json);
    if (!book) return std::nullopt;
    int64_t listed = 0;
    try {
      // Per GPU-hour: a MIG price scaled from its GPU's is that GPU's rate; one of its own is per instance-hour,
      // and the instance's GPU-hours are its hours then (gpu_fraction 1).
      listed = ledger::price_for(*book, slot).micros_per_hour;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (rate && *rate != listed) return std::nullopt;
    rate = listed;
  }
  return rate;
}

std::vector<std::string> audit_lines(const Report& r) {
  const Audit& a = r.audit;
  std::vector<std::string> out;
  const bool from_store = !a.bill_id.empty();
  out.push_back(from_store ? "Bill id: " + a.bill_id + " (changes when the windows, range, prices or policies change)"
                           : std::string("Bill id: none (this report was not made from a ledger store's windows)"));
  if (r.source == "fleet") {
    out.push_back("Node: every node whose agent the Prometheus server scrapes");
    out.push_back("Cluster: the Prometheus server's (it does not name one)");
  } else {
    out.push_back("Node: " + (a.node.empty() ? std::string(kNodeUnknown) : a.node));
    out.push_back("Cluster: " + (a.cluster.empty() ? std::string(kClusterUnknown) : a.cluster));
  }
  std::string period = "Period: " + format_rfc3339(r.from) + " to " + format_rfc3339(r.to) + " (end exclusive)";
  if (a.partial_period)
    period += ", PARTIAL PERIOD: the range reaches past " + format_rfc3339(r.generated_at) +
              ", when this bill was made; time still to come is not billed yet";
  out.push_back(period);
  if (from_store) {
    std::string policies = "Cost policy of the windows: ";
    for (size_t i = 0; i < a.cost_policies.size(); ++i) policies += (i ? ", " : "") + a.cost_policies[i];
    if (a.cost_policies.empty()) policies += "none (no windows)";
    out.push_back(policies);
    if (a.price_lists.empty())
      out.push_back("Price list: not recorded in this store (an older agent wrote it); the rates below are measured "
                    "from the windows' costs");
    for (const auto& [since, json] : a.price_lists)
      out.push_back("Price list and policies since " + format_rfc3339(since) + ": " + json);
  }
  // GPU-hours x rate = cost, per model: the rate is what the windows cost per
  // GPU-hour of the slots, so the cost follows from the hours the GPUs were
  // there, not from the hours held (held + unheld = there).
  for (const auto& p : r.prices) {
    if (!(p.gpu_hours > 0)) continue;
    // The price list's rate, when it is one over the range: each GPU's cost is its rate x its hours, rounded
    // once (ledger/rate_remainder.h), so the line is exact to the micro-unit.
    if (const auto listed = listed_rate_micros(a, {"", p.model, std::nullopt, ""})) {
      const auto product = static_cast<int64_t>(std::llround(static_cast<double>(*listed) * p.gpu_hours));
      const std::string line = "Reconciliation, " + display_name(p.model) + ": " + fixed(p.gpu_hours, 6) +
                               " GPU-hours on the GPU x " + money(*listed) + " " + display_name(r.currency) +
                               " per GPU-hour (the price list's rate) = " + money(p.cost_micros) + " " +
                               display_name(r.currency);
      if (product == p.cost_micros) {
        out.push_back(line + " exactly (the rate applies to every hour the GPU was there; the held GPU-hours are "
                             "fewer when part of it was unheld, whose cost goes to __unallocated__ or __idle__)");
        continue;
      }
      if (std::llabs(product - p.cost_micros) <= 1 + static_cast<int64_t>(r.coverage.gpus.size())) {
        out.push_back(line + " (rate x hours is " + money(product) +
                      ": each GPU's span is rounded to the micro-unit once, and a span that begins inside a window "
                      "carries that window's rounding)");
        continue;
      }
    }
    const int64_t rate = static_cast<int64_t>(static_cast<double>(p.cost_micros) / p.gpu_hours + 0.5);
    out.push_back("Reconciliation, " + p.model + ": " + fixed(p.gpu_hours, 6) + " GPU-hours on the GPU x " +
                  money(rate) + " " + r.currency + " per GPU-hour = " + money(p.cost_micros) + " " + r.currency +
                  " (the rate applies to every hour the GPU was there; the held GPU-hours are fewer when part of it "
                  "was unheld, whose cost goes to __unallocated__ or __idle__, and the rate is rounded here)");
  }
  return out;
}

}  // namespace gpuledger::report
