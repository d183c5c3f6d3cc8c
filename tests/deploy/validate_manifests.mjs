// Renders every kustomize overlay under deploy/kubernetes, and the fleet
// ledger's upkeep (deploy/kubernetes/fleet-db), with `kubectl kustomize` and
// checks each object offline: against the Kubernetes and
// prometheus-operator schemas (npm kubernetes-models), then against what the
// packaging promises (probes, capabilities, taints, labels that join, flags the
// agent has, rules equal to the promtool-tested file). Exits non-zero on the
// first overlay with a finding, listing every finding.
//   node validate_manifests.mjs KUBECTL DEPLOY_DIR GPULEDGER_BINARY VERSION
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { parseAllDocuments, parse } from "yaml";

const [kubectl, deployDir, gpuledger, version] = process.argv.slice(2);
if (!version) {
  console.error("usage: validate_manifests.mjs KUBECTL DEPLOY_DIR GPULEDGER_BINARY VERSION");
  process.exit(2);
}

// apiVersion -> the module that has its models.
const modelModules = {
  "v1": "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "batch/v1": "kubernetes-models/batch/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
};

const clusterScoped = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding"]);
const operatorKinds = ["ServiceMonitor", "PrometheusRule"];
const coreKinds = ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap",
                   "DaemonSet", "Service"];
const overlays = {
  "gpu-operator": {
    kinds: [...coreKinds, ...operatorKinds],
    nodeSelector: { "nvidia.com/gpu.present": "true" },
    dcgmExporter: true,
    runtimeClassName: "nvidia",
  },
  "plain-nodes": { kinds: [...coreKinds, ...operatorKinds], nodeSelector: { "gpuledger/agent": "true" } },
  "no-prometheus-operator": {
    kinds: coreKinds,
    nodeSelector: { "nvidia.com/gpu.present": "true" },
    annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": "9401", "prometheus.io/path": "/metrics" },
  },
};

// The agent's own flags, from its --help: every flag a manifest passes must exist.
const help = spawnSync(gpuledger, ["agent", "--help"], { encoding: "utf8" });
const agentFlags = new Set((help.stdout.match(/--[a-z0-9-]+/g) ?? []));
if (!agentFlags.has("--listen")) throw new Error(`cannot read the agent's flags from ${gpuledger} agent --help`);

const rulesFile = parse(readFileSync(join(deployDir, "prometheus", "gpuledger-rules.yaml"), "utf8"));
const subset = (want, got) => Object.entries(want).every(([k, v]) => got?.[k] === v);

async function validateSchema(obj) {
  const mod = modelModules[obj.apiVersion];
  if (!mod) return [`${obj.kind}: no schema for apiVersion ${obj.apiVersion}`];
  const Model = (await import(mod))[obj.kind];
  if (!Model) return [`${obj.apiVersion} has no kind ${obj.kind}`];
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    return [`${obj.kind}/${obj.metadata?.name}: ${e.message}`];
  }
}

