#include "fleet/second_reader.h"

#include "common/error.h"

namespace gpuledger::fleet {

SecondReader::SecondReader(const std::string& conninfo, const std::string& password_file, const std::string& snapshot,
                           FleetReadNotes& notes)
    : db_(conninfo, password_file), snapshot_(db_, snapshot), notes_(notes) {}

std::unique_ptr<SecondReader> SecondReader::open(FleetSnapshot& first, const std::string& conninfo,
                                                 const std::string& password_file, FleetReadNotes& notes) {
  // Outside the catch: an error here ends the first connection's
  // transaction, and the report with it, as any other of its statements.
  const std::string snapshot = first.shared();
  try {
    return std::unique_ptr<SecondReader>(new SecondReader(conninfo, password_file, snapshot, notes));
  } catch (const Error&) {  // refused, or the snapshot not joined: one reader is the same bill, slower
    return nullptr;
  }
}

SecondReader::~SecondReader() {
  add_unreadable(notes_, met_.unreadable);
}

RangeNames SecondReader::names(int64_t from, int64_t to, const FleetFilter& filter, bool ragged_read_elsewhere) {
  return read_range_names(db_, from, to, filter, ragged_read_elsewhere);
}

std::optional<report::ChartCosts> SecondReader::chart(int64_t from, int64_t to, const FleetFilter& filter,
                                                      Period period) {
  return read_chart_costs(db_, from, to, filter, period);
}

void SecondReader::read(int64_t from, int64_t to, const FleetFilter& filter, std::optional<Period> coarsest,
                        const std::function<void(ledger::WindowRecord&&)>& fn) {
  for_each_fleet_window(db_, from, to, filter, coarsest, fn, nullptr, nullptr, &met_);
}

}  // namespace gpuledger::fleet
