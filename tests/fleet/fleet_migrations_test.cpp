// Fleet schemas 8, 9, 10 and 19 (issue 30, ingest), against a real PostgreSQL server
// (pg_server.h). 8: count_windows sums a statement's windows by hour first,
// check_rollup takes each part's own fields only. 9: the body's check keeps
// each GPU-hour's parts (window_parts) and check_rollup reads them instead
// of the windows' bodies. The same answers as schema 7's: every roll-up keeps
// the verdict schema 7 gave it (true ones and forged ones of every reason),
// the window totals are the windows' sums, and the kept parts are the
// bodies' after more windows come in. 10: the same verdicts and charge rows
// from plans kept for the session. 19: the same verdicts from the finer
// roll-ups' sums and each body parsed once.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "common/error.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_rollups.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet_db_fixture.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;

// Ships two GPUs' windows and 48 roll-ups of every verdict (true ones, money
// moved, a team and a Slurm user forged, an account named twice, a
// relabelled pod merged anyway), shipped as `origin` into `db`.
constexpr int64_t kDay1 = kFleetDay0 + 86400;
const std::string kVerdicts = "SELECT coalesce(refusal, 'verified'), count(*) FROM gpuledger.rollups";
const std::string kTotals = "SELECT * FROM gpuledger.window_totals ORDER BY 1, 2, 3, 4, 5";

void ship_every_verdict(fleet::PgConnection& db, const std::filesystem::path& scratch, const fleet::Origin& origin) {
  std::filesystem::create_directories(scratch);
  fleet::FleetSinkPostgres sink(db, origin);
  const int64_t relabelled = kDay1 + 6 * 3600;
  auto ws = two_gpus();
  for (auto& w : ws)  // GPU-a's pod-b moves to another team half way through 06:00
    if (w.slot.uuid == "GPU-a" && w.start >= relabelled + 1800 && w.start < relabelled + 3600)
      w.accounts[1].labels.team = "speech";
  ledger::Store store((scratch / "ledger.db").string());
  store.insert_windows(ws);
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  // Day 1's hours: GPU-a's true (06:00 has none: its pod was relabelled),
  // GPU-b's true but for 01:00 to 04:00, forged each a way.
  for (int h = 0; h < 24; ++h) {
    auto rollups = fleet::build_rollups(store, origin, Period::kHour, kDay1 + h * 3600);
    for (auto& r : rollups) {
      if (r.window.slot.uuid != "GPU-b") continue;
      auto& w = r.window;
      if (h == 1) w.charges[0].micros += 1000, w.charges[2].micros -= 1000;  // money moved between pods
      if (h == 2) w.accounts[0].labels.team = "forged";
      if (h == 3) w.accounts[0].labels.slurm_user = "mallory";
      if (h == 4) w.accounts.push_back(w.accounts[0]);  // an account named twice
    }
    sink.ship_rollups(rollups);
  }
  // GPU-a's 06:00 merged anyway: one set of labels for a pod that had two.
  std::vector<ledger::WindowRecord> six;
  for (const auto& w : ws)
    if (w.slot.uuid == "GPU-a" && w.start >= relabelled && w.start < relabelled + 3600) six.push_back(w);
  fleet::Rollup merged_anyway{Period::kHour, relabelled, ledger::merge_windows(six), 60, 0};
  for (const auto& w : six) merged_anyway.digests += fleet::digest_part(fleet::to_window_row(origin, w).digest);
  EXPECT_EQ(sink.ship_rollups({merged_anyway}), std::vector<Delivery>{Delivery::kUnverified});
  sink.ship_rollups(fleet::build_rollups(store, origin, Period::kDay, kDay1));  // GPU-b's day (GPU-a's relabelled)
  EXPECT_EQ(rows_of(db, kVerdicts + std::string(" WHERE node = ") + db.literal(origin.node) + " GROUP BY 1 ORDER BY 1"),
            "an account's labels changed within the period (one merged account would bill it all to its last team)|1\n"
            "its accounts are not its windows'|2\n"
            "its accounts' Slurm users or accounts are not its windows'|1\n"
            "its charges or energy are not its windows'|1\n"
            "verified|44\n");  // 23 hours of GPU-a, 20 of GPU-b, its day
}

