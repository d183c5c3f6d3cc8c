#include "fleet/fleet_rows.h"

#include <openssl/evp.h>

#include <charconv>
#include <map>
#include <utility>

#include "common/error.h"
#include "fleet/pg_array_text.h"
#include "ledger/device_quality.h"
#include "ledger/window_fields.h"

namespace gpuledger::fleet {

namespace {
// The fleet columns of a window's or an account's fields, in order (ledger/window_fields.h).
template <class Record>
std::vector<std::string> fleet_columns() {
  std::vector<std::string> out;
  const Record none;
  ledger::for_each_field(
      [&](const auto& f, auto&&) {
        if (f.fleet) out.emplace_back(f.fleet);
      },
      none);
  return out;
}
}  // namespace

const std::vector<std::string> kWindowColumns = [] {
  std::vector<std::string> out = fleet_columns<ledger::WindowRecord>();
  out.emplace_back("digest");
  return out;
}();
const std::vector<std::string> kAccountColumns = fleet_columns<ledger::AccountRecord>();
const std::vector<std::string> kChargeColumns = {"account", "kind", "micros"};
const std::vector<std::string> kEnergyChargeColumns = {"account", "kind", "millijoules"};

// printf's "%.17g", through std::to_chars (specified as printf's output for a
// format and precision, without its locale and varargs: a tenth of the
// shipper's CPU went to printf). WindowFields.AFloatsFleetTextIsPrintfsWhateverItsBits
// checks the two agree.
namespace {
// The text in buf ("%.17g" is at most 24 characters: "-1.2345678901234567e-308").
std::string_view exact_in(char (&buf)[32], double v) {
  return {buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 17).ptr - buf)};
}
std::string_view decimal_in(char (&buf)[24], int64_t v) {
  return {buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf)};
}
}  // namespace

std::string exact(double v) {
  char buf[32];
  return std::string(exact_in(buf, v));
}

namespace {

// PostgreSQL text holds no NUL byte; the store's names are valid UTF-8 already.
PgParam text(const std::string& s) {
  std::string out = s;
  for (auto& c : out)
    if (c == '\0') c = '?';
  return out;
}
PgParam num(int64_t v) {
  char buf[24];
  return std::string(decimal_in(buf, v));
}

// A window's or an account's field value, as its fleet column holds it
// (ledger/window_fields.h), to `out`: its text (out.text(string_view)) or
// NULL (out.null()). The same text goes into a row (Params) and a digest
// (Digest), which is fed without making the row where only the digest is needed.
template <class Out>
void put(Out& out, int64_t v) {
  char buf[24];
  out.text(decimal_in(buf, v));
}
template <class Out>
void put(Out& out, double v) {  // exact()'s text
  char buf[32];
  out.text(exact_in(buf, v));
}
template <class Out>
void put(Out& out, bool v) {
  out.text(v ? "true" : "false");
}
template <class Out>
void put(Out& out, const std::string& v) {  // text()'s: a NUL byte as '?'
  if (v.find('\0') == std::string::npos)
    out.text(v);
  else
    out.text(*text(v));
}
template <class Out>
void put(Out& out, uint64_t v) {
  put(out, static_cast<int64_t>(v));
}
template <class Out>
void put(Out& out, const std::map<std::string, int64_t>& v) {
  put(out, ledger::encode_findings(v));
}
template <class Out, class T>
void put(Out& out, const std::optional<T>& v) {
  if (v)
    put(out, *v);
  else
    out.null();
}
template <class Out, class W, class T>
void put(Out& out, const ledger::Part<const W, T>& p) {  // no part: NULL
  if (p.whole)
    put(out, (*p.whole).*p.member);
  else
    out.null();
}

// Values as a row's parameters.
struct Params {
  std::vector<PgParam>& row;
  void text(std::string_view v) { row.emplace_back(std::string(v)); }
  void null() { row.emplace_back(std::nullopt); }
};

// A column's text as its field: R is a PgResult, or a TextArrayRows whose
// cells are the text a column of that value would hold (pg_array_text.h).
template <class R>
void read_value(const R& r, int i, int c, int64_t& v) {
  v = r.i64(i, c);
}
template <class R>
void read_value(const R& r, int i, int c, double& v) {
  v = r.f64(i, c);
}
// "t" as a boolean column reads; "true" as one cast to text does (an array's cell).
template <class R>
void read_value(const R& r, int i, int c, bool& v) {
  v = r.view(i, c) == "t" || r.view(i, c) == "true";
}
template <class R>
void read_value(const R& r, int i, int c, std::string& v) {
  v = r.text(i, c);
}
template <class R>
void read_value(const R& r, int i, int c, std::optional<double>& v) {
  v = r.opt_f64(i, c);
}
template <class R>
void read_value(const R& r, int i, int c, std::optional<std::string>& v) {
  v = r.null(i, c) ? std::nullopt : std::optional<std::string>(r.text(i, c));
}
template <class R>
void read_value(const R& r, int i, int c, uint64_t& v) {
  v = static_cast<uint64_t>(r.i64(i, c));
}
template <class R>
void read_value(const R& r, int i, int c, std::optional<uint64_t>& v) {
  v = r.null(i, c) ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(r.i64(i, c)));
}
template <class R>
void read_value(const R& r, int i, int c, std::optional<int64_t>& v) {
  v = r.opt_i64(i, c);
}
template <class R>
void read_value(const R& r, int i, int c, std::map<std::string, int64_t>& v) {
  v = ledger::decode_findings(r.text(i, c));
}
template <class R, class W, class T>
void read_value(const R& r, int i, int c, ledger::Part<W, T>&& p) {  // NULL: no part
  ledger::read_part(p, r.null(i, c), [&](T& v) { read_value(r, i, c, v); });
}

