// Checks the manifests in deploy/ without an API server (run by tests/cli/manifests.sh):
//  1. every object in deploy/*.yaml against the upstream Kubernetes OpenAPI schemas
//     (kubernetes-models' .validate()); cert-manager Issuer/Certificate by a hand-written check;
//  2. the webhook rules of the serve issue (failure policies, sideEffects, review versions,
//     timeouts, contract section 7 paths, cert-manager CA injection) and the wiring between the
//     objects (Service, Deployment args and mounts, probes, certificate secret, PDB, RBAC);
//  3. the CRD's schema: structural shape, then the shipped examples (deploy/examples/) against
//     the AccountedResource schema and the Queue patch's schema (ajv; the CEL rules are not
//     evaluated: `tally validate` covers them);
//  4. the JSON patches in deploy/patches/ (shape, and their schemas compile);
//  5. the kustomization (it lists every top-level manifest) and the Grafana dashboard (its shape, and
//     every metric its queries use is one that tally exports: a string in src/).
// DEPLOY may also be one file, such as the output of `kubectl kustomize deploy/`: then 1 and 2 run
// on its objects (and the CRD's structure), and the directory-only checks (patches, examples,
// kustomization, dashboard) are skipped.
// Usage: node validate.mjs [DEPLOY]        (default ../../deploy)
//        node validate.mjs --serve-args [DEPLOY]   prints the Deployment's tally args, one a line
//        node validate.mjs --rbac-rules [DEPLOY]   prints, as the test API server's POST /_test/rbac
//                                                  body, what the Deployment's ServiceAccount is
//                                                  granted by the bindings in DEPLOY
//        node validate.mjs --webhooks DEPLOY CA.crt  prints the webhook configurations as a JSON List,
//                                                  with CA.crt as every caBundle (cert-manager's part)
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import yaml from "js-yaml";
import Ajv from "ajv";

const here = path.dirname(fileURLToPath(import.meta.url));
// batch.mjs imports this module once per input, with the arguments in the URL (?argv=[...]), so
// that the upstream schemas are loaded once for all the broken copies manifests.sh checks.
const batchArgv = new URL(import.meta.url).searchParams.get("argv");
const argv = batchArgv ? JSON.parse(batchArgv) : process.argv.slice(2);
const mode = ["--serve-args", "--rbac-rules", "--webhooks"].includes(argv[0]) ? argv.shift() : null;
const input = path.resolve(argv[0] ?? path.join(here, "../../deploy"));
// A directory of manifests, or null when the input is one rendered file.
const deployDir = fs.statSync(input).isDirectory() ? input : null;

// ---- loading ---------------------------------------------------------------------------------
function yamlFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort().map((f) => path.join(dir, f));
}
function loadDocs(file) {
  const docs = [];
  // line numbers: js-yaml gives none per document, so count the '---' separators ourselves
  const text = fs.readFileSync(file, "utf8");
  const starts = [1];
  text.split("\n").forEach((l, i) => { if (/^---\s*$/.test(l)) starts.push(i + 2); });
  let i = 0;
  yaml.loadAll(text, (d) => { if (d != null) docs.push({ doc: d, file, line: starts[i] ?? 1 }); i++; });
  return docs;
}
const rel = (f) => path.relative(process.cwd(), f) || f;

let passed = 0, failed = 0;
function report(where, what, errors) {
  if (errors.length === 0) { passed++; console.log(`ok   ${where} ${what}`); }
  else { failed++; console.log(`FAIL ${where} ${what}`); for (const e of errors) console.log(`       ${e}`); }
}

const top = [];
for (const f of deployDir ? yamlFiles(deployDir) : [input]) {
  try { top.push(...loadDocs(f)); }
  catch (e) { report(rel(f), "(YAML)", [e.message.split("\n")[0]]); }
}
const objs = top.filter((d) => d.doc && typeof d.doc === "object" && !Array.isArray(d.doc));
const find = (kind, name, ns) => objs.map((o) => o.doc).find((o) => o.kind === kind && o.metadata?.name === name && (ns === undefined || o.metadata?.namespace === ns));
const ofKind = (kind) => objs.map((o) => o.doc).filter((o) => o.kind === kind);

// The roles bound to a ServiceAccount: [{binding, role (or null), clusterWide, ns}]. A RoleBinding
// grants in its own namespace only, whatever kind of role it names.
function boundRoles(sa, ns) {
  return [...ofKind("RoleBinding"), ...ofKind("ClusterRoleBinding")]
    .filter((b) => (b.subjects ?? []).some((s) => s.kind === "ServiceAccount" && s.name === sa && s.namespace === ns))
    .map((b) => ({
      binding: b,
      role: b.roleRef?.kind === "ClusterRole" ? find("ClusterRole", b.roleRef.name) : find("Role", b.roleRef?.name, b.metadata?.namespace),
      clusterWide: b.kind === "ClusterRoleBinding",
      ns: b.metadata?.namespace,
    }));
}

// ---- --serve-args, --rbac-rules, --webhooks -------------------------------------------------------
if (mode === "--webhooks") {
  const caBundle = fs.readFileSync(argv[1]).toString("base64");
  const items = [...ofKind("ValidatingWebhookConfiguration"), ...ofKind("MutatingWebhookConfiguration")].map((c) => ({
    ...c, webhooks: (c.webhooks ?? []).map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle } })) }));
  console.log(JSON.stringify({ apiVersion: "v1", kind: "List", items }));
  process.exit(0);
}
if (mode) {
  const dep = ofKind("Deployment")[0];
  const c = dep?.spec?.template?.spec?.containers?.[0];
  if (!c) { console.error("no Deployment with a container"); process.exit(1); }
  if (mode === "--serve-args") for (const a of c.args ?? []) console.log(a);
  else {
    const sa = dep.spec.template.spec.serviceAccountName, ns = dep.metadata?.namespace;
    const allow = boundRoles(sa, ns).flatMap(({ role, clusterWide, ns: bns }) => (role?.rules ?? []).map((r) => ({
      verbs: r.verbs ?? [], apiGroups: r.apiGroups ?? [], resources: r.resources ?? [],
      ...(r.resourceNames ? { resourceNames: r.resourceNames } : {}),
      ...(clusterWide ? {} : { namespaces: [bns] }),
    })));
    console.log(JSON.stringify({ user: `system:serviceaccount:${ns}:${sa}`, allow }));
  }
  process.exit(0);
}