// Another node's windows, and late ones of node-1 into hours it has.
void ship_more(fleet::PgConnection& db) {
  fleet::FleetSinkPostgres other(db, {"prod", "node-2"});
  ASSERT_EQ(other.ship(pointers(two_gpus())), std::vector<Delivery>(two_gpus().size(), Delivery::kStored));
  fleet::FleetSinkPostgres sink(db, {"prod", "node-1"});
  std::vector<ledger::WindowRecord> late;
  for (int64_t t = kDay1 + 30; t < kDay1 + 86400; t += 3600) late.push_back(fleet_window(t, "GPU-b", t % 7));
  ASSERT_EQ(sink.ship(pointers(late)), std::vector<Delivery>(late.size(), Delivery::kStored));
}

TEST_F(FleetDb, SchemaEightGivesEveryRollUpTheVerdictAndEveryPeriodTheTotalsOfSchemaSeven) {
  pg_->psql("CREATE DATABASE seven");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "seven"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 7), 7);
  ship_every_verdict(db, scratch_, {"prod", "node-1"});
  const std::string totals_7 = rows_of(db, kTotals);

  ASSERT_EQ(fleet::migrate(db, kFleetT0, 8), 8);
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.rollups r WHERE gpuledger.check_rollup(r) IS DISTINCT FROM "
                        "r.refusal"),
            "0\n");
  EXPECT_EQ(rows_of(db, kTotals), totals_7);
  // The totals are still the windows' counts and sums, hour, day and month.
  ship_more(db);
  EXPECT_EQ(rows_of(db, "SELECT p.period, p.period_start, w.cluster, w.node, w.gpu_uuid, count(*), sum(w.cost_micros), "
                        "sum(gpuledger.digest_part(w.digest)) FROM gpuledger.windows w "
                        "CROSS JOIN LATERAL gpuledger.periods_of(w.start_time) p GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"),
            rows_of(db, kTotals));
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.window_totals WHERE node = 'node-2'"), rows_of(db,
            "SELECT count(DISTINCT (p.period, p.period_start, w.gpu_uuid)) FROM gpuledger.windows w "
            "CROSS JOIN LATERAL gpuledger.periods_of(w.start_time) p WHERE w.node = 'node-2'"));
}

// Each GPU-hour's parts as kept, and as read from its windows' bodies here
// (the positions of window_json.h, not the schema's functions), summed alike
// (a GPU-hour's parts come in as many rows as statements brought its windows).
const std::string kKeptParts =
    "SELECT cluster, node, gpu_uuid, hour_start, part, account, kind, namespace, pod, container, team, slurm_user, "
    "slurm_account, sum(n) FROM gpuledger.window_parts GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 "
    "ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13";
const std::string kBodiesParts =
    "SELECT w.cluster, w.node, w.gpu_uuid, w.start_time / 3600 * 3600, p.part, p.account, p.kind, p.namespace, p.pod, "
    "p.container, p.team, p.slurm_user, p.slurm_account, sum(p.n) FROM gpuledger.windows w CROSS JOIN LATERAL ("
    "  SELECT 'c' AS part, c->>0 AS account, c->>1 AS kind, NULL::text AS namespace, NULL::text AS pod, "
    "         NULL::text AS container, NULL::text AS team, NULL::text AS slurm_user, NULL::text AS slurm_account, "
    "         (c->>2)::bigint AS n FROM jsonb_array_elements(w.body::jsonb->'charges') c"
    "  UNION ALL SELECT 'e', c->>0, c->>1, NULL, NULL, NULL, NULL, NULL, NULL, (c->>2)::bigint "
    "  FROM jsonb_array_elements(coalesce(w.body::jsonb->'energy', '[]')) c"
    "  UNION ALL SELECT 'a', c->>0, '', c->>1, c->>2, c->>3, c->>4, coalesce(c->>23, ''), coalesce(c->>24, ''), NULL "
    "  FROM jsonb_array_elements(w.body::jsonb->'accounts') c) p "
    "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13";

