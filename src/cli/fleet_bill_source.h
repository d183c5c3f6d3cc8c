#pragma once
// `gpuledger report --fleet-db`'s source of windows (report/bill.h's
// BillSource): the fleet database read in one snapshot, at the coarsest
// roll-ups the format allows, with the chart summed by the server, the bill
// id's digest, the notes and the chart read on a second connection in the
// same snapshot while the first reads the windows, and a CSV's rows read on both.
#include <optional>
#include <set>
#include <string>

#include "cli/commands.h"
#include "fleet/fleet_reader.h"
#include "fleet/pg_connection.h"
#include "report/bill.h"

namespace gpuledger::cli {

class FleetBillSource {
 public:
  // Connects and checks the schema (throws Error, one sentence), and opens
  // the report's snapshot.
  FleetBillSource(const ReportCommand& cmd, const report::BillRequest& q, const std::string& conninfo);
  FleetBillSource(const FleetBillSource&) = delete;
  FleetBillSource& operator=(const FleetBillSource&) = delete;

  const report::BillSource& source() const { return source_; }
  // What the reader should be told (on stderr): filled as the source is read.
  const fleet::FleetReadNotes& notes() const { return notes_; }

 private:
  void read_whole(const std::function<void(ledger::WindowRecord&&)>& fn);
  report::ChartCosts chart_read_at(fleet::Period period, fleet::FleetReadNotes& unread);

  const report::BillRequest& q_;
  const std::string conninfo_, password_file_;
  fleet::FleetFilter filter_;
  fleet::PgConnection db_;
  fleet::FleetSnapshot snapshot_;  // every read of the bill in it (a second connection's too)
  std::set<std::string> origins_;  // "cluster/node" of every window read
  std::string windows_digest_;     // the same whichever roll-ups the format reads
  fleet::FleetReadNotes notes_;
  std::optional<report::ChartCosts> chart_;  // the chart's whole periods, summed by the server (or read apart)
  report::BillSource source_;
};

}  // namespace gpuledger::cli
