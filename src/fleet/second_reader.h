#pragma once
// A report's second connection to the fleet database, in the snapshot of its
// first (FleetSnapshot::shared, PostgreSQL's pg_export_snapshot): what it
// reads is exactly what the first would, so parts of a range can be read on
// both at once, each on a core and a server backend of its own
// (report/period_reads.h: a CSV's rows by day or hour), or a range's names
// and a JSON or HTML report's chart read while the first reads its windows
// (cli/fleet_bill_source.cpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fleet/fleet_chart.h"
#include "fleet/fleet_reader.h"
#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

class SecondReader {
 public:
  // The second connection joined to `first`'s snapshot, or nullptr where the
  // server takes no more (a role's CONNECTION LIMIT, max_connections) or
  // cannot join it: the report then reads on its one connection, as before.
  // `notes` (the whole range's, for_each_fleet_window's whole_range_notes,
  // which the first connection's reads write meanwhile) outlives this reader,
  // which touches it only at its end.
  static std::unique_ptr<SecondReader> open(FleetSnapshot& first, const std::string& conninfo,
                                            const std::string& password_file, FleetReadNotes& notes);
  // The bodies its reads could not read added to `notes`, each once: here,
  // on the thread that owns `notes`, not as they are met on another.
  ~SecondReader();
  SecondReader(const SecondReader&) = delete;
  SecondReader& operator=(const SecondReader&) = delete;

  // read_range_names on this connection.
  RangeNames names(int64_t from, int64_t to, const FleetFilter& filter, bool ragged_read_elsewhere = false);
  // read_chart_costs on this connection.
  std::optional<report::ChartCosts> chart(int64_t from, int64_t to, const FleetFilter& filter, Period period);
  // for_each_fleet_window on this connection (no digest, no notes of its own).
  void read(int64_t from, int64_t to, const FleetFilter& filter, std::optional<Period> coarsest,
            const std::function<void(ledger::WindowRecord&&)>& fn);

 private:
  SecondReader(const std::string& conninfo, const std::string& password_file, const std::string& snapshot,
               FleetReadNotes& notes);
  PgConnection db_;
  FleetSnapshot snapshot_;
  FleetReadNotes met_;  // what its reads met, added to notes_ at its end
  FleetReadNotes& notes_;
};

}  // namespace gpuledger::fleet