// SHA-256 over every value of the rows, each length-prefixed (NULL apart
// from ""), each row ended by "|". The bytes are gathered and hashed once:
// an update per value (~250 a window) was a third of the digest's cost.
class Digest {
 public:
  void value(const PgParam& v) {
    if (v)
      text(*v);
    else
      null();
  }
  void null() { bytes_ += "N;"; }
  void text(std::string_view v) {
    char len[24];
    const auto done = std::to_chars(len, len + sizeof len - 1, v.size());
    *done.ptr = ':';
    bytes_.append(len, static_cast<size_t>(done.ptr + 1 - len));
    bytes_ += v;
  }
  void end_row() { bytes_ += '|'; }
  // A row's first n values.
  void row(const std::vector<PgParam>& values, size_t n) {
    for (size_t i = 0; i < n && i < values.size(); ++i) value(values[i]);
    end_row();
  }
  std::string hex() const { return sha256_hex(bytes_); }
  // Another digest's bytes, as hashed there (a key that begins many rows).
  void append(const Digest& other) { bytes_ += other.bytes_; }
  size_t size() const { return bytes_.size(); }
  void truncate(size_t n) { bytes_.resize(n); }

 private:
  std::string bytes_;
};

// An account's values into a digest as its row's first
// account_width(values) values are hashed, without making the values: the last
// two (the Slurm names) are taken back out when both are "".
class AccountDigest {
 public:
  AccountDigest(Digest& d, size_t values) : d_(d), values_(values) {}
  void text(std::string_view v) {
    mark();
    named_ = named_ || (index_ + 2 >= values_ && !v.empty());
    d_.text(v);
    ++index_;
  }
  void null() {
    mark();
    d_.null();
    ++index_;
  }
  void end_row() {
    if (!named_ && values_ >= 2) d_.truncate(cut_);
    d_.end_row();
  }

 private:
  void mark() {
    if (index_ + 2 == values_) cut_ = d_.size();
  }
  Digest& d_;
  size_t values_, index_ = 0, cut_ = 0;
  bool named_ = false;
};

// A window's or an account's fields with a fleet column: their values, in order.
template <class Out, class Record>
void put_fleet_values(Out& out, const Record& record) {
  ledger::for_each_field(
      [&](const auto& f, auto&& v) {
        if (f.fleet) put(out, v);
      },
      record);
}
template <class Record>
std::vector<PgParam> fleet_values(const Record& record) {
  std::vector<PgParam> values;
  Params out{values};
  put_fleet_values(out, record);
  return values;
}
// ... and read back from a row's columns from `first` on (after the key).
template <class R, class Record>
void read_fleet_values(const R& r, int row, Record& record, int first = 4) {
  int c = first;
  ledger::for_each_field(
      [&](const auto& f, auto&& v) {
        if (f.fleet) read_value(r, row, c++, std::forward<decltype(v)>(v));
      },
      record);
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw Error("fleet: SHA-256 unavailable");
}
Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }
void Sha256::add(std::string_view bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }
namespace {
std::string hex_of(const unsigned char* md, unsigned n) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}
}  // namespace

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, md, &n);
  return hex_of(md, n);
}

