#pragma once
// Options that several subcommands take with the same words: durations, the
// fleet database, the rightsizing knobs.
#include <CLI/CLI.hpp>

#include <string>

#include "fleet/fleet_db_options.h"

namespace gpuledger::cli {

// "90s", "10m", "1h" (common/duration_text.h).
const CLI::Validator& duration_validator();

// Where the fleet database is (fleet/fleet_db_options.h); `what` says what the
// subcommand does with it.
void add_fleet_db_options(CLI::App* cmd, fleet::FleetDbOptions& db, const std::string& what);

// What decides the recommendations (report/rightsizing.h), for `report` and `rightsize` alike.
void add_rightsizing_options(CLI::App* cmd, std::string& config, std::string& idle_after, std::string& vram_headroom,
                             std::string& min_evidence);

}  // namespace gpuledger::cli
