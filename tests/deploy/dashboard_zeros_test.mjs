// Every cost and waste panel of the Grafana dashboards shows 0, not "No data",
// where nothing was spent, and its numbers where something was: each panel's
// queries, with Grafana's variables expanded as a dashboard set to "All"
// sends them, are evaluated by the real promtool (`promtool test rules`,
// promql_expr_test) over three nodes' series, each against exact values:
//   new:   an agent that has charged nothing yet (no cost series at all);
//   busy:  one pod on one GPU, all of it busy: no idle pod, no unallocated GPU;
//   waste: the same pod also idle, and a second GPU nobody was allocated.
// A panel whose title speaks of cost, idle, waste or unallocated must be
// listed here, so that a new one cannot go untested.
//   node dashboard_zeros_test.mjs DASHBOARD_DIR
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [dashboardDir] = process.argv.slice(2);

// Series a minute apart for 40 minutes; counters in currency units and
// seconds, so rates are per second (60 a minute: 1 a second).
const pod = 'account="uid-a", namespace="ml", pod="pod-a", container="main", team="vision", UUID="GPU-1"';
const unallocated = 'account="__unallocated__", namespace="", pod="", container="", team="__unallocated__", UUID="GPU-2"';
const nodes = {
  new: [['up{job="gpuledger"}', "1x40"]],
  busy: [
    [`gpuledger_cost_total{${pod}, kind="busy"}`, "0+60x40"],
    [`gpuledger_held_gpu_seconds_total{${pod}}`, "0+60x40"],
    [`gpuledger_busy_gpu_seconds_total{${pod}}`, "0+60x40"],
  ],
  waste: [
    [`gpuledger_cost_total{${pod}, kind="busy"}`, "0+60x40"],
    [`gpuledger_cost_total{${pod}, kind="idle"}`, "0+60x40"],
    [`gpuledger_cost_total{${unallocated}, kind="idle"}`, "0+120x40"],
    [`gpuledger_held_gpu_seconds_total{${pod}}`, "0+60x40"],
    [`gpuledger_busy_gpu_seconds_total{${pod}}`, "0+30x40"],
  ],
};

// dashboard -> panel title -> refId -> node -> [labels, value]... ("" labels: none).
const none1 = (l) => `{${l}="(none)"}`;
const none2 = (a, b) => `{${a}="(none)", ${b}="(none)"}`;
const expected = {
  "gpuledger-cost.json": {
    "Cost per hour, now": { A: { new: [["", 0]], busy: [["", 3600]], waste: [["", 14400]] } },
    "Idle share of cost": { A: { new: [["", 0]], busy: [["", 0]], waste: [["", 0.75]] } },
    "Unallocated cost per hour": { A: { new: [["", 0]], busy: [["", 0]], waste: [["", 7200]] } },
    "GPUs held": { A: { new: [["", 0]], busy: [["", 1]], waste: [["", 1]] } },
    "Cost per hour by team": {
      A: { new: [[none1("team"), 0]], busy: [['{team="vision"}', 3600]],
           waste: [['{team="vision"}', 7200], ['{team="__unallocated__"}', 7200]] },
    },
    "Cost per hour by namespace": {
      A: { new: [[none1("namespace"), 0]], busy: [['{namespace="ml"}', 3600]],
           waste: [['{namespace="ml"}', 7200], ["", 7200]] },
    },
    "Idle cost per hour by team": {
      A: { new: [[none1("team"), 0]], busy: [['{team="vision"}', 0]],
           waste: [['{team="vision"}', 3600], ['{team="__unallocated__"}', 7200]] },
    },
    "Unallocated GPU cost per hour": {
      A: { new: [[none1("UUID"), 0]], busy: [['{UUID="GPU-1"}', 0]],
           waste: [['{UUID="GPU-2"}', 7200], ['{UUID="GPU-1"}', 0]] },
    },
    "Cost and efficiency by namespace and team": {
      A: { new: [[none2("namespace", "team"), 0]], busy: [['{namespace="ml", team="vision"}', 600]],
           waste: [['{namespace="ml", team="vision"}', 1200], ['{team="__unallocated__"}', 1200]] },
      // B is efficiency (busy / held): unknown, not 0, where nothing was held.
      B: { new: [], busy: [['{namespace="ml", team="vision"}', 1]], waste: [['{namespace="ml", team="vision"}', 0.5]] },
      C: { new: [[none2("namespace", "team"), 0]], busy: [['{namespace="ml", team="vision"}', 0]],
           waste: [['{namespace="ml", team="vision"}', 600], ['{team="__unallocated__"}', 1200]] },
    },
  },
  "gpuledger-gpus.json": {
    "Idle cost per hour by pod": {
      A: { new: [[none2("namespace", "pod"), 0]], busy: [['{namespace="ml", pod="pod-a"}', 0]],
           waste: [['{namespace="ml", pod="pod-a"}', 3600]] },
    },
  },
};

// Grafana's variables: "All" for every template variable, a 5 m rate window, a 10 m range.
const expand = (expr) =>
  expr.replaceAll("$__rate_interval", "5m").replaceAll("$__range", "10m").replace(/\$\{?(\w+)\}?/g, ".*");

let failures = 0;
const fail = (why) => {
  console.log(`FAIL ${why}`);
  failures++;
};
const tests = Object.entries(nodes).map(([node, series]) => ({
  name: node,
  interval: "1m",
  input_series: series.map(([s, values]) => ({ series: s, values })),
  promql_expr_test: [],
}));
let cases = 0;
for (const file of readdirSync(dashboardDir).filter((f) => f.endsWith(".json")).sort()) {
  const board = JSON.parse(readFileSync(join(dashboardDir, file), "utf8"));
  const panels = board.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== "row");
  for (const p of panels) {
    const want = expected[file]?.[p.title];
    if (!want) {
      if (/cost|idle|waste|unallocated/i.test(p.title)) fail(`${file} "${p.title}": a cost or waste panel this test does not check`);
      continue;
    }
    for (const t of p.targets ?? []) {
      if (!want[t.refId]) {
        fail(`${file} "${p.title}" ${t.refId}: no expected values`);
        continue;
      }
      for (const test of tests) {
        test.promql_expr_test.push({
          expr: expand(t.expr),
          eval_time: "30m",
          exp_samples: want[t.refId][test.name].map(([labels, value]) => ({ labels, value })),
        });
        cases++;
      }
    }
  }
}
for (const [file, titles] of Object.entries(expected))
  for (const title of Object.keys(titles)) {
    const board = JSON.parse(readFileSync(join(dashboardDir, file), "utf8"));
    if (!board.panels.some((p) => p.title === title)) fail(`${file} "${title}": no such panel`);
  }

// JSON is YAML: promtool reads the tests as written.
const work = mkdtempSync(join(tmpdir(), "gl-dashboard-zeros-"));
const testFile = join(work, "dashboard_zeros.test.yaml");
writeFileSync(testFile, JSON.stringify({ evaluation_interval: "1m", tests }, null, 1));
const run = spawnSync("promtool", ["test", "rules", testFile], { encoding: "utf8" });
const said = `${run.stdout}${run.stderr}`.trim();
if (run.error || run.status !== 0) fail(`promtool test rules: ${run.error ?? said}`);
else console.log(`ok   promtool test rules: ${cases} panel queries on ${tests.length} nodes\n${said}`);
rmSync(work, { recursive: true, force: true });
console.log(`${failures ? "failed" : "passed"}: ${cases} panel queries checked, ${failures} failures`);
process.exit(failures ? 1 : 0);