std::string sha256_hex(std::string_view bytes) {  // one call: no context to make and free
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) != 1) throw Error("fleet: SHA-256 unavailable");
  return hex_of(md, n);
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

size_t account_width(const std::vector<PgParam>& row) {
  const size_t n = row.size();
  const bool named = n >= 2 && ((row[n - 1] && !row[n - 1]->empty()) || (row[n - 2] && !row[n - 2]->empty()));
  return named ? n : n - 2;
}

namespace {
std::vector<PgParam> key_of(const Origin& origin, const ledger::WindowRecord& w) {
  return {text(origin.cluster), text(origin.node), text(w.slot.uuid), num(w.start)};
}
}  // namespace

// The window's row and its digest, the children hashed as their rows would
// be (the window's key, then their values) without making those rows: what
// the shipper and the roll-ups need from schema 7 on.
namespace {
// The window's accounts, charges and energy parts into its digest, each as
// its child row is hashed (the window's key, then its values), without making
// those rows: what the shipper and the roll-ups need from schema 7 on.
void digest_children(Digest& d, const std::vector<PgParam>& key, const ledger::WindowRecord& w) {
  Digest keyed;  // the key's values as each child's row begins, made once
  for (const auto& v : key) keyed.value(v);
  for (const auto& a : w.accounts) {
    d.append(keyed);
    AccountDigest values(d, kAccountColumns.size());  // the last two decide, key or not
    put_fleet_values(values, a);
    values.end_row();
  }
  auto part = [&](const std::string& account, ledger::ChargeKind kind, int64_t amount) {  // [account, kind, amount]
    d.append(keyed);
    put(d, account);
    d.text(ledger::to_string(kind));
    put(d, amount);
    d.end_row();
  };
  for (const auto& c : w.charges) part(c.account, c.kind, c.micros);
  if (w.energy)
    for (const auto& c : w.energy->charges) part(c.account, c.kind, c.millijoules);
}
}  // namespace

WindowRow to_window_row(const Origin& origin, const ledger::WindowRecord& w) {
  const std::vector<PgParam> key = key_of(origin, w);
  WindowRow out;
  out.row = key;
  Params values{out.row};
  put_fleet_values(values, w);
  Digest d;
  d.row(out.row, out.row.size());
  digest_children(d, key, w);
  out.digest = d.hex();
  out.row.push_back(out.digest);
  return out;
}

std::string window_digest(const Origin& origin, const ledger::WindowRecord& w) {
  const std::vector<PgParam> key = key_of(origin, w);
  Digest d;
  for (const auto& v : key) d.value(v);
  put_fleet_values(d, w);
  d.end_row();
  digest_children(d, key, w);
  return d.hex();
}

WindowRows to_rows(const Origin& origin, const ledger::WindowRecord& w) {
  const std::vector<PgParam> key = key_of(origin, w);
  auto keyed = [&](std::vector<PgParam> values) {
    std::vector<PgParam> row = key;
    row.insert(row.end(), values.begin(), values.end());
    return row;
  };
  WindowRow window = to_window_row(origin, w);
  WindowRows rows;
  for (const auto& a : w.accounts) rows.accounts.push_back(keyed(fleet_values(a)));
  for (const auto& c : w.charges)
    rows.charges.push_back(keyed(std::vector<PgParam>{text(c.account), std::string(ledger::to_string(c.kind)), num(c.micros)}));
  if (w.energy)
    for (const auto& c : w.energy->charges)
      rows.energy_charges.push_back(
          keyed(std::vector<PgParam>{text(c.account), std::string(ledger::to_string(c.kind)), num(c.millijoules)}));
  rows.window = std::move(window.row);
  rows.digest = std::move(window.digest);
  return rows;
}

void read_window_columns(const PgResult& r, int row, ledger::WindowRecord& w) {
  w.node = r.text(row, 0) + "/" + r.text(row, 1);
  w.slot.uuid = r.text(row, 2);
  w.start = r.i64(row, 3);
  read_fleet_values(r, row, w);
}

ledger::AccountRecord read_account_columns(const PgResult& r, int row) {
  ledger::AccountRecord a;
  read_fleet_values(r, row, a);
  return a;
}

ledger::AccountRecord read_account_cells(const TextArrayRows& accounts, int row) {
  ledger::AccountRecord a;
  read_fleet_values(accounts, row, a, 0);
  return a;
}

}  // namespace gpuledger::fleet
