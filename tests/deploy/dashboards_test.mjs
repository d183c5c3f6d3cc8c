// Every Grafana dashboard panel's query, run against a real Prometheus that
// scraped a real agent: `gpuledger demo` (real probes, cgroups and ledger,
// simulated tenants and GPUs). Each query must succeed and return data, and
// each template variable must have values. The agent's page also goes through
// `promtool check metrics`.
//   node dashboards_test.mjs GPULEDGER_BINARY PROMETHEUS DASHBOARD_DIR
// Exit 77 (skip) without root, unless CI=true: then it fails.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [gpuledger, prometheus, dashboardDir] = process.argv.slice(2);
if (process.geteuid() !== 0) {
  console.log("the demo loads eBPF programs: run as root");
  process.exit(process.env.CI === "true" ? 1 : 77);
}
const deadline = (ms) => Date.now() + ms;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const work = mkdtempSync(join(tmpdir(), "gl-dashboards-"));
const children = [];
const cleanup = () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
};
process.on("exit", cleanup);

// The agent: the demo, long enough for several 5 s ledger windows and rates.
const demo = spawn(gpuledger, ["demo", "--seconds", "40", "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "inherit"] });
children.push(demo);
let demoOut = "";
demo.stdout.on("data", (d) => (demoOut += d));
let agentPort;
for (const until = deadline(30000); !agentPort && Date.now() < until; await sleep(100))
  agentPort = demoOut.match(/Metrics: http:\/\/127\.0\.0\.1:(\d+)\/metrics/)?.[1];
if (!agentPort) throw new Error(`the demo did not start:\n${demoOut}`);

const promPort = await freePort();
writeFileSync(join(work, "prometheus.yml"),
  `global: {scrape_interval: 1s, scrape_timeout: 1s}\n` +
  `scrape_configs:\n  - job_name: gpuledger\n    honor_labels: true\n    static_configs: [{targets: ['127.0.0.1:${agentPort}']}]\n`);
const prom = spawn(prometheus, [`--config.file=${join(work, "prometheus.yml")}`, `--storage.tsdb.path=${join(work, "tsdb")}`,
  `--web.listen-address=127.0.0.1:${promPort}`, "--log.level=warn"], { stdio: ["ignore", "ignore", "inherit"] });
children.push(prom);

const api = async (path) => {
  const res = await fetch(`http://127.0.0.1:${promPort}/api/v1/${path}`);
  return res.json();
};
const query = (expr) => api(`query?query=${encodeURIComponent(expr)}`).catch((e) => ({ status: "error", error: String(e) }));

// Ready when the rates over a panel's window are above zero: ledger windows
// (5 s in the demo) have closed within it, launches were counted, the device
// plane has read its GPUs.
const readiness = ["rate(gpuledger_cost_total[10s]) > 0", "rate(gpuledger_held_gpu_seconds_total[10s]) > 0",
  "rate(gpuledger_busy_gpu_seconds_total[10s]) > 0", "rate(gpuledger_cuda_kernel_launches_total[10s]) > 0",
  "gpuledger_gpu_sm_active_ratio", "gpuledger_gpu_share_ratio", 'rate(gpuledger_cost_total{team="__unallocated__"}[10s]) > 0'];
let ready = false;
for (const until = deadline(40000); !ready && Date.now() < until; await sleep(500)) {
  const results = await Promise.all(readiness.map(query));
  ready = results.every((r) => r.status === "success" && r.data.result.length > 0);
}
if (!ready) throw new Error("Prometheus did not get the demo's series in time");
await sleep(3000);  // a few more samples, so that 10 s windows hold several

// Grafana's variables, as a dashboard set to "All" and a 10 s step would send them.
const expand = (expr) =>
  expr.replaceAll("$__rate_interval", "10s").replaceAll("$__range", "20s").replaceAll("$__interval", "2s")
      .replace(/\$\{?(\w+)\}?/g, ".*");

let failures = 0;
let checked = 0;
for (const file of readdirSync(dashboardDir).filter((f) => f.endsWith(".json")).sort()) {
  const board = JSON.parse(readFileSync(join(dashboardDir, file), "utf8"));
  const panels = board.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== "row");
  for (const v of board.templating.list.filter((v) => v.type === "query")) {
    const m = (v.query?.query ?? v.query).match(/^label_values\((.*), *(\w+)\)$/);
    const r = m && (await api(`label/${m[2]}/values?match[]=${encodeURIComponent(expand(m[1]))}`));
    const ok = r?.status === "success" && r.data.length > 0;
    console.log(`${ok ? "ok  " : "FAIL"} ${file} variable ${v.name}: ${ok ? r.data.length + " values" : JSON.stringify(r)}`);
    if (!ok) failures++;
  }
  for (const p of panels) {
    if (!p.targets?.length) {
      console.log(`FAIL ${file} "${p.title}": no query`);
      failures++;
    }
    for (const t of p.targets ?? []) {
      const r = await query(expand(t.expr));
      const ok = r.status === "success" && r.data.result.length > 0;
      checked++;
      console.log(`${ok ? "ok  " : "FAIL"} ${file} "${p.title}" ${t.refId}: ${ok ? r.data.result.length + " series" : JSON.stringify(r).slice(0, 300)}`);
      if (!ok) failures++;
    }
  }
}
// `promtool check metrics` on the agent's page: the only finding allowed is
// the camelCase of dcgm-exporter's own label names (UUID, modelName, Hostname),
// kept so that the two join (docs/operating.md).
const page = await (await fetch(`http://127.0.0.1:${agentPort}/metrics`)).text();
const lint = spawnSync("promtool", ["check", "metrics"], { input: page, encoding: "utf8" });
const findings = `${lint.stdout}${lint.stderr}`.split("\n").filter((l) => l.trim());
const unexpected = findings.filter((l) => !l.endsWith("label names should be written in 'snake_case' not 'camelCase'"));
checked++;
if (unexpected.length || lint.error) {
  failures++;
  console.log(`FAIL promtool check metrics: ${lint.error ?? unexpected.join("; ")}`);
} else {
  console.log(`ok   promtool check metrics: ${findings.length} camelCase-label findings (dcgm-exporter's names), nothing else`);
}

cleanup();
await new Promise((r) => (demo.exitCode !== null ? r() : demo.on("exit", r)));
rmSync(work, { recursive: true, force: true });
console.log(`${checked - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
