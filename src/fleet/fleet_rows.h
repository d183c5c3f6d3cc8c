#pragma once
// A window as the fleet database's rows (fleet_schema.h), and back: the one
// place that knows which field goes to which column, for the sink that writes
// them and the reader that rebuilds windows for `report --fleet-db`.
#include <optional>
#include <string>
#include <vector>

#include "fleet/pg_connection.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

// Where a window came from: its cluster and node.
struct Origin {
  std::string cluster, node;
};

// The column lists, in the order of the rows below (after the four key columns
// cluster, node, gpu_uuid, start_time that every table starts with).
extern const std::vector<std::string> kWindowColumns, kAccountColumns, kChargeColumns, kEnergyChargeColumns;

struct WindowRows {
  std::vector<PgParam> window;  // key + kWindowColumns (digest last)
  std::vector<std::vector<PgParam>> accounts, charges, energy_charges;  // key + their columns
  std::string digest;
};
// The rows of one window; the digest covers every value of every row.
WindowRows to_rows(const Origin& origin, const ledger::WindowRecord& window);

// SHA-256 of the bytes, as 64 lowercase hex digits.
std::string sha256_hex(const std::string& bytes);

// A float as text that reads back as the same double.
std::string exact(double v);

}  // namespace gpuledger::fleet