function checkDaemonSet(ds, want, byKind) {
  const f = [];
  const pod = ds.spec.template.spec;
  const c = pod.containers.find((x) => x.name === "agent");
  if (!c) return ["DaemonSet: no container named agent"];
  const sc = c.securityContext ?? {};
  if (!pod.hostPID) f.push("DaemonSet: hostPID must be true (the host's /proc)");
  if (!isDeepStrictEqual(pod.tolerations, [{ operator: "Exists" }])) f.push("DaemonSet: must tolerate every taint");
  if (pod.securityContext?.seccompProfile?.type !== "RuntimeDefault") f.push("DaemonSet: seccomp RuntimeDefault");
  if (sc.privileged !== false) f.push("DaemonSet: privileged must be false");
  if (sc.readOnlyRootFilesystem !== true) f.push("DaemonSet: readOnlyRootFilesystem must be true");
  for (const cap of ["BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "CHECKPOINT_RESTORE"])
    if (!sc.capabilities?.add?.includes(cap)) f.push(`DaemonSet: capability ${cap} missing`);
  if (!isDeepStrictEqual(sc.capabilities?.drop, ["ALL"])) f.push("DaemonSet: must drop ALL other capabilities");
  if (c.livenessProbe?.httpGet?.path !== "/healthz") f.push("DaemonSet: liveness probe on /healthz");
  if (c.readinessProbe?.httpGet?.path !== "/readyz") f.push("DaemonSet: readiness probe on /readyz");
  if (c.image !== `gpuledger:${version}`) f.push(`DaemonSet: image ${c.image}, want gpuledger:${version}`);
  const port = c.ports?.find((p) => p.name === "metrics");
  if (port?.containerPort !== 9401) f.push("DaemonSet: port `metrics` must be 9401");
  if (!c.args?.includes("--listen=0.0.0.0:9401")) f.push("DaemonSet: --listen=0.0.0.0:9401");
  for (const a of c.args?.slice(1) ?? []) {
    const flag = a.split("=")[0];
    if (!agentFlags.has(flag)) f.push(`DaemonSet: gpuledger agent has no flag ${flag}`);
  }
  const hasDcgm = c.args?.some((a) => a.startsWith("--dcgm-exporter="));
  if (Boolean(want.dcgmExporter) !== Boolean(hasDcgm)) f.push(`DaemonSet: --dcgm-exporter ${hasDcgm ? "unexpected" : "missing"}`);
  if (!isDeepStrictEqual(pod.nodeSelector, want.nodeSelector)) f.push(`DaemonSet: nodeSelector ${JSON.stringify(pod.nodeSelector)}`);
  if (pod.runtimeClassName !== want.runtimeClassName) f.push(`DaemonSet: runtimeClassName ${pod.runtimeClassName}`);
  if (want.annotations && !subset(want.annotations, ds.spec.template.metadata.annotations))
    f.push("DaemonSet: prometheus.io annotations missing");
  // The data plane is pinned in the host's bpffs so a rolling update loses nothing (docs/reliability.md).
  if (c.args?.some((a) => a.startsWith("--no-bpf-pins"))) f.push("DaemonSet: --no-bpf-pins: a restart would lose the data plane");
  if (!c.args?.includes("--keep-pins-on-exit")) f.push("DaemonSet: --keep-pins-on-exit missing: a rolling update would lose the data plane");
  // The stopping agent finds its pod, and through it its DaemonSet (docs/reliability.md).
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath]));
  if (env.POD_NAME !== "metadata.name" || env.POD_NAMESPACE !== "metadata.namespace")
    f.push("DaemonSet: POD_NAME and POD_NAMESPACE must come from the downward API (metadata.name, metadata.namespace)");
  const mounts = Object.fromEntries((c.volumeMounts ?? []).map((m) => [m.mountPath, m]));
  const volumes = Object.fromEntries((pod.volumes ?? []).map((v) => [v.name, v]));
  for (const path of ["/sys/fs/bpf", "/sys/kernel/btf", "/sys/fs/cgroup", "/var/lib/kubelet/pod-resources", "/var/lib/gpuledger"]) {
    const m = mounts[path];
    if (!m) f.push(`DaemonSet: ${path} not mounted`);
    else if (volumes[m.name]?.hostPath?.path !== path) f.push(`DaemonSet: ${path} is not the host's`);
  }
  for (const m of c.volumeMounts ?? []) if (!volumes[m.name]) f.push(`DaemonSet: mount of unknown volume ${m.name}`);
  for (const v of pod.volumes ?? [])
    if (v.configMap && !byKind.ConfigMap?.some((cm) => cm.metadata.name === v.configMap.name))
      f.push(`DaemonSet: ConfigMap ${v.configMap.name} not in the overlay`);
  if (!byKind.ServiceAccount?.some((sa) => sa.metadata.name === pod.serviceAccountName))
    f.push(`DaemonSet: ServiceAccount ${pod.serviceAccountName} not in the overlay`);
  if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory || !c.resources?.limits?.memory)
    f.push("DaemonSet: CPU and memory requests and a memory limit");
  if (!subset(ds.spec.selector.matchLabels, ds.spec.template.metadata.labels)) f.push("DaemonSet: selector misses its pods");
  return f;
}