// Ten hourly windows of `gpu` from `first`, the one at `bad` with a negative
// charge, shipped by node-1's sink: the statement is refused, the refusal
// names that window, and nothing of it is kept (no window, no part).
void expect_refused_whole(fleet::PgConnection& db, fleet::FleetSinkPostgres& sink, int64_t first,
                          const std::string& gpu, size_t bad) {
  const std::string before = rows_of(db, kKeptParts);
  std::vector<ledger::WindowRecord> batch;
  for (int64_t t = first; t < first + 10 * 3600; t += 3600) batch.push_back(fleet_window(t, gpu, 1));
  batch[bad].charges[0].micros = -1;
  try {
    sink.ship(pointers(batch));
    ADD_FAILURE() << "a negative charge was stored";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("the body of window prod/node-1/" + gpu + " at " + std::to_string(batch[bad].start) +
                                   " is not accounts, charges and energy parts a report can read"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(rows_of(db, kKeptParts), before);
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.windows WHERE gpu_uuid = " + db.literal(gpu)), "0\n");
}

TEST_F(FleetDb, SchemaNineChecksRollUpsAgainstThePartsItKeptOfTheBodiesItParsed) {
  pg_->psql("CREATE DATABASE seven");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "seven"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 7), 7);
  ship_every_verdict(db, scratch_ / "node-1", {"prod", "node-1"});
  const std::string totals_7 = rows_of(db, kTotals);

  // Migrated: the parts of the windows there, and every verdict again from them.
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 9), 9);
  const std::string kept = rows_of(db, kKeptParts);
  EXPECT_EQ(kept, rows_of(db, kBodiesParts));
  EXPECT_EQ(rows_of(db, "SELECT count(DISTINCT (gpu_uuid, hour_start)) FROM gpuledger.window_parts"), "56\n");  // 28 hours of 2 GPUs
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.rollups r WHERE gpuledger.check_rollup(r) IS DISTINCT FROM "
                        "r.refusal"),
            "0\n");
  EXPECT_EQ(rows_of(db, kTotals), totals_7);
  // A node shipping at schema 9: its parts kept by the body's check, and its
  // roll-ups, true and forged, given schema 7's verdicts.
  ship_every_verdict(db, scratch_ / "node-2", {"prod", "node-2"});
  EXPECT_EQ(rows_of(db, kKeptParts), rows_of(db, kBodiesParts));
  // Late windows into hours that have parts: added to them.
  fleet::FleetSinkPostgres sink(db, {"prod", "node-1"});
  std::vector<ledger::WindowRecord> late;
  for (int64_t t = kDay1 + 30; t < kDay1 + 86400; t += 3600) late.push_back(fleet_window(t, "GPU-b", t % 7));
  ASSERT_EQ(sink.ship(pointers(late)), std::vector<Delivery>(late.size(), Delivery::kStored));
  EXPECT_EQ(rows_of(db, kKeptParts), rows_of(db, kBodiesParts));
  EXPECT_NE(rows_of(db, kKeptParts), kept);
  // Sent again (a resend after a crash): stored once, its parts kept once.
  ASSERT_EQ(sink.ship(pointers(late)), std::vector<Delivery>(late.size(), Delivery::kDuplicate));
  EXPECT_EQ(rows_of(db, kKeptParts), rows_of(db, kBodiesParts));
  // A body the check refuses, among good ones: the refusal names it, and its
  // statement keeps no parts.
  expect_refused_whole(db, sink, kDay1 + 45, "GPU-c", 4);
  // No agent writes or reads them: a node's role is granted nothing there
  // (add-node at the newest schema).
  ASSERT_EQ(fleet::migrate(db, kFleetT0), fleet::kFleetSchemaVersion);
  const std::string role = fleet::add_node_role(db, "node-3", std::string("prod"));
  fleet::PgConnection agent(pg_->conninfo(role, "seven"), pg_->set_password(role));
  for (const std::string sql : {"SELECT count(*) FROM gpuledger.window_parts",
                                "INSERT INTO gpuledger.window_parts(cluster, node, gpu_uuid, hour_start, part) "
                                "VALUES ('prod', 'node-3', 'GPU-a', 0, 'c')"}) {
    try {
      agent.query(sql);
      ADD_FAILURE() << sql << " ran as a node's role";
    } catch (const Error& e) {
      EXPECT_EQ(fleet::sqlstate_of(e.what()), "42501") << e.what();
    }
  }
}

