#include "cli/shared_options.h"

#include "common/duration_text.h"
#include "common/error.h"

namespace gpuledger::cli {

const CLI::Validator& duration_validator() {
  static const CLI::Validator duration(
      [](std::string& text) {
        try {
          parse_duration(text);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      },
      "DURATION");
  return duration;
}

void add_fleet_db_options(CLI::App* cmd, fleet::FleetDbOptions& db, const std::string& what) {
  cmd->add_option("--fleet-db", db.url, what);
  cmd->add_option("--fleet-db-password-file", db.password_file,
                  "The fleet database's password, on the first line of this file (else PGPASSFILE or ~/.pgpass); "
                  "never put it on the command line");
}

void add_rightsizing_options(CLI::App* cmd, std::string& config, std::string& idle_after, std::string& vram_headroom,
                             std::string& min_evidence) {
  cmd->add_option("--config", config,
                  "The agent's YAML configuration: its `rightsizing:` section (idle_after, vram_headroom, "
                  "min_evidence, mig_profiles) decides the recommendations");
  cmd->add_option("--idle-after", idle_after,
                  "Recommend release for a GPU held without a kernel launch for longer than this (e.g. 24h, 2d; "
                  "default: the configuration's, else 24h)");
  cmd->add_option("--vram-headroom", vram_headroom,
                  "VRAM kept above the peak when fitting a MIG profile, a fraction 0..1 (default: the "
                  "configuration's, else 0.2)");
  cmd->add_option("--min-evidence", min_evidence,
                  "State no saving for a recommendation with less held GPU time behind it than this (e.g. 24h, 7d, "
                  "0 for any; default: the configuration's, else 24h)");
}

}  // namespace gpuledger::cli