function checkJoins(byKind, want) {
  const f = [];
  const ds = byKind.DaemonSet[0];
  const svc = byKind.Service?.[0];
  const podLabels = ds.spec.template.metadata.labels;
  if (!svc || !subset(svc.spec.selector, podLabels)) f.push("Service: selector does not select the agent's pods");
  if (svc && !svc.spec.ports.some((p) => p.name === "metrics" && p.port === 9401)) f.push("Service: port metrics 9401");
  const crb = byKind.ClusterRoleBinding?.[0];
  const sa = byKind.ServiceAccount?.[0];
  if (!crb?.subjects?.some((s) => s.kind === "ServiceAccount" && s.name === sa?.metadata.name && s.namespace === sa?.metadata.namespace))
    f.push("ClusterRoleBinding: does not bind the agent's ServiceAccount");
  if (!byKind.ClusterRole?.some((r) => r.metadata.name === crb?.roleRef.name)) f.push("ClusterRoleBinding: role not in the overlay");
  // Read-only everywhere; on DaemonSets only `get`, only its own.
  for (const role of [...(byKind.ClusterRole ?? []), ...(byKind.Role ?? [])])
    for (const rule of role.rules ?? []) {
      if (rule.verbs.some((v) => !["get", "list", "watch"].includes(v))) f.push(`${role.kind}: writes (${rule.verbs})`);
      if (rule.resources.includes("daemonsets") && role.kind !== "Role") f.push("ClusterRole: grants daemonsets");
    }
  const dsRules = (byKind.Role ?? []).flatMap((r) => r.rules ?? []).filter((r) => r.resources.includes("daemonsets"));
  const wantDs = [{ apiGroups: ["apps"], resources: ["daemonsets"], resourceNames: [ds.metadata.name], verbs: ["get"] }];
  if (!isDeepStrictEqual(dsRules, wantDs)) f.push(`Role: must grant exactly get on the DaemonSet ${ds.metadata.name}: ${JSON.stringify(dsRules)}`);
  const rb = byKind.RoleBinding?.[0];
  if (!rb?.subjects?.some((s) => s.kind === "ServiceAccount" && s.name === sa?.metadata.name && s.namespace === sa?.metadata.namespace))
    f.push("RoleBinding: does not bind the agent's ServiceAccount");
  if (rb?.roleRef.kind !== "Role" || !byKind.Role?.some((r) => r.metadata.name === rb?.roleRef.name)) f.push("RoleBinding: role not in the overlay");
  if (want.kinds.includes("ServiceMonitor")) {
    const sm = byKind.ServiceMonitor[0];
    if (!subset(sm.spec.selector.matchLabels, svc?.metadata.labels)) f.push("ServiceMonitor: selector misses the Service");
    const ep = sm.spec.endpoints?.[0];
    if (ep?.port !== "metrics") f.push("ServiceMonitor: must scrape port `metrics`");
    if (ep?.honorLabels !== true) f.push("ServiceMonitor: honorLabels must be true (namespace/pod name the workload)");
    const pr = byKind.PrometheusRule[0];
    if (!isDeepStrictEqual(pr.spec.groups, rulesFile.groups))
      f.push("PrometheusRule: differs from deploy/prometheus/gpuledger-rules.yaml (run scripts/render-prometheus-rule.sh)");
  }
  return f;
}

// The packing CronJob (deploy/kubernetes/fleet-db): a maintainer's job that
// needs no Kubernetes API, runs as nobody, and passes only flags `fleet-db
// pack` has, its password from a file (never on the command line).
const packHelp = spawnSync(gpuledger, ["fleet-db", "pack", "--help"], { encoding: "utf8" });
const packFlags = new Set(packHelp.stdout.match(/--[a-z0-9-]+/g) ?? []);
if (!packFlags.has("--before")) throw new Error(`cannot read the pack command's flags from ${gpuledger}`);