// Schema 14 parses a statement's bodies in one pass (no second copy of them
// past work_mem): the same parts kept, the same verdicts, the same refusal,
// whether the windows came at 13, at 14, or at 14 from a database of 13.
TEST_F(FleetDb, SchemaFourteenKeepsThePartsAndVerdictsOfThirteenFromOnePassOverTheBodies) {
  std::map<int, std::string> kept, verdicts, totals;
  for (int version : {13, 14}) {
    const std::string name = "v" + std::to_string(version);
    pg_->psql("CREATE DATABASE " + name);
    fleet::PgConnection db(pg_->conninfo("gpuledger_admin", name), pg_->admin_password_file());
    ASSERT_EQ(fleet::migrate(db, kFleetT0, version), version);
    ship_every_verdict(db, scratch_ / name / "node-1", {"prod", "node-1"});
    kept[version] = rows_of(db, kKeptParts);
    verdicts[version] = rows_of(db, kVerdicts + std::string(" GROUP BY 1 ORDER BY 1"));
    totals[version] = rows_of(db, kTotals);
    EXPECT_EQ(kept[version], rows_of(db, kBodiesParts)) << version;
  }
  EXPECT_EQ(kept[14], kept[13]);
  EXPECT_EQ(verdicts[14], verdicts[13]);
  EXPECT_EQ(totals[14], totals[13]);
  // 56 GPU-hours of 2 accounts, 4 charges and 4 energy parts, and the
  // relabelled pod's second labels: no row of a body's shape is kept.
  EXPECT_EQ(std::count(kept[14].begin(), kept[14].end(), '\n'), 56 * 10 + 1);

  // The database of 13 migrated: another node's windows and late ones come in through schema 14's check.
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "v13"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0), fleet::kFleetSchemaVersion);
  ship_more(db);
  EXPECT_EQ(rows_of(db, kKeptParts), rows_of(db, kBodiesParts));
  EXPECT_NE(rows_of(db, kKeptParts), kept[13]);
  // A body it refuses, among good ones: named, its statement keeps nothing
  // (the hostile bodies and shapes of AttackABodyNoReportCouldReadIsRefusedWhole
  // are tried at the newest schema).
  fleet::FleetSinkPostgres sink(db, {"prod", "node-1"});
  expect_refused_whole(db, sink, kDay1 + 50, "GPU-d", 7);
}

// The charge rows of every verified hour and day as kept (rollup_charges),
// and as schema 5 read them from the bodies (json, written out here: an
// independent reading of what schema 10's function computes).
const std::string kKeptCharges = "SELECT c::text FROM gpuledger.rollup_charges c ORDER BY 1";
const std::string kBodiesCharges =
    "SELECT (r.period, r.period_start, r.cluster, r.node, r.gpu_uuid, r.windows, r.cost_micros, r.digests, "
    "(r.body->>'start')::bigint, (r.body->>'end')::bigint - (r.body->>'start')::bigint, coalesce(g.account, ''), "
    "coalesce((SELECT a->>4 FROM json_array_elements(r.body->'accounts') WITH ORDINALITY x(a, i) "
    "WHERE a->>0 = g.account ORDER BY i LIMIT 1), ''), coalesce(g.micros, 0), g.account IS NOT NULL)::text "
    "FROM gpuledger.rollups r LEFT JOIN LATERAL (SELECT ch->>0 AS account, sum((ch->>2)::bigint)::bigint AS micros "
    "FROM json_array_elements(r.body->'charges') ch GROUP BY 1) g ON true "
    "WHERE r.verified AND r.period IN ('hour', 'day') ORDER BY 1";

