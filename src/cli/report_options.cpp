// `gpuledger report` and `gpuledger rightsize`: their options, into
// ReportCommand and RightsizeCommand (cli/commands.h).
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/inert_text.h"
#include "common/log.h"

namespace gpuledger::cli {

Subcommand add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCommand>();
  CLI::App* cmd = app.add_subcommand("report", "The GPU chargeback, from the store, fleet database or Prometheus");
  cmd->footer(
      "GPU-hours held and busy, cost (busy, idle), efficiency and top wasters, from the ledger store, or for the "
      "whole fleet from the PostgreSQL fleet ledger or Prometheus.");
  cmd->add_option("--store", o->store, "The ledger store (SQLite)")->capture_default_str();
  auto* from_opt = cmd->add_option("--from", o->from,
                                   "Start: a date (2026-11-01, midnight UTC), RFC 3339, Unix seconds, now or "
                                   "relative (-24h, -7d)")
                       ->capture_default_str();
  auto* to_opt = cmd->add_option("--to", o->to, "End (exclusive), same forms as --from")->capture_default_str();
  cmd->add_option("--month", o->month, "A calendar month in UTC, e.g. 2026-11 (instead of --from/--to)")
      ->excludes(from_opt)
      ->excludes(to_opt);
  cmd->add_flag("--csv-totals", o->csv_totals, "CSV: end with a TOTAL row");
  auto* by_opt = cmd->add_option("--by", o->by, "team, namespace, pod, workload, gpu, user or account (a Slurm job's), or node (with --fleet-db)")
                     ->capture_default_str();
  cmd->add_option("--format", o->format,
                  "table, csv, json, html or focus (FinOps FOCUS CSV: one row per charge period, account and GPU)")
      ->capture_default_str();
  cmd->add_option("--granularity", o->granularity,
                  "CSV and FOCUS: one charge period per hour, day or month (UTC; default day)");
  cmd->add_flag("--wide", o->wide, "Table: every column, whole names (default: fits 120 columns)");
  cmd->add_option("-o,--output", o->output, "Write to this file instead of stdout");
  cmd->add_option("--prometheus", o->prometheus,
                  "Fleet report from this Prometheus server (e.g. http://prometheus:9090), which scrapes "
                  "every node's agent");
  auto* timeout_opt =
      cmd->add_option("--timeout-ms", o->timeout_ms, "Prometheus request timeout")->capture_default_str();
  add_fleet_db_options(cmd, o->fleet_db,
                       "The exact fleet bill from this PostgreSQL fleet ledger (libpq URI or keyword string): every "
                       "node's windows, nodes deleted since included; --by node groups by cluster/node");
  cmd->add_option("--cluster", o->cluster, "With --fleet-db: only this cluster");
  cmd->add_option("--node", o->node, "With --fleet-db: only this node");
  add_rightsizing_options(cmd, o->config, o->idle_after, o->vram_headroom, o->min_evidence);

  return {cmd, [o, timeout_opt, by_opt] {
            log::set_level("warn");
            o->timeout_ms_given = timeout_opt->count() > 0;
            o->by_given = by_opt->count() > 0;
            try {
              return run_report(*o);
            } catch (const std::exception& e) {  // one plain sentence on stderr, nothing on stdout or in -o
              std::cerr << "gpuledger report: " << inert_text(e.what()) << "\n";  // may quote a hostile path
              return 1;
            }
          }};
}

Subcommand add_rightsize_command(CLI::App& app) {
  auto o = std::make_shared<RightsizeCommand>();
  CLI::App* cmd = app.add_subcommand("rightsize", "What each workload should hold, and the saving per month");
  cmd->footer(
      "From the ledger's evidence: release an idle GPU, a MIG profile or time-slice share that fits, more, or "
      "keep; with the saving per month, largest first.");
  cmd->add_option("--store", o->store, "The ledger store (SQLite)")->capture_default_str();
  auto* rs_from = cmd->add_option("--from", o->from, "Start, as for report --from")->capture_default_str();
  auto* rs_to = cmd->add_option("--to", o->to, "End (exclusive), as for report --to")->capture_default_str();
  cmd->add_option("--month", o->month, "A calendar month in UTC, e.g. 2026-11 (instead of --from/--to)")
      ->excludes(rs_from)
      ->excludes(rs_to);
  cmd->add_option("--by", o->by, "pod, workload, namespace, team, user or account (a Slurm job's)")->capture_default_str();
  cmd->add_option("--format", o->format, "table, json or csv")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Write to this file instead of stdout");
  add_rightsizing_options(cmd, o->config, o->idle_after, o->vram_headroom, o->min_evidence);

  return {cmd, [o] {
            log::set_level("warn");
            try {
              return run_rightsize(*o);
            } catch (const std::exception& e) {  // one plain sentence on stderr, nothing on stdout
              std::cerr << "gpuledger rightsize: " << inert_text(e.what()) << "\n";  // may quote a hostile path
              return 1;
            }
          }};
}

}  // namespace gpuledger::cli
