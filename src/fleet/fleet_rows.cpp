#include "fleet/fleet_rows.h"

#include <openssl/evp.h>

#include <cstdio>

#include "common/error.h"

namespace gpuledger::fleet {

const std::vector<std::string> kWindowColumns = {
    "end_time", "parent_uuid", "model", "mig_profile", "gpu_fraction", "currency", "cost_micros", "busy_micros",
    "idle_micros", "memory_micros", "cost_policy", "allocated_total", "busy_fraction", "busy_source", "exclusive",
    "observed_seconds", "source", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "energy_millijoules",
    "energy_source", "carbon_g_per_kwh", "split_source", "digest"};
const std::vector<std::string> kAccountColumns = {
    "account", "namespace", "pod", "container", "team", "held_share", "allocated_share", "allocated_share_known",
    "busy_seconds", "activity_share", "gpu_busy_seconds", "vram_byte_seconds", "launches", "sm_active",
    "sm_occupancy", "tensor_active", "dram_active", "vram_peak_bytes", "vram_p95_bytes", "nvml_vram_peak_bytes",
    "nvml_vram_p95_bytes", "sm_active_p95", "sm_occupancy_p95", "busy_p95", "idle_lead_seconds",
    "idle_trail_seconds", "idle_longest_seconds", "window_count", "slurm_user", "slurm_account"};
const std::vector<std::string> kChargeColumns = {"account", "kind", "micros"};
const std::vector<std::string> kEnergyChargeColumns = {"account", "kind", "millijoules"};

size_t account_width(const std::vector<PgParam>& row) {
  const size_t n = row.size();
  const bool named = n >= 2 && ((row[n - 1] && !row[n - 1]->empty()) || (row[n - 2] && !row[n - 2]->empty()));
  return named ? n : n - 2;
}

std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

namespace {

// PostgreSQL text holds no NUL byte; the store's names are valid UTF-8 already.
PgParam text(const std::string& s) {
  std::string out = s;
  for (auto& c : out)
    if (c == '\0') c = '?';
  return out;
}
PgParam num(int64_t v) { return std::to_string(v); }
PgParam num(double v) { return exact(v); }
PgParam boolean(bool v) { return std::string(v ? "true" : "false"); }
PgParam opt(const std::optional<double>& v) { return v ? num(*v) : std::nullopt; }
PgParam opt(const std::optional<int64_t>& v) { return v ? num(*v) : std::nullopt; }
PgParam opt(const std::optional<uint64_t>& v) { return v ? num(static_cast<int64_t>(*v)) : std::nullopt; }
PgParam opt(const std::optional<std::string>& v) { return v ? text(*v) : std::nullopt; }

// SHA-256 over every value of the rows (a row's first n), each length-prefixed (NULL apart from "").
class Digest {
 public:
  void add(const std::vector<PgParam>& row, size_t n) {
    for (size_t i = 0; i < n && i < row.size(); ++i) {
      const auto& v = row[i];
      sha_.add(v ? std::to_string(v->size()) + ":" : "N;");
      if (v) sha_.add(*v);
    }
    sha_.add("|");
  }
  std::string hex() { return sha_.hex(); }

 private:
  Sha256 sha_;
};

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw Error("fleet: SHA-256 unavailable");
}
Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }
void Sha256::add(std::string_view bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }
std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, md, &n);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(const std::string& bytes) {
  Sha256 d;
  d.add(bytes);
  return d.hex();
}

uint64_t digest_part(const std::string& hex) { return std::stoull(hex.substr(0, 15), nullptr, 16); }

std::string decimal(unsigned __int128 v) {
  std::string out;
  do {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  return out;
}

WindowRows to_rows(const Origin& origin, const ledger::WindowRecord& w) {
  const std::vector<PgParam> key = {text(origin.cluster), text(origin.node), text(w.slot.uuid), num(w.start)};
  auto keyed = [&](std::vector<PgParam> values) {
    std::vector<PgParam> row = key;
    row.insert(row.end(), values.begin(), values.end());
    return row;
  };
  WindowRows rows;
  for (const auto& a : w.accounts) {
    const auto& ev = a.evidence;
    const auto idle = [&](double ledger::IdleRun::*f) {
      return ev.idle ? std::optional<double>((*ev.idle).*f) : std::nullopt;
    };
    rows.accounts.push_back(keyed({text(a.account), text(a.labels.namespace_name), text(a.labels.pod),
                                   text(a.labels.container), text(a.labels.team), num(a.held_share),
                                   num(a.allocated_share), boolean(a.allocated_share_known), num(a.busy_seconds),
                                   num(a.activity_share), num(a.gpu_busy_seconds), num(a.vram_byte_seconds),
                                   num(static_cast<int64_t>(a.launches)), opt(a.efficiency.sm_active),
                                   opt(a.efficiency.sm_occupancy), opt(a.efficiency.tensor_active),
                                   opt(a.efficiency.dram_active), opt(ev.vram_peak_bytes), opt(ev.vram_p95_bytes),
                                   opt(ev.nvml_vram_peak_bytes), opt(ev.nvml_vram_p95_bytes), opt(ev.sm_active_p95),
                                   opt(ev.sm_occupancy_p95), opt(ev.busy_p95), opt(idle(&ledger::IdleRun::lead)),
                                   opt(idle(&ledger::IdleRun::trail)), opt(idle(&ledger::IdleRun::longest)),
                                   opt(ev.windows), text(a.labels.slurm_user), text(a.labels.slurm_account)}));
  }
  for (const auto& c : w.charges)
    rows.charges.push_back(keyed(std::vector<PgParam>{text(c.account), std::string(ledger::to_string(c.kind)), num(c.micros)}));
  if (w.energy)
    for (const auto& c : w.energy->charges)
      rows.energy_charges.push_back(
          keyed(std::vector<PgParam>{text(c.account), std::string(ledger::to_string(c.kind)), num(c.millijoules)}));
  const auto& e = w.energy;
  rows.window = keyed({num(w.end), text(w.slot.parent_uuid), text(w.slot.model), opt(w.slot.mig_profile),
                       num(w.gpu_fraction), text(w.currency), num(w.cost_micros), num(w.busy_micros),
                       num(w.idle_micros), num(w.memory_micros), text(w.cost_policy), num(w.allocated_total),
                       num(w.busy_fraction), text(w.busy_source), boolean(w.exclusive), num(w.observed_seconds),
                       text(w.source), opt(w.device.sm_active), opt(w.device.sm_occupancy),
                       opt(w.device.tensor_active), opt(w.device.dram_active),
                       e ? num(e->millijoules) : std::nullopt, e ? text(e->source) : std::nullopt,
                       e ? opt(e->carbon_g_per_kwh) : std::nullopt, text(w.split_source)});
  Digest d;
  d.add(rows.window, rows.window.size());
  for (const auto& row : rows.accounts) d.add(row, account_width(row));
  for (const auto* table : {&rows.charges, &rows.energy_charges})
    for (const auto& row : *table) d.add(row, row.size());
  rows.digest = d.hex();
  rows.window.push_back(rows.digest);
  return rows;
}

}  // namespace gpuledger::fleet