TEST_F(FleetDb, SchemaTenGivesTheVerdictsAndChargeRowsOfNineFromPlansKeptForTheSession) {
  pg_->psql("CREATE DATABASE nine");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "nine"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 9), 9);
  ship_every_verdict(db, scratch_ / "node-1", {"prod", "node-1"});
  const std::string charges_9 = rows_of(db, kKeptCharges);
  ASSERT_EQ(charges_9, rows_of(db, kBodiesCharges));
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.rollup_charges WHERE node = 'node-1'"), "88\n");

  ASSERT_EQ(fleet::migrate(db, kFleetT0, 10), 10);
  // Every roll-up's verdict again, and its charge rows again, by schema 10's functions.
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.rollups r WHERE gpuledger.check_rollup(r) IS DISTINCT FROM "
                        "r.refusal"),
            "0\n");
  EXPECT_EQ(rows_of(db, "SELECT c::text FROM gpuledger.rollups r CROSS JOIN LATERAL gpuledger.charge_rows_of(r) c "
                        "WHERE r.verified AND r.period IN ('hour', 'day') ORDER BY 1"),
            charges_9);
  // A node shipping at 10, true and forged roll-ups in one session (each
  // function's plans kept from one to the next): schema 9's verdicts
  // (ship_every_verdict's), and the charge rows schema 5 read.
  ship_every_verdict(db, scratch_ / "node-2", {"prod", "node-2"});
  EXPECT_EQ(rows_of(db, kKeptCharges), rows_of(db, kBodiesCharges));
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.rollup_charges WHERE node = 'node-2'"), "88\n");
  EXPECT_EQ(rows_of(db, "SELECT p.proname, p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                        "WHERE n.nspname = 'gpuledger' AND p.proname IN ('check_rollup', 'charge_rows_of', "
                        "'refuse_unreadable_bodies') ORDER BY 1"),
            "charge_rows_of|{\"search_path=pg_catalog, pg_temp\",plan_cache_mode=force_generic_plan}\n"
            "check_rollup|{\"search_path=pg_catalog, pg_temp\",plan_cache_mode=force_generic_plan}\n"
            "refuse_unreadable_bodies|{\"search_path=pg_catalog, pg_temp\",enable_sort=off}\n");
}

// Random statements of windows of two GPUs from three nodes: runs of minutes,
// gaps, windows of a few seconds to two days, late ones among stored ones.
// `ties`: two nodes' windows may start at the same second (then which of
// them a window is flagged over is either's, as with schema 3).
void ship_random_windows(fleet::PgConnection& db, uint64_t seed, bool ties) {
  std::set<std::pair<std::string, int64_t>> starts;  // (gpu, start) taken, without ties
  std::set<std::tuple<std::string, std::string, int64_t>> keys;
  auto next = [&seed](uint64_t n) { seed = seed * 6364136223846793005ull + 1442695040888963407ull; return (seed >> 33) % n; };
  for (int statement = 0; statement < 24; ++statement) {
    const std::string node = "node-" + std::to_string(1 + next(3));
    std::vector<ledger::WindowRecord> batch;
    int64_t t = kFleetDay0 + 10 * static_cast<int64_t>(next(4 * 360));
    const bool run = next(2) == 0;  // a run of minutes, or scattered windows
    for (int i = 0; i < 30; ++i) {
      const std::string gpu = next(2) ? "GPU-a" : "GPU-b";
      const int64_t start = run ? t + 60 * i : kFleetDay0 + 10 * static_cast<int64_t>(next(4 * 360));
      const uint64_t kind = next(20);
      const int64_t length = kind == 0 ? 2 * 86400 : kind < 4 ? 10 + 10 * static_cast<int64_t>(next(60)) : 60;
      if (!keys.insert({node, gpu, start}).second) continue;
      if (!ties && !starts.insert({gpu, start}).second) continue;
      auto w = fleet_window(start, gpu, i);
      w.end = start + length;
      batch.push_back(w);
    }
    fleet::FleetSinkPostgres sink(db, {"prod", node});
    ASSERT_EQ(sink.ship(pointers(batch)), std::vector<Delivery>(batch.size(), Delivery::kStored));
  }
}

