#pragma once
// A window as the fleet database's rows (fleet_schema.h), and back: the one
// place that knows which field goes to which column, for the sink that writes
// them and the reader that rebuilds windows for `report --fleet-db`.
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "fleet/pg_connection.h"
#include "ledger/store.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace gpuledger::fleet {

class TextArrayRows;

// Where a window came from: its cluster and node.
struct Origin {
  std::string cluster, node;
};

// The column lists, in the order of the rows below (after the four key columns
// cluster, node, gpu_uuid, start_time that every table starts with).
extern const std::vector<std::string> kWindowColumns, kAccountColumns, kChargeColumns, kEnergyChargeColumns;

// How many of an account row's values (key included) are stored and digested:
// all, or without the last two (slurm_user, slurm_account, schema 5) when both
// are "", so such a row is what it was before schema 5, in its digest and in
// the columns it is inserted into.
size_t account_width(const std::vector<PgParam>& row);

struct WindowRows {
  std::vector<PgParam> window;  // key + kWindowColumns (digest last)
  std::vector<std::vector<PgParam>> accounts, charges, energy_charges;  // key + their columns
  std::string digest;
};
// The rows of one window (the tables of schemas 1 to 6); the digest covers
// every value of every row.
WindowRows to_rows(const Origin& origin, const ledger::WindowRecord& window);
// Its window row alone (key + kWindowColumns, digest last) and the same
// digest: from schema 7 the children are the row's body (window_json.h).
struct WindowRow {
  std::vector<PgParam> row;
  std::string digest;
};
WindowRow to_window_row(const Origin& origin, const ledger::WindowRecord& window);
// The same digest alone, the row not made (a roll-up's sum of its windows' digests).
std::string window_digest(const Origin& origin, const ledger::WindowRecord& window);
// A window row's values (the key, then kWindowColumns) into w: its node
// ("cluster/node"), slot uuid, start and fields; not its children.
void read_window_columns(const PgResult& r, int row, ledger::WindowRecord& w);
// An account row's values (the key, then kAccountColumns) as an account.
ledger::AccountRecord read_account_columns(const PgResult& r, int row);
// The same from an array's row of kAccountColumns' values, without the key.
ledger::AccountRecord read_account_cells(const TextArrayRows& accounts, int row);

// SHA-256, fed in parts; hex(): 64 lowercase hex digits (once).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void add(std::string_view bytes);
  std::string hex();

 private:
  ::evp_md_ctx_st* ctx_;
};
std::string sha256_hex(std::string_view bytes);

// A window digest's first 60 bits as a number (the database's
// gpuledger.digest_part): summed, they name a set of windows in any order.
uint64_t digest_part(const std::string& hex);
std::string decimal(unsigned __int128 v);

// A float as text that reads back as the same double.
std::string exact(double v);

}  // namespace gpuledger::fleet