function checkPackCronJob(cj) {
  const f = [];
  const pod = cj.spec.jobTemplate.spec.template.spec;
  const c = pod.containers?.[0];
  const sc = c?.securityContext ?? {};
  if (cj.spec.concurrencyPolicy !== "Forbid") f.push("CronJob: concurrencyPolicy must be Forbid");
  if (pod.restartPolicy !== "Never") f.push("CronJob: restartPolicy Never (the Job retries)");
  if (pod.automountServiceAccountToken !== false) f.push("CronJob: it needs no service account token");
  if (pod.securityContext?.runAsNonRoot !== true) f.push("CronJob: runAsNonRoot");
  if (pod.securityContext?.seccompProfile?.type !== "RuntimeDefault") f.push("CronJob: seccomp RuntimeDefault");
  if (sc.readOnlyRootFilesystem !== true || sc.allowPrivilegeEscalation !== false) f.push("CronJob: read-only root, no escalation");
  if (!isDeepStrictEqual(sc.capabilities?.drop, ["ALL"])) f.push("CronJob: must drop ALL capabilities");
  if (c?.image !== `gpuledger:${version}`) f.push(`CronJob: image ${c?.image}, want gpuledger:${version}`);
  if (!isDeepStrictEqual(c?.args?.slice(0, 2), ["fleet-db", "pack"])) f.push("CronJob: must run `gpuledger fleet-db pack`");
  for (const a of c?.args?.slice(2) ?? [])
    if (!packFlags.has(a.split("=")[0])) f.push(`CronJob: gpuledger fleet-db pack has no flag ${a.split("=")[0]}`);
  if (!c?.args?.some((a) => a.startsWith("--before="))) f.push("CronJob: --before missing");
  if (c?.args?.some((a) => a.startsWith("--fleet-db="))) f.push("CronJob: the connection comes from the Secret, not the command line");
  const pwFile = c?.args?.find((a) => a.startsWith("--fleet-db-password-file="))?.split("=")[1];
  const env = Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.valueFrom?.secretKeyRef]));
  if (env.GPULEDGER_FLEET_DB?.name !== "gpuledger-fleet-db-maintainer" || env.GPULEDGER_FLEET_DB?.key !== "url")
    f.push("CronJob: GPULEDGER_FLEET_DB from the Secret gpuledger-fleet-db-maintainer, key url");
  const mount = (c?.volumeMounts ?? []).find((m) => pwFile?.startsWith(m.mountPath + "/"));
  const vol = (pod.volumes ?? []).find((v) => v.name === mount?.name);
  if (!mount || vol?.secret?.secretName !== "gpuledger-fleet-db-maintainer" ||
      !vol.secret.items?.some((i) => i.key === "password" && `${mount.mountPath}/${i.path}` === pwFile))
    f.push("CronJob: --fleet-db-password-file must be the Secret's key password, mounted");
  if (vol?.secret?.defaultMode & 0o7 || pod.securityContext?.fsGroup === undefined)
    f.push("CronJob: the password file readable by its group (fsGroup) alone");
  if (!c?.resources?.requests?.cpu || !c?.resources?.limits?.memory) f.push("CronJob: a CPU request and a memory limit");
  return f;
}

// The objects a kustomize directory renders, each checked against its schema,
// namespace and label; findings go into `findings`.
async function render(dir, findings) {
  const r = spawnSync(kubectl, ["kustomize", dir], { encoding: "utf8" });
  if (r.status !== 0) {
    findings.push(`kubectl kustomize: ${r.stderr || r.error}`);
    return { docs: [], byKind: {} };
  }
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS()).filter(Boolean);
  const byKind = {};
  for (const obj of docs) {
    findings.push(...(await validateSchema(obj)));
    (byKind[obj.kind] ??= []).push(obj);
    const ns = obj.metadata?.namespace;
    if (clusterScoped.has(obj.kind) ? ns !== undefined : ns !== "gpuledger")
      findings.push(`${obj.kind}/${obj.metadata?.name}: namespace ${ns}`);
    if (obj.metadata?.labels?.["app.kubernetes.io/name"] !== "gpuledger")
      findings.push(`${obj.kind}/${obj.metadata?.name}: label app.kubernetes.io/name=gpuledger missing`);
  }
  return { docs, byKind };
}

let failed = false;
function report(name, findings, docs) {
  const kinds = docs.map((d) => d.kind).sort();
  if (findings.length) {
    failed = true;
    for (const x of findings) console.log(`FAIL ${name}: ${x}`);
  } else {
    console.log(`ok   ${name}: ${docs.length} objects (${kinds.join(", ")}) valid`);
  }
}

for (const [name, want] of Object.entries(overlays)) {
  const findings = [];
  const { docs, byKind } = await render(join(deployDir, "kubernetes", "overlays", name), findings);
  const kinds = docs.map((d) => d.kind).sort();
  if (!isDeepStrictEqual(kinds, [...want.kinds].sort())) findings.push(`kinds ${kinds.join(",")}`);
  if (byKind.DaemonSet?.length === 1) {
    findings.push(...checkDaemonSet(byKind.DaemonSet[0], want, byKind));
    findings.push(...checkJoins(byKind, want));
  }
  report(name, findings, docs);
}
{
  const findings = [];
  const { docs, byKind } = await render(join(deployDir, "kubernetes", "fleet-db"), findings);
  if (!isDeepStrictEqual(docs.map((d) => d.kind), ["CronJob"])) findings.push(`kinds ${docs.map((d) => d.kind)}, want CronJob`);
  for (const cj of byKind.CronJob ?? []) findings.push(...checkPackCronJob(cj));
  report("fleet-db", findings, docs);
}
process.exit(failed ? 1 : 0);