// The same random statements shipped to a database at schema 9 (two index
// probes a window) and to one at 10 (one read a run): the same overlaps.
TEST_F(FleetDb, SchemaTenFlagsTheOverlapsSchemaNineFlaggedFromOneReadARun) {
  pg_->psql("CREATE DATABASE nine");
  fleet::PgConnection nine(pg_->conninfo("gpuledger_admin", "nine"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(nine, kFleetT0, 9), 9);
  const std::string all = "SELECT cluster, node, gpu_uuid, start_time, end_time, other_cluster, other_node, other_start, "
                          "other_end FROM gpuledger.overlaps ORDER BY 1, 2, 3, 4";
  const std::string flagged = "SELECT cluster, node, gpu_uuid, start_time, end_time FROM gpuledger.overlaps ORDER BY 1, 2, 3, 4";
  auto count = [&](const std::string& where) {
    return std::stoi(rows_of(*admin_, "SELECT count(*) FROM gpuledger.overlaps o WHERE " + where));
  };
  for (fleet::PgConnection* db : {&nine, admin_.get()}) ship_random_windows(*db, 7, false);
  EXPECT_EQ(rows_of(*admin_, all), rows_of(nine, all));
  EXPECT_GT(count("true"), 20);
  EXPECT_GT(count("other_start > start_time"), 2) << "some flagged over a window that starts inside them";
  EXPECT_EQ(count("NOT (other_start < end_time AND other_end > start_time)"), 0) << "each over the window it names";
  // Two nodes' windows at one start: which of them a window is over is either's.
  const std::string tables = "gpuledger.overlaps, gpuledger.windows, gpuledger.window_totals, gpuledger.window_parts";
  for (fleet::PgConnection* db : {&nine, admin_.get()}) {
    db->exec("TRUNCATE " + tables);
    ship_random_windows(*db, 11, true);
  }
  EXPECT_EQ(rows_of(*admin_, flagged), rows_of(nine, flagged));
  EXPECT_GT(count("EXISTS (SELECT FROM gpuledger.overlaps o2 WHERE o2.gpu_uuid = o.gpu_uuid AND "
                  "o2.start_time = o.start_time AND o2.node <> o.node)"),
            0)
      << "two nodes' windows at one start";
  EXPECT_EQ(count("NOT (other_start < end_time AND other_end > start_time)"), 0);
}

// Each roll-up's body and forgeries of it that only its sums or parts show
// (a busy micro-unit more, a start a minute late, an end a second early,
// another currency, a millijoule more, money moved between charges, another
// team), each checked by schema 18's check_rollup and schema 19's: the
// roll-ups where the two disagree, and the forgeries of a verified roll-up
// that schema 19 verified.
const std::string kBothChecks = R"SQL(
WITH forged AS (
  SELECT r.verified, v.name, v.b = r.body::jsonb AS unchanged,
         ROW(r.period, r.period_start, r.cluster, r.node, r.gpu_uuid, r.windows, r.cost_micros, r.digests, r.digest,
             v.b::json, r.shipped_at, r.verified, r.refusal)::gpuledger.rollups AS f
  FROM gpuledger.rollups r CROSS JOIN LATERAL (SELECT r.body::jsonb AS j) x CROSS JOIN LATERAL (VALUES
    ('true', x.j),
    ('busy', jsonb_set(x.j, '{micros,1}', to_jsonb((x.j->'micros'->>1)::bigint + 1))),
    ('start', jsonb_set(x.j, '{start}', to_jsonb((x.j->>'start')::bigint + 60))),
    ('end', jsonb_set(x.j, '{end}', to_jsonb((x.j->>'end')::bigint - 1))),
    ('currency', jsonb_set(x.j, '{currency}', '"EUR"')),
    ('energy', jsonb_set(x.j, '{energy,mj}', to_jsonb((x.j->'energy'->>'mj')::bigint + 1))),
    ('moved', jsonb_set(jsonb_set(x.j, '{charges,0,2}', to_jsonb((x.j->'charges'->0->>2)::bigint - 5)),
                        '{charges,1,2}', to_jsonb((x.j->'charges'->1->>2)::bigint + 5))),
    ('team', jsonb_set(x.j, '{accounts,0,4}', '"forged"'))) v(name, b))
SELECT count(*) FILTER (WHERE gpuledger.check_rollup(f) IS DISTINCT FROM gpuledger.check_rollup_19(f)) || ' ' ||
       count(*) FILTER (WHERE verified AND name <> 'true' AND NOT unchanged AND gpuledger.check_rollup_19(f) IS NULL)
       || ' of ' || count(*)
FROM forged
)SQL";