// ---- 1. upstream schemas ---------------------------------------------------------------------
// apiVersion -> kubernetes-models module path ("v1" -> kubernetes-models/v1, "apps/v1" -> .../apps/v1)
async function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
  if (!/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion)) return null;
  try {
    const mod = await import(`kubernetes-models/${apiVersion}`);
    return typeof mod[kind] === "function" ? mod[kind] : null;
  } catch { return null; }
}
const errorsOf = (e) => (e?.errors?.length ? e.errors.map((x) => `${x.instancePath || "/"}: ${x.message}`) : [String(e?.message ?? e)]);

// Go duration as cert-manager parses it (time.ParseDuration), in seconds
function goDuration(s) {
  if (typeof s !== "string" || !/^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/.test(s)) return null;
  const mult = { ns: 1e-9, us: 1e-6, "µs": 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  let t = 0;
  for (const m of s.matchAll(/([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g)) t += parseFloat(m[1]) * mult[m[2]];
  return t;
}
const onlyKeys = (o, allowed, where) =>
  Object.keys(o ?? {}).filter((k) => !allowed.includes(k)).map((k) => `${where}: unknown field "${k}"`);
const dns1123 = (s) => typeof s === "string" && s.length <= 253 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s);

// cert-manager.io/v1: the fields used here and their allowed values (cert-manager's API reference)
function checkIssuer(o) {
  const e = [];
  if (!dns1123(o.metadata?.name)) e.push("metadata.name: not a DNS subdomain");
  if (o.kind === "Issuer" && !o.metadata?.namespace) e.push("metadata.namespace: an Issuer is namespaced");
  const kinds = ["selfSigned", "ca", "acme", "vault", "venafi"];
  const set = kinds.filter((k) => o.spec && k in o.spec);
  if (set.length !== 1) e.push(`spec: exactly one of ${kinds.join(", ")} (found ${set.length})`);
  e.push(...onlyKeys(o.spec, kinds, "spec"));
  if (o.spec?.ca && typeof o.spec.ca.secretName !== "string") e.push("spec.ca.secretName: required");
  return e;
}
function checkCertificate(o) {
  const e = [], s = o.spec ?? {};
  if (!dns1123(o.metadata?.name)) e.push("metadata.name: not a DNS subdomain");
  if (!o.metadata?.namespace) e.push("metadata.namespace: a Certificate is namespaced");
  e.push(...onlyKeys(s, ["secretName", "secretTemplate", "commonName", "dnsNames", "ipAddresses", "uris", "emailAddresses",
    "duration", "renewBefore", "renewBeforePercentage", "privateKey", "usages", "issuerRef", "isCA", "subject",
    "literalSubject", "keystores", "revisionHistoryLimit", "encodeUsagesInRequest", "additionalOutputFormats",
    "nameConstraints", "otherNames", "signatureAlgorithm"], "spec"));
  if (!dns1123(s.secretName)) e.push("spec.secretName: required, a DNS subdomain");
  if (!Array.isArray(s.dnsNames) || s.dnsNames.length === 0 || !s.dnsNames.every(dns1123))
    e.push("spec.dnsNames: a non-empty list of DNS names");
  if (!s.issuerRef || typeof s.issuerRef.name !== "string") e.push("spec.issuerRef.name: required");
  else {
    e.push(...onlyKeys(s.issuerRef, ["name", "kind", "group"], "spec.issuerRef"));
    if (s.issuerRef.kind !== undefined && !["Issuer", "ClusterIssuer"].includes(s.issuerRef.kind)) e.push("spec.issuerRef.kind: Issuer or ClusterIssuer");
    if (s.issuerRef.group !== undefined && s.issuerRef.group !== "cert-manager.io") e.push("spec.issuerRef.group: cert-manager.io");
  }
  const d = s.duration === undefined ? 90 * 24 * 3600 : goDuration(s.duration);
  if (d === null) e.push(`spec.duration: "${s.duration}" is not a Go duration`);
  else if (d < 3600) e.push("spec.duration: at least 1h (cert-manager's minimum)");
  if (s.renewBefore !== undefined) {
    const r = goDuration(s.renewBefore);
    if (r === null) e.push(`spec.renewBefore: "${s.renewBefore}" is not a Go duration`);
    else if (d !== null && r >= d) e.push("spec.renewBefore: must be shorter than spec.duration");
  }
  const pk = s.privateKey ?? {};
  e.push(...onlyKeys(pk, ["algorithm", "size", "encoding", "rotationPolicy"], "spec.privateKey"));
  const sizes = { RSA: [2048, 3072, 4096, 8192, undefined], ECDSA: [256, 384, 521, undefined], Ed25519: [undefined] };
  const alg = pk.algorithm ?? "RSA";
  if (!(alg in sizes)) e.push(`spec.privateKey.algorithm: "${alg}" is not RSA, ECDSA or Ed25519`);
  else if (!sizes[alg].includes(pk.size)) e.push(`spec.privateKey.size: ${pk.size} is not valid for ${alg}`);
  if (pk.rotationPolicy !== undefined && !["Never", "Always"].includes(pk.rotationPolicy)) e.push("spec.privateKey.rotationPolicy: Never or Always");
  if (pk.encoding !== undefined && !["PKCS1", "PKCS8"].includes(pk.encoding)) e.push("spec.privateKey.encoding: PKCS1 or PKCS8");
  const usages = ["signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
    "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc"];
  for (const u of s.usages ?? []) if (!usages.includes(u)) e.push(`spec.usages: unknown usage "${u}"`);
  return e;
}
// deploy/kustomization.yaml: what `kubectl kustomize` builds (manifests.sh runs it; here, that it
// lists every top-level manifest, so none is left out of `kubectl apply -k`, and nothing else).
function checkKustomization(o) {
  const e = [];
  if (!deployDir) return ["a Kustomization among rendered objects"];
  e.push(...onlyKeys(o, ["apiVersion", "kind", "metadata", "resources", "configMapGenerator", "components", "labels",
    "commonLabels", "commonAnnotations", "images", "namespace", "patches", "generatorOptions"], "kustomization"));
  const listed = (o.resources ?? []).map((r) => path.normalize(r));
  for (const r of listed) if (!fs.existsSync(path.join(deployDir, r))) e.push(`resources: ${r} does not exist`);
  for (const f of yamlFiles(deployDir).map((f) => path.basename(f)).filter((f) => !/^kustomization\.ya?ml$/.test(f)))
    if (!listed.includes(f)) e.push(`resources: ${f} is not listed (kubectl apply -k would leave it out)`);
  for (const r of listed) if (/^(patches|examples)(\/|$)/.test(r)) e.push(`resources: ${r} holds no objects of this kustomization`);
  for (const g of o.configMapGenerator ?? []) for (const f of g.files ?? []) {
    const file = f.includes("=") ? f.slice(f.indexOf("=") + 1) : f;
    if (!fs.existsSync(path.join(deployDir, file))) e.push(`configMapGenerator ${g.name}: ${file} does not exist`);
  }
  return e;
}
const handChecks = {
  "kustomize.config.k8s.io/v1beta1 Kustomization": checkKustomization,
  "cert-manager.io/v1 Issuer": checkIssuer,
  "cert-manager.io/v1 ClusterIssuer": checkIssuer,
  "cert-manager.io/v1 Certificate": checkCertificate,
};

for (const { doc, file, line } of top) {
  const where = `${rel(file)}:${line}`;
  if (Array.isArray(doc) || typeof doc !== "object") {
    report(where, "(document)", ["not a Kubernetes object: JSON patches belong in deploy/patches/"]);
    continue;
  }
  const what = `${doc.apiVersion} ${doc.kind} ${doc.metadata?.namespace ? doc.metadata.namespace + "/" : ""}${doc.metadata?.name ?? ""}`;
  const Model = await modelFor(doc.apiVersion, doc.kind);
  if (Model) {
    try { new Model(doc).validate(); report(where, `${what} (schema)`, []); }
    catch (e) { report(where, `${what} (schema)`, errorsOf(e)); }
  } else if (handChecks[`${doc.apiVersion} ${doc.kind}`]) {
    report(where, `${what} (hand check)`, handChecks[`${doc.apiVersion} ${doc.kind}`](doc));
  } else {
    report(where, what, ["no schema for this apiVersion/kind: add one to validate.mjs"]);
  }
}

// ---- 2. webhook rules and wiring -------------------------------------------------------------
const expected = {
  "/validate/pods-resize": { failurePolicy: "Ignore", group: "", versions: ["v1"], resource: "pods/resize", ops: ["UPDATE"], scope: "Namespaced" },
  "/validate/queues": { failurePolicy: "Fail", group: "scheduling.run.ai", versions: ["v2"], resource: "queues", ops: ["CREATE", "UPDATE", "DELETE"], scope: "Cluster" },
  "/validate/accountedresources": { failurePolicy: "Fail", group: "scheduling.run.ai", versions: ["v1alpha1"], resource: "accountedresources", ops: ["CREATE", "UPDATE"], scope: "Cluster" },
  "/validate/runs": { failurePolicy: "Fail", group: "kruntimes.io", versions: ["v1alpha1"], resource: "runs", ops: ["CREATE", "UPDATE"], scope: "Namespaced" },
  // contract section 9, the live mode's endpoints, each enabled by a controller
  "/validate/runs-status": { failurePolicy: "Fail", group: "kruntimes.io", versions: ["v1alpha1"], resource: "runs/status", ops: ["UPDATE"], scope: "Namespaced", controller: "runs" },
  "/mutate/pods": { failurePolicy: "Ignore", group: "", versions: ["v1"], resource: "pods", ops: ["CREATE"], scope: "Namespaced", mutating: true, controller: "gating" },
};
const services = ofKind("Service");
const certs = ofKind("Certificate");
const seenPaths = {};
const webhookKeys = ["name", "clientConfig", "rules", "failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector",
  "sideEffects", "timeoutSeconds", "admissionReviewVersions", "matchConditions"];
const vwcs = [...ofKind("ValidatingWebhookConfiguration"), ...ofKind("MutatingWebhookConfiguration")];
if (ofKind("ValidatingWebhookConfiguration").length === 0) report("deploy", "ValidatingWebhookConfiguration", ["none found"]);
// The Deployment's tally flags (--flag=value and --flag value both accepted by tally), and the
// controllers they run; the webhook and RBAC checks below depend on them.
function serveFlags(d, e) {
  const flags = {}; let cur = null;
  for (const a of (d?.spec?.template?.spec?.containers?.[0]?.args ?? []).slice(1)) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (m) { cur = m[1]; (flags[cur] ??= []); if (m[2] !== undefined) flags[cur].push(m[2]); }
    else if (cur) flags[cur].push(a);
    else e?.push(`Deployment args: stray argument ${a}`);
  }
  return flags;
}
const deployFlags = serveFlags(ofKind("Deployment")[0]);
const controllers = (deployFlags.controllers ?? []).flatMap((v) => v.split(",")).filter(Boolean);
for (const vwc of vwcs) {
  const e = [];
  const inject = vwc.metadata?.annotations?.["cert-manager.io/inject-ca-from"];
  if (!inject) e.push("metadata.annotations: no cert-manager.io/inject-ca-from");
  else {
    const [ns, name] = inject.split("/");
    if (!certs.some((c) => c.metadata?.namespace === ns && c.metadata?.name === name)) e.push(`cert-manager.io/inject-ca-from: no Certificate ${inject} in deploy/`);
  }
  const names = new Set();
  const mutating = vwc.kind === "MutatingWebhookConfiguration";
  for (const [i, w] of (vwc.webhooks ?? []).entries()) {
    const at = `webhooks[${i}] ${w.name}`;
    e.push(...onlyKeys(w, mutating ? [...webhookKeys, "reinvocationPolicy"] : webhookKeys, at));
    if (mutating && w.reinvocationPolicy !== "Never") e.push(`${at}: reinvocationPolicy must be Never (the gate is added once)`);
    for (const [j, mc] of (w.matchConditions ?? []).entries())
      if (typeof mc?.name !== "string" || !mc.name || typeof mc.expression !== "string" || !mc.expression.trim()) e.push(`${at}: matchConditions[${j}] needs name and expression`);
    if (names.has(w.name)) e.push(`${at}: duplicate name`); names.add(w.name);
    if (!dns1123(w.name) || w.name.split(".").length < 3) e.push(`${at}: name must be a DNS name with at least three segments`);
    if (w.sideEffects !== "None") e.push(`${at}: sideEffects must be None (found ${w.sideEffects})`);
    if (JSON.stringify(w.admissionReviewVersions) !== '["v1"]') e.push(`${at}: admissionReviewVersions must be ["v1"]`);
    if (!Number.isInteger(w.timeoutSeconds) || w.timeoutSeconds < 1 || w.timeoutSeconds > 30) e.push(`${at}: timeoutSeconds must be set within 1-30 (found ${w.timeoutSeconds})`);
    if (w.clientConfig?.caBundle) e.push(`${at}: clientConfig.caBundle is set; cert-manager injects it`);
    if (w.clientConfig?.url) e.push(`${at}: clientConfig.url; use the in-cluster service`);
    const svc = w.clientConfig?.service;
    if (!svc) { e.push(`${at}: clientConfig.service missing`); continue; }
    const s = services.find((x) => x.metadata?.name === svc.name && x.metadata?.namespace === svc.namespace);
    if (!s) e.push(`${at}: no Service ${svc.namespace}/${svc.name} in deploy/`);
    else if (!(s.spec?.ports ?? []).some((p) => p.port === (svc.port ?? 443))) e.push(`${at}: Service ${svc.name} has no port ${svc.port ?? 443}`);
    for (const c of certs) if (s && !(c.spec?.dnsNames ?? []).includes(`${svc.name}.${svc.namespace}.svc`)) e.push(`${at}: Certificate ${c.metadata.name} lacks dnsName ${svc.name}.${svc.namespace}.svc`);
    const exp = expected[svc.path];
    if (!exp) { e.push(`${at}: path ${svc.path} is not one of tally's admission endpoints (contract sections 7 and 9)`); continue; }
    (seenPaths[svc.path] ??= []).push(w.name);
    if (!!exp.mutating !== mutating) e.push(`${at}: ${svc.path} belongs in a ${exp.mutating ? "Mutating" : "Validating"}WebhookConfiguration`);
    // The live endpoints answer 404 unless their controller runs, which Fail would turn into refusals.
    if (exp.controller && !controllers.includes(exp.controller)) e.push(`${at}: ${svc.path} needs --controllers ${exp.controller} in the Deployment (else it answers 404)`);
    if (exp.mutating) {
      // tally's own pods and the control plane's must be able to start while tally is down or gating.
      const ns = ofKind("Deployment")[0]?.metadata?.namespace;
      const out = (w.namespaceSelector?.matchExpressions ?? []).find((x) => x.key === "kubernetes.io/metadata.name" && x.operator === "NotIn");
      for (const n of [ns, "kube-system"]) if (n && !(out?.values ?? []).includes(n)) e.push(`${at}: namespaceSelector must exclude namespace ${n} (kubernetes.io/metadata.name NotIn)`);
    }
    if (w.failurePolicy !== exp.failurePolicy) e.push(`${at}: failurePolicy must be ${exp.failurePolicy} (found ${w.failurePolicy ?? "Fail (default)"})`);
    const rules = w.rules ?? [];
    const covers = rules.some((r) => (r.apiGroups ?? []).includes(exp.group) && (r.resources ?? []).includes(exp.resource) &&
      exp.versions.every((v) => (r.apiVersions ?? []).includes(v)) && exp.ops.every((op) => (r.operations ?? []).includes(op)));
    if (!covers) e.push(`${at}: rules must cover ${exp.ops.join("/")} of ${exp.group || "core"}/${exp.versions.join(",")} ${exp.resource}`);
    for (const r of rules) {
      if ([r.apiGroups, r.apiVersions, r.resources, r.operations].some((l) => (l ?? []).includes("*"))) e.push(`${at}: wildcard in rules; list what it validates`);
      for (const res of r.resources ?? []) if (res !== exp.resource) e.push(`${at}: resource ${res} does not belong on ${svc.path}`);
      for (const op of r.operations ?? []) if (!exp.ops.includes(op)) e.push(`${at}: operation ${op} is not validated by ${svc.path}`);
      if (r.scope !== undefined && r.scope !== exp.scope) e.push(`${at}: scope must be ${exp.scope}`);
    }
  }
  report("deploy", `${vwc.kind} ${vwc.metadata?.name} (webhook rules)`, e);
}
{
  const e = [];
  for (const p of Object.keys(expected)) {
    const n = seenPaths[p]?.length ?? 0;
    if (n !== 1) e.push(`${p}: served by ${n} webhooks, want exactly 1`);
  }
  report("deploy", "contract sections 7 and 9 paths (each admission endpoint exactly once)", e);
}

// What `tally serve --in-cluster` lists and watches (contract section 2): [API group, resource].
const LIVE_READS = [["", "namespaces"], ["", "nodes"], ["", "pods"], ["scheduling.k8s.io", "priorityclasses"],
  ["scheduling.run.ai", "queues"], ["scheduling.run.ai", "accountedresources"], ["scheduling.run.ai", "podgroups"],
  ["kai.scheduler", "configs"], ["resource.k8s.io", "deviceclasses"], ["resource.k8s.io", "resourceslices"],
  ["resource.k8s.io", "resourceclaims"], ["resource.k8s.io", "resourceclaimtemplates"], ["kruntimes.io", "runtimes"],
  ["kruntimes.io", "runs"]];

// What each part of tally sends to the API server (src/live/, src/ctrl/), as [group, resource, verb,
// resourceNames]: a role may grant these and nothing else, each role one part only, so that a
// deployment that runs fewer controllers drops a binding and nothing else.
const GRANTS = {
  // ...and the CRDs of those groups, listed again every 30 s (src/live/reflector.c, crd_run)
  reader: [...LIVE_READS.flatMap(([g, r]) => ["get", "list", "watch"].map((v) => [g, r, v])),
    ["apiextensions.k8s.io", "customresourcedefinitions", "list"]],
  gating: [["", "pods", "patch"], ["", "pods/status", "patch"], ["", "events", "create"]],
  runs: [["kruntimes.io", "runs/status", "patch"]],
  status: [["scheduling.run.ai", "queues/status", "patch"], ["apiextensions.k8s.io", "customresourcedefinitions", "get", ["queues.scheduling.run.ai"]]],
  lease: [["coordination.k8s.io", "leases", "get"], ["coordination.k8s.io", "leases", "create"], ["coordination.k8s.io", "leases", "update"]],
  // the holds every replica shares (docs/controllers.md "Reservations across replicas")
  reservations: [["", "configmaps", "get", ["tally-reservations"]], ["", "configmaps", "create"], ["", "configmaps", "update", ["tally-reservations"]]],
};
const namespaced = (purpose) => purpose === "lease" || purpose === "reservations";
const triples = (rule) => (rule.apiGroups ?? []).flatMap((g) => (rule.resources ?? []).flatMap((r) => (rule.verbs ?? []).map((v) => [g, r, v])));
const purposesOf = ([g, r, v]) => Object.keys(GRANTS).filter((p) => GRANTS[p].some(([pg, pr, pv]) => pg === g && pr === r && pv === v));
const rolePurposes = (role) => [...new Set((role?.rules ?? []).flatMap(triples).flatMap(purposesOf))];
function roleProblems(role) {
  const e = [], at = `${role.kind} ${role.metadata?.name}`;
  for (const rule of role.rules ?? []) {
    if ([rule.apiGroups, rule.resources, rule.verbs].some((l) => (l ?? []).includes("*"))) e.push(`${at}: wildcard in a rule; list what tally does`);
    if ((rule.resources ?? []).includes("secrets")) e.push(`${at}: secrets; tally never reads or writes them`);
    for (const t of triples(rule)) {
      const ps = purposesOf(t);
      if (!ps.length) { e.push(`${at}: grants ${t[2]} on ${t[1]} (group "${t[0]}"), which tally never sends`); continue; }
      if (ps.some(namespaced) && role.kind !== "Role") e.push(`${at}: ${t[1]} belong in a Role in tally's namespace, not a ${role.kind}`);
      const names = GRANTS[ps[0]].find(([g, r, v]) => g === t[0] && r === t[1] && v === t[2])[3];
      if (names && !(rule.resourceNames?.length && rule.resourceNames.every((n) => names.includes(n))))
        e.push(`${at}: ${t[2]} on ${t[1]}: limit it to resourceNames [${names.join(", ")}]`);
      if (t[2] === "create" && rule.resourceNames?.length) e.push(`${at}: create on ${t[1]} cannot be limited by resourceNames`);
    }
  }
  const ps = rolePurposes(role);
  if (ps.length > 1) e.push(`${at}: mixes the grants of ${ps.join(" and ")}; one role per part of tally`);
  return e;
}

// wiring: Certificate -> Issuer/Secret -> Deployment mounts -> args; Service -> pods; probes; PDB; RBAC
{
  const e = [];
  for (const c of certs) {
    const ref = c.spec?.issuerRef ?? {};
    if ((ref.kind ?? "Issuer") === "Issuer" && !find("Issuer", ref.name, c.metadata?.namespace)) e.push(`Certificate ${c.metadata.name}: no Issuer ${ref.name} in its namespace`);
  }
  const deps = ofKind("Deployment");
  if (deps.length !== 1) e.push(`want one Deployment, found ${deps.length}`);
  for (const d of deps) {
    const ns = d.metadata?.namespace;
    const pod = d.spec?.template ?? {};
    const labels = pod.metadata?.labels ?? {};
    const matches = (sel) => sel && Object.keys(sel).length > 0 && Object.entries(sel).every(([k, v]) => labels[k] === v);
    if (!matches(d.spec?.selector?.matchLabels)) e.push("Deployment selector does not match its pod labels");
    const c = pod.spec?.containers?.[0] ?? {};
    const args = c.args ?? [];
    if (args[0] !== "serve") e.push(`Deployment args must start with serve (found ${args[0]})`);
    // flags of contract sections 7 and 9 plus --log-level
    const flags = serveFlags(d, e);
    const known = ["listen", "tls-cert", "tls-key", "state", "reserve-upsizes", "log-level", "in-cluster", "kubeconfig",
                   "context", "kube-api-qps", "kube-api-burst", "watch-stale-after", "watch-idle-timeout", "discovery-interval",
                   "controllers", "leader-elect", "lease-namespace", "lease-name", "lease-duration", "renew-deadline",
                   "retry-period", "reservation-timeout", "queue-admission-gating", "client-ca"];
    for (const f of Object.keys(flags)) if (!known.includes(f)) e.push(`Deployment args: unknown flag --${f}`);
    for (const c of controllers) if (!["gating", "status", "runs"].includes(c)) e.push(`--controllers: unknown controller ${c}`);
    const elect = "leader-elect" in flags ? !(flags["leader-elect"] ?? []).includes("false")
                                          : controllers.length > 0 || "reserve-upsizes" in flags;
    if (controllers.length && !elect && (d.spec?.replicas ?? 1) > 1) e.push("controllers on several replicas need --leader-elect (only the Lease holder may write)");
    if (controllers.length && !("in-cluster" in flags || "kubeconfig" in flags)) e.push("--controllers needs the live cluster (--in-cluster)");
    for (const f of ["listen", "tls-cert", "tls-key"]) if (!flags[f]?.length) e.push(`Deployment args: --${f} missing`);
    const live = "in-cluster" in flags || "kubeconfig" in flags;
    if (live === (flags.state?.length > 0)) e.push("Deployment args: want exactly one of --state PATH... and --in-cluster");
    if ("in-cluster" in flags && flags["in-cluster"].length) e.push("Deployment args: --in-cluster takes no value");
    if (flags["reserve-upsizes"] && d.spec?.replicas !== 1) e.push("--reserve-upsizes needs replicas: 1 (the ledger is per process; docs/serve.md)");
    const mounts = c.volumeMounts ?? [], vols = pod.spec?.volumes ?? [];
    const volFor = (p) => {
      const m = mounts.filter((m) => p === m.mountPath || p.startsWith(m.mountPath.replace(/\/$/, "") + "/")).sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      return m && vols.find((v) => v.name === m.name);
    };
    const secret = certs[0]?.spec?.secretName;
    for (const f of ["tls-cert", "tls-key"]) for (const p of flags[f] ?? []) {
      const v = volFor(p);
      if (!v?.secret) e.push(`--${f} ${p}: not on a Secret volume`);
      else if (secret && v.secret.secretName !== secret) e.push(`--${f} ${p}: Secret ${v.secret.secretName} is not the Certificate's ${secret}`);
    }
    if ((flags["tls-cert"] ?? [])[0]?.split("/").pop() !== "tls.crt" || (flags["tls-key"] ?? [])[0]?.split("/").pop() !== "tls.key") e.push("--tls-cert/--tls-key must name tls.crt/tls.key (cert-manager's Secret keys)");
    for (const p of flags.state ?? []) if (!volFor(p)) e.push(`--state ${p}: not on a mounted volume`);
    for (const p of flags["client-ca"] ?? []) {
      const v = volFor(p);
      if (!v?.secret && !v?.configMap) e.push(`--client-ca ${p}: not on a ConfigMap or Secret volume`);
      else if (!(flags["tls-cert"] ?? []).length) e.push("--client-ca needs --tls-cert and --tls-key");
    }
    const port = Number(/:(\d+)$/.exec(flags.listen?.[0] ?? ":8443")?.[1]);
    const cport = (c.ports ?? []).find((p) => p.containerPort === port);
    if (!cport) e.push(`--listen port ${port} is not a containerPort`);
    const portOk = (p) => p === port || (cport && p === cport.name);
    for (const [probe, want] of [["readinessProbe", "/readyz"], ["livenessProbe", "/healthz"]]) {
      const g = c[probe]?.httpGet;
      if (!g || g.path !== want || g.scheme !== "HTTPS" || !portOk(g.port)) e.push(`${probe}: want httpGet ${want} over HTTPS on the listen port`);
    }
    if (!c.securityContext?.readOnlyRootFilesystem || c.securityContext?.allowPrivilegeEscalation !== false) e.push("container securityContext: readOnlyRootFilesystem and no privilege escalation");
    const sa = pod.spec?.serviceAccountName;
    if (!sa || !find("ServiceAccount", sa, ns)) e.push(`serviceAccountName ${sa}: no such ServiceAccount in deploy/`);
    for (const s of services) {
      if (!matches(s.spec?.selector)) e.push(`Service ${s.metadata.name}: selector does not match the Deployment's pods`);
      for (const p of s.spec?.ports ?? []) if (!portOk(p.targetPort)) e.push(`Service ${s.metadata.name}: targetPort ${p.targetPort} is not the listen port`);
    }
    for (const pdb of ofKind("PodDisruptionBudget")) {
      if (!matches(pdb.spec?.selector?.matchLabels)) e.push(`PodDisruptionBudget ${pdb.metadata.name}: selector does not match`);
      if (typeof pdb.spec?.minAvailable === "number" && pdb.spec.minAvailable >= (d.spec?.replicas ?? 1)) e.push(`PodDisruptionBudget ${pdb.metadata.name}: minAvailable >= replicas blocks every drain`);
    }
    // NetworkPolicy: if one selects the pods, the listen port must stay open to the API server
    for (const np of ofKind("NetworkPolicy").filter((n) => n.metadata?.namespace === ns && matches(n.spec?.podSelector?.matchLabels))) {
      if ((np.spec?.policyTypes ?? ["Ingress"]).includes("Ingress") &&
          !(np.spec?.ingress ?? []).some((r) => !(r.ports?.length) || r.ports.some((p) => portOk(p.port))))
        e.push(`NetworkPolicy ${np.metadata.name}: no ingress rule opens the listen port ${port} (the API server calls the webhooks there)`);
    }
    // least privilege: no token unless some binding grants the account something
    const bound = boundRoles(sa, ns);
    const saObj = find("ServiceAccount", sa, ns);
    if (bound.length === 0 && saObj && saObj.automountServiceAccountToken !== false && pod.spec?.automountServiceAccountToken !== false)
      e.push("the ServiceAccount has no bindings: set automountServiceAccountToken: false");
    for (const b of bound) if (!b.role) e.push(`${b.binding.kind} ${b.binding.metadata.name}: no ${b.binding.roleRef?.kind} ${b.binding.roleRef?.name} in deploy/`);
    if (live) {
      // The live mode lists and watches every kind of contract section 2; each controller writes what
      // it writes; the Lease holder its Lease. The account must be able to, and to do nothing more.
      if (saObj?.automountServiceAccountToken === false || pod.spec?.automountServiceAccountToken === false)
        e.push("--in-cluster needs the service account token mounted (automountServiceAccountToken must not be false)");
      const leaseNs = flags["lease-namespace"]?.[0] ?? ns, leaseName = flags["lease-name"]?.[0] ?? "tally";
      const shared = controllers.includes("runs") || "reserve-upsizes" in flags;
      const needed = ["reader", ...controllers, ...(elect ? ["lease"] : []), ...(shared ? ["reservations"] : [])];
      // rules in effect: cluster-wide ones from ClusterRoleBindings; the Lease's from RoleBindings in its namespace
      const effective = (purpose) => bound.filter((b) => namespaced(purpose) ? !b.clusterWide && b.ns === leaseNs : b.clusterWide)
        .flatMap((b) => b.role?.rules ?? []);
      const covers = (rules, [g, r, v, names], name) => rules.some((x) => (x.apiGroups ?? []).includes(g) &&
        (x.resources ?? []).includes(r) && (x.verbs ?? []).includes(v) &&
        (!x.resourceNames?.length || (name ?? names?.[0]) !== undefined && x.resourceNames.includes(name ?? names[0])));
      for (const purpose of needed) for (const grant of GRANTS[purpose]) {
        const [g, r, v] = grant;
        const name = v === "create" ? undefined : purpose === "lease" ? leaseName : purpose === "reservations" ? `${leaseName}-reservations` : undefined;
        if (covers(effective(purpose), grant, name)) continue;
        if (purpose === "reader") {
          if (v === "list") e.push(`--in-cluster: no cluster-wide list and watch of ${r} (group "${g}") for ServiceAccount ${sa}`);
        } else if (purpose === "lease") e.push(`--leader-elect: ServiceAccount ${sa} may not ${v} lease ${leaseNs}/${leaseName} (a Role and RoleBinding in ${leaseNs})`);
        else if (purpose === "reservations") e.push(`shared reservations (--controllers runs, --reserve-upsizes): ServiceAccount ${sa} may not ${v} configmap ${leaseNs}/${leaseName}-reservations (a Role and RoleBinding in ${leaseNs})`);
        else e.push(`--controllers ${purpose}: ServiceAccount ${sa} may not ${v} ${r} (group "${g}") cluster-wide`);
      }
      for (const b of bound) for (const purpose of rolePurposes(b.role))
        if (!needed.includes(purpose)) e.push(`${b.binding.kind} ${b.binding.metadata.name}: grants what ${purpose === "lease" ? "--leader-elect" : purpose === "reservations" ? "shared reservations" : "--controllers " + purpose} needs, which the Deployment does not run`);
    }
  }
  for (const r of [...ofKind("Role"), ...ofKind("ClusterRole")]) e.push(...roleProblems(r));
  report("deploy", "wiring (Certificate, Deployment args and mounts, probes, Service, PDB, NetworkPolicy, RBAC)", e);
}

// ---- 3. the CRD and the examples -------------------------------------------------------------
// The structural-schema rules the API server enforces that a JSON schema does not: every node has
// a type (or is int-or-string / preserve-unknown-fields), list-map keys are required, every CEL
// rule has a message.
function structural(s, at, e) {
  if (!s || typeof s !== "object") return;
  if (!s.type && !s["x-kubernetes-int-or-string"] && !s["x-kubernetes-preserve-unknown-fields"]) e.push(`${at}: no type`);
  if (s["x-kubernetes-int-or-string"] && JSON.stringify(s.anyOf) !== '[{"type":"integer"},{"type":"string"}]') e.push(`${at}: int-or-string needs anyOf [integer, string]`);
  for (const v of s["x-kubernetes-validations"] ?? []) {
    if (typeof v.rule !== "string" || !v.rule) e.push(`${at}: CEL rule without rule`);
    if (!v.message && !v.messageExpression) e.push(`${at}: CEL rule "${v.rule}" without message`);
  }
  if (s["x-kubernetes-list-type"] === "map") for (const k of s["x-kubernetes-list-map-keys"] ?? []) if (!(s.items?.required ?? []).includes(k)) e.push(`${at}: list-map key ${k} must be required`);
  if (s.type === "array" && !("maxItems" in s) && (s.items?.["x-kubernetes-validations"]?.length)) e.push(`${at}: array with CEL rules on its items needs maxItems (CEL cost budget)`);
  if (s.type === "object" && s.additionalProperties && !("maxProperties" in s) && s.additionalProperties["x-kubernetes-validations"]?.length) e.push(`${at}: map with CEL rules on its values needs maxProperties (CEL cost budget)`);
  for (const [k, v] of Object.entries(s.properties ?? {})) structural(v, `${at}.${k}`, e);
  if (s.items) structural(s.items, `${at}[]`, e);
  if (s.additionalProperties && typeof s.additionalProperties === "object") structural(s.additionalProperties, `${at}{}`, e);
}
// Kubernetes' own keywords mean nothing to a JSON-schema validator; ajv runs with strict off.
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
function compile(schema, where) {
  try { return ajv.compile(schema); } catch (e) { report(where, "(schema does not compile)", [e.message]); return null; }
}
const ajvErrors = (v) => (v.errors ?? []).map((x) => `${x.instancePath || "/"}: ${x.message}`);

const crds = ofKind("CustomResourceDefinition");
const crdSchema = {};
for (const crd of crds) {
  const e = [];
  for (const v of crd.spec?.versions ?? []) {
    const s = v.schema?.openAPIV3Schema;
    if (!s) { e.push(`version ${v.name}: no openAPIV3Schema`); continue; }
    structural(s, `${v.name}`, e);
    const fn = compile(s, `CRD ${crd.metadata.name} ${v.name}`);
    if (fn) crdSchema[`${crd.spec.group}/${v.name} ${crd.spec.names?.kind}`] = fn;
  }
  if ((crd.spec?.versions ?? []).filter((v) => v.storage).length !== 1) e.push("exactly one storage version");
  if (crd.metadata?.name !== `${crd.spec?.names?.plural}.${crd.spec?.group}`) e.push("metadata.name must be <plural>.<group>");
  report("deploy", `CustomResourceDefinition ${crd.metadata?.name} (structural schema)`, e);
}

// ---- 4. patches ------------------------------------------------------------------------------
// Keywords a patch may add to a schema that exists: what a valid value is (null when it is).
const schemaKeywords = {
  maxProperties: (v) => (Number.isInteger(v) && v >= 0 ? null : "expected a non-negative integer"),
  "x-kubernetes-validations": (v) =>
    Array.isArray(v) && v.length > 0 && v.every((r) => typeof r?.rule === "string" && r.rule && typeof r.message === "string")
      ? null : "expected a list of {rule, message}",
};
// by the path below openAPIV3Schema ("spec.accountedResources", "status.accountedResources", ...)
const patchSchemas = {};
for (const f of deployDir ? yamlFiles(path.join(deployDir, "patches")) : []) {
  let docs;
  try { docs = loadDocs(f); } catch (err) { report(rel(f), "(YAML)", [err.message.split("\n")[0]]); continue; }
  for (const { doc, line } of docs) {
    const e = [];
    if (!Array.isArray(doc)) { report(`${rel(f)}:${line}`, "JSON patch", ["not a list of operations"]); continue; }
    for (const [i, op] of doc.entries()) {
      if (!["add", "replace", "remove", "test", "move", "copy"].includes(op.op)) e.push(`[${i}].op: ${op.op}`);
      if (typeof op.path !== "string" || !op.path.startsWith("/spec/versions/")) e.push(`[${i}].path: expected /spec/versions/...`);
      const marker = typeof op.path === "string" ? op.path.split("/").pop() : "";
      if (op.op === "add" && schemaKeywords[marker]) {
        // one keyword added to a schema that is there already (run-resources.yaml), not a schema
        const why = schemaKeywords[marker](op.value);
        if (why) e.push(`[${i}].value: ${marker}: ${why}`);
      } else if (op.op === "add" && marker.startsWith("x-kubernetes-list-")) {
        // a list marker added to a schema that is there already (queue-status.yaml), not a schema
        const valid = marker === "x-kubernetes-list-type" ? ["atomic", "set", "map"].includes(op.value)
          : marker === "x-kubernetes-list-map-keys" && Array.isArray(op.value) && op.value.length > 0 && op.value.every((k) => typeof k === "string");
        if (!valid) e.push(`[${i}].value: not a valid ${marker}`);
      } else if (op.op === "add" && op.value) {
        structural(op.value, `[${i}].value`, e);
        const fn = compile(op.value, rel(f));
        if (fn) patchSchemas[op.path.replace(/^.*\/openAPIV3Schema\//, "").replace(/(^|\/)properties\//g, "$1").replace(/\//g, ".")] = fn;
      }
    }
    report(`${rel(f)}:${line}`, "JSON patch", e);
  }
}

// 4b. a patch for a CRD that upstream ships with the field (tests/manifests/upstream/: its shape)
// must add to upstream's schema, never replace part of it: every operation is an `add` of a member
// that is not there yet, below a place that is (issue 15 item 16).
const upstreamShapes = { "run-resources.yaml": "runs.kruntimes.io.json" };
const unescapePtr = (t) => t.replace(/~1/g, "/").replace(/~0/g, "~");
for (const [pf, shape] of deployDir ? Object.entries(upstreamShapes) : []) {
  const f = path.join(deployDir, "patches", pf);
  if (!fs.existsSync(f)) { report(`deploy/patches/${pf}`, "JSON patch", ["missing"]); continue; }
  const crd = JSON.parse(fs.readFileSync(path.join(here, "upstream", shape), "utf8"));
  const e = [];
  for (const { doc } of loadDocs(f)) for (const [i, op] of (Array.isArray(doc) ? doc : []).entries()) {
    const parts = String(op.path).split("/").slice(1).map(unescapePtr);
    const last = parts.pop();
    const parent = parts.reduce((n, k) => (n && typeof n === "object" ? n[k] : undefined), crd);
    if (op.op !== "add") e.push(`[${i}]: ${op.op}: only add keeps upstream's schema`);
    else if (!parent || typeof parent !== "object" || Array.isArray(parent))
      e.push(`[${i}].path: ${op.path}: no such place in upstream's CRD (${shape}): add to its schema`);
    else if (last in parent) e.push(`[${i}].path: ${op.path}: replaces upstream's ${last}: add to it instead`);
    else parent[last] = op.value;
  }
  report(`deploy/patches/${pf}`, `JSON patch (adds to upstream's ${crd.metadata.name} schema)`, e);
}
// The Queue patch requires what `tally validate` requires of an entry: a resourceRef and a limit.
if (patchSchemas["spec.accountedResources"]) {
  const v = patchSchemas["spec.accountedResources"];
  report("deploy/patches/queue-accountedresources.yaml", "JSON patch (an entry needs resourceRef and limit)",
    [[{ resourceRef: "gpu" }, "an entry without limit is accepted"], [[{ limit: "4" }], "an entry without resourceRef is accepted"]]
      .filter(([sample]) => v(Array.isArray(sample) ? sample : [sample])).map(([, why]) => why));
}

// the examples against the CRD (AccountedResource) and the Queue patch (spec.accountedResources)
for (const f of deployDir ? yamlFiles(path.join(deployDir, "examples")) : []) {
  let docs;
  try { docs = loadDocs(f); } catch (err) { report(rel(f), "(YAML)", [err.message.split("\n")[0]]); continue; }
  for (const { doc, line } of docs) {
    const where = `${rel(f)}:${line}`, what = `${doc.apiVersion} ${doc.kind} ${doc.metadata?.name}`;
    const fn = crdSchema[`${doc.apiVersion} ${doc.kind}`];
    if (fn) report(where, `${what} (CRD schema)`, fn(doc) ? [] : ajvErrors(fn));
    else if (doc.kind === "Queue" && patchSchemas["spec.accountedResources"]) {
      const v = patchSchemas["spec.accountedResources"];
      report(where, `${what} (Queue patch schema, spec.accountedResources)`, v(doc.spec?.accountedResources ?? []) ? [] : ajvErrors(v));
    } else report(where, what, ["no schema in deploy/ for this kind"]);
  }
}

// ---- 5. the Grafana dashboard ----------------------------------------------------------------
// Every metric a query uses must be one tally exports: a string literal in src/*.c that starts with
// its name (the exposition is written by hand: "# HELP name ...", "name{label=...} %llu", or a
// table of names). And every series of contract section 9 has a panel.
const CONTRACT9 = ["tally_watch_events_total", "tally_watch_relists_total", "tally_watch_restarts_total",
  "tally_watch_last_event_age_seconds", "tally_objects", "tally_gated_pods", "tally_ungates_total",
  "tally_queue_accounted_used", "tally_queue_accounted_limit", "tally_queue_accounted_headroom",
  "tally_queue_allocated", "tally_runs_pending", "tally_runtime_utilization", "tally_leader"];
function exportedMetrics(dir) {
  const names = new Set();
  const walk = (d) => {
    for (const ent of fs.readdirSync(d, { withFileTypes: true })) {
      const f = path.join(d, ent.name);
      if (ent.isDirectory()) walk(f);
      else if (ent.name.endsWith(".c"))
        for (const m of fs.readFileSync(f, "utf8").matchAll(/"(?:# (?:HELP|TYPE) )?(tally_[a-z0-9_]+)/g)) names.add(m[1]);
    }
  };
  walk(dir);
  return names;
}
function checkDashboard(file, exported) {
  const e = [];
  let d;
  try { d = JSON.parse(fs.readFileSync(file, "utf8")); } catch (err) { return [`not JSON: ${err.message}`]; }
  if (typeof d.schemaVersion !== "number" || d.schemaVersion < 36) e.push(`schemaVersion ${d.schemaVersion}: want 36 or newer (Grafana 9+)`);
  for (const k of ["uid", "title"]) if (typeof d[k] !== "string" || !d[k]) e.push(`${k}: required`);
  const vars = d.templating?.list ?? [];
  const dsVar = vars.find((v) => v.type === "datasource" && v.query === "prometheus");
  if (!dsVar) { e.push("templating: no datasource variable of type prometheus"); return e; }
  const dsRef = (ds) => ds?.type === "prometheus" && [`\${${dsVar.name}}`, `$${dsVar.name}`].includes(ds?.uid);
  const used = new Set();
  const exprMetrics = (expr, at) => {
    if (typeof expr !== "string" || !expr.trim()) { e.push(`${at}: empty query`); return; }
    for (const m of expr.matchAll(/\btally_[a-z0-9_]+/g)) {
      used.add(m[0]);
      if (!exported.has(m[0])) e.push(`${at}: ${m[0]} is not a metric tally exports (no "${m[0]}" string in src/)`);
    }
  };
  for (const v of vars.filter((v) => v.type === "query")) {
    if (!dsRef(v.datasource)) e.push(`variable ${v.name}: datasource must be the \${${dsVar.name}} variable`);
    exprMetrics(typeof v.query === "string" ? v.query : v.query?.query, `variable ${v.name}`);
  }
  const panels = (d.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
  const ids = new Set();
  for (const p of panels) {
    const at = `panel ${p.id} "${p.title}"`;
    if (ids.has(p.id)) e.push(`${at}: duplicate id`); ids.add(p.id);
    const g = p.gridPos ?? {};
    if (![g.x, g.y, g.w, g.h].every(Number.isInteger) || g.w < 1 || g.x < 0 || g.x + g.w > 24) e.push(`${at}: gridPos must fit the 24 columns`);
    if (p.type === "row") continue;
    if (!dsRef(p.datasource)) e.push(`${at}: datasource must be the \${${dsVar.name}} variable`);
    const refs = new Set();
    if (!(p.targets ?? []).length) e.push(`${at}: no queries`);
    for (const t of p.targets ?? []) {
      if (refs.has(t.refId)) e.push(`${at}: duplicate refId ${t.refId}`); refs.add(t.refId);
      if (t.datasource && !dsRef(t.datasource)) e.push(`${at} ${t.refId}: datasource must be the \${${dsVar.name}} variable`);
      exprMetrics(t.expr, `${at} ${t.refId}`);
    }
  }
  for (const m of CONTRACT9) if (!used.has(m)) e.push(`no panel shows ${m} (contract section 9)`);
  return e;
}
if (deployDir) {
  const exported = exportedMetrics(path.join(here, "../../src"));
  for (const f of fs.readdirSync(deployDir).filter((f) => /dashboard.*\.json$/.test(f)).sort())
    report(rel(path.join(deployDir, f)), "Grafana dashboard (shape; every metric tally exports)", checkDashboard(path.join(deployDir, f), exported));
}

console.log(`${passed} passed, ${failed} failed`);
if (batchArgv) globalThis.validateExitCode = failed ? 1 : 0;
else process.exit(failed ? 1 : 0);