// Schema 19 takes a day's or a month's sums from its finer roll-ups' bodies
// (and from the windows of its hours or days without a current one), and
// parses each body once: schema 18's verdict for every roll-up, true or
// forged, whether its hours are verified, refused (GPU-b's 01:00 to 04:00,
// GPU-a's 06:00: read from windows) or packed, and whether the roll-up came
// before the migration or after.
TEST_F(FleetDb, SchemaNineteenGivesEveryRollUpTheVerdictOfEighteenFromItsFinerRollUps) {
  pg_->psql("CREATE DATABASE eighteen");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "eighteen"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 18), 18);
  const fleet::Origin origin{"prod", "node-1"};
  ship_every_verdict(db, scratch_ / "node-1", origin);
  ledger::Store store((scratch_ / "node-1" / "ledger.db").string());
  fleet::FleetSinkPostgres sink(db, origin);
  auto ship = [&](Period p, int64_t start) { return sink.ship_rollups(fleet::build_rollups(store, origin, p, start)); };
  ship(Period::kHour, kFleetDay0 + 22 * 3600), ship(Period::kHour, kFleetDay0 + 23 * 3600),
      ship(Period::kDay, kFleetDay0);
  EXPECT_EQ(ship(Period::kMonth, kFleetDay0 - 14 * 86400), std::vector<Delivery>{Delivery::kStored})
      << "GPU-b's month (GPU-a's relabelled pod merges into none)";
  const std::string verdicts_18 = rows_of(db, kVerdicts + std::string(" GROUP BY 1 ORDER BY 1"));

  ASSERT_EQ(fleet::migrate(db, kFleetT0), fleet::kFleetSchemaVersion);
  EXPECT_EQ(rows_of(db,
                    "SELECT count(*) FROM gpuledger.rollups r WHERE gpuledger.check_rollup_19(r) IS DISTINCT FROM "
                    "r.refusal"),
            "0\n");
  EXPECT_EQ(rows_of(db, kBothChecks), "0 0 of 448\n");
  // Shipped at 19: the verdicts ship_every_verdict expects, by the trigger's check.
  ship_every_verdict(db, scratch_ / "node-2", {"prod", "node-2"});
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM gpuledger.rollups WHERE node = 'node-2'"), "49\n");
  // Both nodes' verified hours packed; one of node-1's, 23:00 of GPU-b, then
  // taken for refused, so that its day and month read its windows from the pack.
  int64_t packed = 0;
  for (int64_t h = kFleetDay0 + 22 * 3600; h < kDay1 + 86400; h += 3600)
    packed += std::stoll(rows_of(db, "SELECT packed_windows FROM gpuledger.pack_hours(" + std::to_string(h) + ", " +
                                         std::to_string(h + 3600) + ")"));
  // Of two nodes' 26 hours of two GPUs: all but each node's five refused and node-2's four never rolled up.
  EXPECT_EQ(packed, 2 * 26 * 2 * 60 - (5 + 5 + 4) * 60);
  db.exec(
      "UPDATE gpuledger.rollups SET verified = false WHERE period = 'hour' AND node = 'node-1' AND "
      "gpu_uuid = 'GPU-b' AND period_start = " +
      std::to_string(kFleetDay0 + 23 * 3600));
  EXPECT_EQ(rows_of(db, kBothChecks), "0 0 of 840\n");
  EXPECT_EQ(rows_of(db, kVerdicts + std::string(" WHERE node = 'node-1' GROUP BY 1 ORDER BY 1")), verdicts_18);
}

}  // namespace
}  // namespace gpuledger::testing
