#!/usr/bin/env bash
# Checks the manifests in deploy/ (the serve issue, docs/serve.md "Manifests and how they are
# checked"), run by ctest from the repository root:
#   bash tests/cli/manifests.sh path/to/tally
# 1. tests/manifests/validate.mjs: every object against the upstream Kubernetes OpenAPI schemas
#    (the dev-only npm package kubernetes-models, pinned in tests/manifests/package-lock.json), the
#    webhook rules, the wiring between the objects, RBAC by controller, the CRD and the JSON patches,
#    the examples, the kustomization and the Grafana dashboard (every metric it uses is exported);
# 1b. `kubectl kustomize deploy/` with the real kubectl, its output checked the same way, and an
#    overlay with the client-ca Component;
# 2. validate.mjs again on broken copies of deploy/: each must fail (the checker checks);
# 3. `tally validate` on deploy/*.yaml and on the example objects in deploy/examples/;
# 4. `tally serve` started with the Deployment's own args (--in-cluster against the test API server,
#    with the service account laid out as the kubelet mounts it and exactly deploy/'s RBAC, behind
#    the rendered webhook configurations): /readyz, the Lease, a pod gated and admitted or held, a
#    Run bound and its claim decided, nothing refused with 403.
# node_modules is installed once with `npm ci` and reused while package-lock.json is unchanged.
set -u
source tests/cli/lib/logwait.sh
TALLY=$(realpath "${1:?usage: manifests.sh path/to/tally}")
ROOT=$(pwd)
MDIR=$ROOT/tests/manifests
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# node and npm: whatever is on PATH if node is 18 or newer, else Debian's (scripts/deps.sh test).
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if ! command -v node >/dev/null || ! command -v npm >/dev/null || [ "$(node_major)" -lt 18 ]; then
  echo "manifests.sh: node >= 18 and npm not found; installing Debian's nodejs and npm"
  "$ROOT/scripts/deps.sh" test || { echo "manifests.sh: scripts/deps.sh test failed"; exit 1; }
  hash -r
  if [ "$(node_major)" -lt 18 ]; then echo "manifests.sh: still no node >= 18 on PATH"; exit 1; fi
fi

# npm ci once per lockfile: the stamp holds the lockfile's hash. flock keeps two runs (ctest -j,
# the plain and ASan suites) from installing into the same directory at once.
install_deps() {
  local want stamp=$MDIR/node_modules/.tally-lock-sha256
  want=$(sha256sum "$MDIR/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$MDIR/node_modules/kubernetes-models" ]; then
    return 0
  fi
  echo "manifests.sh: npm ci in tests/manifests"
  (cd "$MDIR" && npm ci --include=dev --no-audit --no-fund --prefer-offline --loglevel=error) || return 1
  echo "$want" > "$stamp"
}
t0=$(date +%s)
if command -v flock >/dev/null; then
  exec 9>"$MDIR/.npm-install.lock"
  flock -w 300 9 || { echo "manifests.sh: timed out waiting for the install lock"; exit 1; }
  install_deps; rc=$?
  flock -u 9
else
  install_deps; rc=$?
fi
[ "$rc" -eq 0 ] || { echo "manifests.sh: npm ci failed (the npm registry or the npm cache is needed once)"; exit 1; }
echo "manifests.sh: dependencies ready in $(( $(date +%s) - t0 )) s"

# 1. the manifests as shipped
out=$(node "$MDIR/validate.mjs" deploy 2>&1); rc=$?
echo "$out"
[ "$rc" -eq 0 ] && ok || bad "validate.mjs deploy: exit $rc"
echo "$out" | grep -Eq '^[0-9]+ passed, 0 failed$' && ok || bad "validate.mjs: no '<n> passed, 0 failed' line"

# 1b. kustomize with the real kubectl (the kubectl on PATH may be a dispatcher that asks a server for
# /version first: the versioned binary next to it is called directly), and its output checked as
# the manifests are: every object rendered, each against the schemas, the webhook rules, the wiring.
# Then the client-ca Component from an overlay, as its comment shows.
KUBECTL=${KUBECTL:-}
if [ -z "$KUBECTL" ] && command -v kubectl >/dev/null; then
  kdir=$(dirname "$(readlink -f "$(command -v kubectl)")")
  KUBECTL=$(ls "$kdir"/kubectl.1.* 2>/dev/null | sort -t. -k3 -n | tail -1)
  KUBECTL=${KUBECTL:-kubectl}
fi
[ -n "$KUBECTL" ] || { echo "manifests.sh: no kubectl (scripts/deps.sh test)"; exit 1; }
"$KUBECTL" kustomize deploy/ > "$tmp/rendered.yaml" 2>"$tmp/kustomize.err" && ok ||
  { bad "$KUBECTL kustomize deploy/ failed"; cat "$tmp/kustomize.err"; }
out=$(node "$MDIR/validate.mjs" "$tmp/rendered.yaml" 2>&1); rc=$?
[ "$rc" -eq 0 ] && ok || { bad "validate.mjs on the kustomize output: exit $rc"; echo "$out" | grep -A3 FAIL; }
# every object of deploy/*.yaml is rendered (plus the dashboard's ConfigMap), none twice
want=$(cat deploy/*.yaml | grep -c '^kind: ')   # less the Kustomization, plus the dashboard's ConfigMap
got=$(grep -c '^kind: ' "$tmp/rendered.yaml")
[ "$got" = "$want" ] && ok || bad "kustomize rendered $got objects, want $want"
grep -q '^  name: tally-grafana-dashboard$' "$tmp/rendered.yaml" && grep -q 'grafana_dashboard: "1"' "$tmp/rendered.yaml" && ok ||
  bad "the dashboard's ConfigMap is not rendered"
mkdir -p "$tmp/overlay"
rel=$(realpath --relative-to="$tmp/overlay" deploy)
printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s/client-ca]\n' "$rel" "$rel" \
  > "$tmp/overlay/kustomization.yaml"
"$KUBECTL" kustomize "$tmp/overlay" > "$tmp/rendered-ca.yaml" 2>"$tmp/kustomize.err" && ok ||
  { bad "$KUBECTL kustomize of an overlay with deploy/client-ca failed"; cat "$tmp/kustomize.err"; }
out=$(node "$MDIR/validate.mjs" "$tmp/rendered-ca.yaml" 2>&1); rc=$?
[ "$rc" -eq 0 ] && ok || { bad "validate.mjs on the client-ca overlay: exit $rc"; echo "$out" | grep -A3 FAIL; }
node "$MDIR/validate.mjs" --serve-args "$tmp/rendered-ca.yaml" | grep -qx -- '--client-ca=/client-ca/ca.crt' && ok ||
  bad "the client-ca Component does not add --client-ca"

# 2. broken copies: each edit must make validate.mjs fail, naming what is wrong. These run no tally
# code, so the sanitizer suite (TALLY_SANITIZED=1) leaves them to the plain one.
if [ -z "${TALLY_SANITIZED:-}" ]; then
# mutate NAME FILE SED-EXPR EXPECTED-TEXT
# The copies are made first and checked by one node process (tests/manifests/batch.mjs), since
# loading the upstream schemas is most of a run's time.
mut_names=() mut_wants=() mut_dirs=()
mutate() {
  local name=$1 file=$2 expr=$3 want=$4 d=$tmp/mut-$1
  rm -rf "$d"; cp -r deploy "$d"
  sed -i -e "$expr" "$d/$file"
  if cmp -s "deploy/$file" "$d/$file"; then bad "mutation $name did not change $file"; return; fi
  mut_names+=("$name") mut_wants+=("$want") mut_dirs+=("$d")
}
mutate resize-fail webhook.yaml 's/failurePolicy: Ignore/failurePolicy: Fail/' 'failurePolicy must be Ignore'
mutate queues-ignore webhook.yaml '/name: queues.tally/,/failurePolicy/s/failurePolicy: Fail/failurePolicy: Ignore/' 'failurePolicy must be Fail'
mutate timeout webhook.yaml 's/timeoutSeconds: 5$/timeoutSeconds: 31/' 'timeoutSeconds must be set within 1-30'
mutate side-effects webhook.yaml '0,/sideEffects: None/s//sideEffects: Some/' 'sideEffects'
mutate path webhook.yaml 's|/validate/runs|/validate/run|' '/validate/runs: served by 0 webhooks'
mutate port-type webhook.yaml 's/containerPort: 8443/containerPort: "8443"/' 'containerPort: must be integer'
mutate inject-ca webhook.yaml '0,/inject-ca-from: tally-system\/tally-webhook/s//inject-ca-from: tally-system\/nope/' 'no Certificate tally-system/nope'
mutate probe webhook.yaml 's|path: /readyz|path: /ready|' 'readinessProbe: want httpGet /readyz'
mutate cert-size webhook.yaml 's/size: 256/size: 2048/' 'spec.privateKey.size: 2048 is not valid for ECDSA'
mutate crd-cost accountedresource-crd.yaml '/maxProperties: 32/d' 'needs maxProperties (CEL cost budget)'
mutate example examples/accountedresources.yaml 's/unit: percent/unit: "10%"/' 'must match pattern'
mutate patch-key patches/queue-accountedresources.yaml 's/required: \[resourceRef, limit\]/required: [limit]/' 'list-map key resourceRef must be required'
mutate patch-limit patches/queue-accountedresources.yaml 's/required: \[resourceRef, limit\]/required: [resourceRef]/' 'an entry without limit is accepted'
mutate patch-replaces patches/run-resources.yaml 's|/properties/requests/maxProperties$|/properties/requests|' "replaces upstream's requests"
mutate rbac-pods rbac.yaml 's/resources: \[namespaces, nodes, pods\]/resources: [namespaces, nodes]/' 'no cluster-wide list and watch of pods'
mutate rbac-secrets rbac.yaml 's/resources: \[namespaces, nodes, pods\]/resources: [namespaces, nodes, pods, secrets]/' 'secrets'
mutate rbac-write rbac.yaml '0,/verbs: \[get, list, watch\]/s//verbs: [get, list, watch, patch]/' 'grants patch on namespaces (group ""), which tally never sends'
mutate rbac-mixed rbac.yaml '0,/verbs: \[patch\]/s//verbs: [patch, get]/' 'ClusterRole tally-gating: mixes the grants of gating and reader'
mutate rbac-events rbac.yaml '/resources: \[events\]/{n;s/verbs: \[create\]/verbs: [create, delete]/}' 'grants delete on events (group ""), which tally never sends'
mutate rbac-gating rbac.yaml 's/resources: \[pods, pods\/status\]/resources: [pods]/' '--controllers gating: ServiceAccount tally may not patch pods/status'
mutate rbac-crd-names rbac.yaml '/resourceNames: \[queues.scheduling.run.ai\]/d' 'get on customresourcedefinitions: limit it to resourceNames [queues.scheduling.run.ai]'
mutate rbac-lease-verb rbac.yaml 's/verbs: \[get, update\]/verbs: [get]/' '--leader-elect: ServiceAccount tally may not update lease tally-system/tally'
mutate rbac-reservations rbac.yaml 's/resourceNames: \[tally-reservations\]/resourceNames: [tally-reservationz]/' 'may not get configmap tally-system/tally-reservations'
mutate rbac-lease-cluster rbac.yaml 's/^kind: Role$/kind: ClusterRole/' "leases belong in a Role in tally's namespace, not a ClusterRole"
mutate rbac-unused webhook.yaml 's/--controllers=gating,status,runs/--controllers=gating,status/' 'grants what --controllers runs needs, which the Deployment does not run'
mutate claims-ignore webhook.yaml '/name: runs-status.tally/,/failurePolicy/s/failurePolicy: Fail/failurePolicy: Ignore/' 'runs-status.tally.kruntimes.io: failurePolicy must be Fail'
mutate gate-fail webhook.yaml '/name: pods-gate.tally/,/failurePolicy/s/failurePolicy: Ignore/failurePolicy: Fail/' 'pods-gate.tally.kai.scheduler: failurePolicy must be Ignore'
mutate gate-reinvoke webhook.yaml 's/reinvocationPolicy: Never/reinvocationPolicy: IfNeeded/' 'reinvocationPolicy must be Never'
mutate gate-namespaces webhook.yaml 's/values: \[tally-system, kube-system\]/values: [kube-system]/' 'namespaceSelector must exclude namespace tally-system'
mutate gate-controller webhook.yaml 's/--controllers=gating,status,runs/--controllers=status,runs/' '/mutate/pods needs --controllers gating'
mutate gate-validating webhook.yaml 's/^kind: MutatingWebhookConfiguration$/kind: ValidatingWebhookConfiguration/' '/mutate/pods belongs in a MutatingWebhookConfiguration'
mutate no-election webhook.yaml 's/        - --leader-elect$/        - --leader-elect=false/' 'controllers on several replicas need --leader-elect'
mutate netpol-port webhook.yaml 's/{port: 8443, protocol: TCP}/{port: 9443, protocol: TCP}/' 'no ingress rule opens the listen port 8443'
mutate kustomize-list kustomization.yaml '/^- rbac.yaml$/d' 'resources: rbac.yaml is not listed'
mutate dashboard-metric grafana-dashboard.json 's/tally_gated_pods{/tally_gated_podz{/' 'tally_gated_podz is not a metric tally exports'
mutate dashboard-missing grafana-dashboard.json 's/tally_runtime_utilization)/tally_runs_pending)/' 'no panel shows tally_runtime_utilization'
mutate dashboard-datasource grafana-dashboard.json '0,/"uid": "${datasource}"/s//"uid": "prometheus"/' 'datasource must be the ${datasource} variable'
mutate no-token webhook.yaml 's/      serviceAccountName: tally$/      serviceAccountName: tally\n      automountServiceAccountToken: false/' '--in-cluster needs the service account token mounted'
mutate two-sources webhook.yaml 's|        - --in-cluster|        - --in-cluster\n        - --state=/state|' 'want exactly one of --state PATH... and --in-cluster'
mkdir -p "$tmp/mut-out"
node "$MDIR/batch.mjs" "$tmp/mut-out" "${mut_dirs[@]}" || bad "batch.mjs failed"
for i in "${!mut_names[@]}"; do
  name=${mut_names[$i]} want=${mut_wants[$i]}
  [ "$(cat "$tmp/mut-out/$i.rc" 2>/dev/null)" = 1 ] && ok || bad "mutation $name: validate.mjs did not fail: rc $(cat "$tmp/mut-out/$i.rc" 2>/dev/null)"
  grep -qF -- "$want" "$tmp/mut-out/$i.out" && ok ||
    { bad "mutation $name: no '$want' in the output"; grep -A3 FAIL "$tmp/mut-out/$i.out"; }
done

fi

# 3. tally validate: the top-level manifests hold no object tally rejects (the kinds it does not
# read are skipped with a note), and the examples are valid.
out=$("$TALLY" validate deploy/*.yaml 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && ok || bad "tally validate deploy/*.yaml: exit $rc"
[ -z "$out" ] && ok || bad "tally validate deploy/*.yaml printed: $out"
if compgen -G "deploy/examples/*.yaml" >/dev/null; then
  out=$("$TALLY" validate deploy/examples 2>/dev/null); rc=$?
  [ "$rc" -eq 0 ] && ok || bad "tally validate deploy/examples: exit $rc"
  [ -z "$out" ] && ok || bad "tally validate deploy/examples printed: $out"
  # and a broken copy is caught by tally as well
  sed 's/unit: percent/unit: "10%"/' deploy/examples/accountedresources.yaml > "$tmp/bad-ar.yaml"
  "$TALLY" validate "$tmp/bad-ar.yaml" 2>/dev/null | grep -q 'invalid unit' && ok || bad "tally validate accepted a bad unit"
fi

# 4. tally serve with the Deployment's args and exactly its RBAC, in a Pod as it would be: /tls/* is
# moved under $tmp; the API server is the test server (tests/kube/apiserver.py) holding the examples
# and examples/cluster's kruntimes objects; the service account is laid out as the kubelet mounts it
# (token, ca.crt, namespace; TALLY_SERVICEACCOUNT_DIR moves /var/run/secrets/kubernetes.io/
# serviceaccount), with KUBERNETES_SERVICE_HOST/PORT set. Its token authenticates as
# system:serviceaccount:tally-system:tally, allowed what deploy/'s bindings grant (validate.mjs
# --rbac-rules) and nothing else. The webhook configurations as kustomize renders them are applied
# (a caBundle in place of cert-manager's), and the test server sends the Service
# tally-system/tally-webhook to tally's port. Every controller must then do its job with those
# grants: no request of tally's is refused, a pod created by kubectl is gated and admitted or held
# (pods, pods/status, events), a Run is bound (runs/status) and its claim decided through the
# claims-only webhook, the Lease is held (the Role).
mapfile -t args < <(node "$MDIR/validate.mjs" --serve-args deploy)
mkdir -p "$tmp/tls" "$tmp/sa"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=tally-manifests \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls/tls.key" -out "$tmp/tls/tls.crt" 2>/dev/null
# tally's port, known before the API server starts (it maps the Service to it at start)
wport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
NOW=$(date -u +%Y-%m-%dT%H:%M:%SZ)
jq --arg now "$NOW" '.items |= map(select(.apiVersion == "kruntimes.io/v1alpha1" or .kind == "Namespace"
    or (.kind == "Pod" and .metadata.labels.runtime == "python"))
  | if .kind == "Pod" then .status.conditions |= map(if .type == "kruntimes.io/RuntimedReady"
      then .lastProbeTime = $now else . end) else . end)' tests/live/example-cluster.json >"$tmp/seed.json"
python3 tests/kube/apiserver.py --dir "$tmp/api" --seed "$tmp/seed.json" \
  --service-url "tally-system/tally-webhook=https://127.0.0.1:$wport" >"$tmp/api.log" 2>&1 &
api=$!
for _ in $(seq 100); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
url=$(jq -r .url "$tmp/api/ready.json")
admin=$(jq -r .token "$tmp/api/ready.json")
cp "$(jq -r .ca "$tmp/api/ready.json")" "$tmp/sa/ca.crt"
echo tally-system >"$tmp/sa/namespace"
K() { "$KUBECTL" --kubeconfig "$tmp/api/kubeconfig" "$@"; }
control() {
  if [ $# -gt 1 ]; then curl -sf --max-time 10 --cacert "$tmp/sa/ca.crt" -H 'Content-Type: application/json' -d "$2" "$url/_test/$1"
  else curl -sf --max-time 10 --cacert "$tmp/sa/ca.crt" "$url/_test/$1"; fi
}
# the service account's token, and what it may do
satoken=sa-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
echo "$satoken" >"$tmp/sa/token"
sauser=system:serviceaccount:tally-system:tally
control tokens "{\"valid\":[\"$admin\",\"$satoken\"],\"users\":{\"$satoken\":{\"user\":\"$sauser\",\
\"groups\":[\"system:serviceaccounts\",\"system:serviceaccounts:tally-system\",\"system:authenticated\"]}}}" >/dev/null &&
  control rbac "$(node "$MDIR/validate.mjs" --rbac-rules deploy)" >/dev/null && ok ||
  bad "the test server refused the service account's token or rules"
# The examples go in through kubectl, as a user would apply them; tally's namespace holds its Lease.
K apply -f deploy/examples/ >/dev/null 2>"$tmp/apply.err" && ok ||
  { bad "kubectl apply -f deploy/examples/ on the test API server"; cat "$tmp/apply.err"; }
K create namespace tally-system >/dev/null && ok || bad "kubectl create namespace tally-system"
run=()
for a in "${args[@]}"; do
  case "$a" in
    --listen=*) a=--listen=127.0.0.1:$wport ;;
    --tls-cert=/tls/*|--tls-key=/tls/*) a=${a/=\/tls\//=$tmp/tls/} ;;
  esac
  run+=("$a")
done
[ "${args[0]:-}" = serve ] && ok || bad "Deployment args do not start with serve"
TALLY_SERVICEACCOUNT_DIR="$tmp/sa" KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="${url##*:}" \
  "$TALLY" "${run[@]}" > "$tmp/serve.log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$tmp/serve.log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
if [ -n "$port" ]; then
  ok
  code=
  for _ in $(seq 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$tmp/tls/tls.crt" "https://127.0.0.1:$port/readyz")
    [ "$code" = 200 ] && break
    sleep 0.1
  done
  [ "$code" = 200 ] && ok || bad "/readyz with the Deployment's args: $code"
  metrics() { curl -s --max-time 5 --cacert "$tmp/tls/tls.crt" "https://127.0.0.1:$port/metrics"; }
  n=$(cat deploy/examples/*.yaml | grep -c '^kind: AccountedResource')
  metrics > "$tmp/metrics"
  grep -q "^tally_objects{kind=\"AccountedResource\"} $n\$" "$tmp/metrics" && [ "$n" -gt 0 ] && ok ||
    bad "the live state should hold the $n example AccountedResources: $(grep '^tally_objects' "$tmp/metrics" | tr '\n' ' ')"
  for _ in $(seq 50); do metrics | grep -q '^tally_leader 1$' && break; sleep 0.1; done
  metrics | grep -q '^tally_leader 1$' && ok || bad "tally did not take the Lease with the Role's grants: $(grep -i lease "$tmp/serve.log" | tail -3)"
  K get lease -n tally-system tally -o json 2>/dev/null | jq -e '.spec.holderIdentity | length > 0' >/dev/null && ok ||
    bad "no Lease tally-system/tally"
  # the webhook configurations as kustomize renders them, with a caBundle in place of cert-manager's
  node "$MDIR/validate.mjs" --webhooks "$tmp/rendered.yaml" "$tmp/tls/tls.crt" > "$tmp/webhooks.json" &&
    K apply -f "$tmp/webhooks.json" >/dev/null 2>"$tmp/apply.err" && ok ||
    { bad "the webhook configurations were refused"; cat "$tmp/apply.err"; }
  # gating: a queue with room for one of two pods; the first is gated at create and admitted, the
  # second held; a pod in tally's own namespace is never sent to the webhook
  gated_queue='{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"gated",
    "labels":{"kai.scheduler/queue-admission-gating":"true"}},"spec":{"resources":{
    "cpu":{"quota":-1,"limit":1000,"overQuotaWeight":1},"memory":{"quota":-1,"limit":-1,"overQuotaWeight":1},
    "gpu":{"quota":-1,"limit":-1,"overQuotaWeight":1}}}}'
  echo "$gated_queue" | K apply -f - >/dev/null 2>"$tmp/apply.err" && ok ||
    { bad "kubectl apply of a queue (through /validate/queues)"; cat "$tmp/apply.err"; }
  pod() {
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"%s","labels":{"kai.scheduler/queue":"gated"}},
      "spec":{"schedulerName":"kai-scheduler","containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"600m"}}}]}}' "$1" "$2"
  }
  for _ in $(seq 50); do metrics | grep -q '^tally_objects{kind="Queue"} 2$' && break; sleep 0.1; done
  pod fits default | K apply -f - >/dev/null && sleep 0.3 && pod over default | K apply -f - >/dev/null &&
    pod own tally-system | K apply -f - >/dev/null && ok || bad "kubectl apply of the pods"
  podj() { K get pod -n "$1" "$2" -o json; }
  for _ in $(seq 50); do podj default fits | jq -e '.metadata.annotations["kai.scheduler/queue-admitted-timestamp"]' >/dev/null && break; sleep 0.1; done
  podj default fits | jq -e '(.spec.schedulingGates // []) == [] and .metadata.annotations["kai.scheduler/queue-admitted-timestamp"] and
    any(.status.conditions[]?; .type == "QueueAdmitted" and .status == "True")' >/dev/null && ok ||
    bad "pod fits: not gated at create and admitted by tally: $(podj default fits | jq -c '[.spec.schedulingGates, .status.conditions]')"
  for _ in $(seq 50); do podj default over | jq -e 'any(.status.conditions[]?; .type == "QueueAdmitted" and .status == "False")' >/dev/null && break; sleep 0.1; done
  podj default over | jq -e '(.spec.schedulingGates | map(.name)) == ["kai.scheduler/queue-admission"] and
    any(.status.conditions[]?; .type == "QueueAdmitted" and .status == "False")' >/dev/null && ok ||
    bad "pod over: not held at the gate: $(podj default over | jq -c '[.spec.schedulingGates, .status.conditions]')"
  evs() { K get events -o json | jq --arg r "$1" --arg p "$2" '[.items[] | select(.reason == $r and .involvedObject.name == $p)] | length'; }
  for _ in $(seq 30); do [ "$(evs QueueAdmissionHeld over)" -ge 1 ] && break; sleep 0.1; done
  [ "$(evs Admitted fits)" = 1 ] && [ "$(evs QueueAdmissionHeld over)" = 1 ] && ok ||
    bad "events: Admitted fits $(evs Admitted fits), QueueAdmissionHeld over $(evs QueueAdmissionHeld over)"
  podj tally-system own | jq -e '(.spec.schedulingGates // []) == []' >/dev/null && ok ||
    bad "a pod in tally-system was sent to /mutate/pods (the namespaceSelector must exclude it)"
  # runs: a seeded Pending Run is bound; its claim goes through the claims-only webhook, and a status
  # update that is not a claim never reaches tally
  field() { K get runs.kruntimes.io "$1" -o json | jq -r "$2"; }
  for _ in $(seq 60); do [ "$(field train-resnet50-b .status.phase)" = Scheduled ] && break; sleep 0.1; done
  [ "$(field train-resnet50-b .status.phase)" = Scheduled ] && ok || bad "train-resnet50-b was not bound: $(field train-resnet50-b .status.phase)"
  K patch runs.kruntimes.io train-resnet50-b --subresource status --type merge \
    -p "{\"status\":{\"phase\":\"Running\",\"startTime\":\"$NOW\"}}" >/dev/null 2>"$tmp/apply.err" && ok ||
    { bad "the claim of train-resnet50-b was refused"; cat "$tmp/apply.err"; }
  log_has "$tmp/serve.log" 'event=decision endpoint=runs-status .*verdict=allowed' && ok || bad "the claim did not reach /validate/runs-status"
  K patch runs.kruntimes.io train-resnet50-b --subresource status --type merge -p '{"status":{"message":"hello"}}' >/dev/null 2>&1 && ok ||
    bad "a status update that is not a claim was refused"
  [ "$(grep -c 'event=decision endpoint=runs-status' "$tmp/serve.log")" = 1 ] && ok ||
    bad "an update that is not a claim reached /validate/runs-status (the matchCondition sends claims only)"
  # RBAC: tally wrote, and nothing it sent was refused (the status controller's CRD read included)
  control requests > "$tmp/requests.json"
  jq -r --arg u "$sauser" '.requests[] | select(.user == $u and .status == 403) | "\(.method) \(.path)"' "$tmp/requests.json" > "$tmp/forbidden"
  [ ! -s "$tmp/forbidden" ] && ok || bad "requests of tally's refused by RBAC: $(head -5 "$tmp/forbidden" | tr '\n' ' ')"
  jq -e --arg u "$sauser" '[.requests[] | select(.user == $u and .method == "GET" and (.path | endswith("customresourcedefinitions/queues.scheduling.run.ai")))] | length > 0' \
    "$tmp/requests.json" >/dev/null && ok || bad "the status controller never read the Queue CRD"
  for verb in PATCH POST PUT; do
    jq -e --arg u "$sauser" --arg m "$verb" '[.requests[] | select(.user == $u and .method == $m and .status < 300)] | length > 0' "$tmp/requests.json" >/dev/null &&
      ok || bad "tally sent no successful $verb as its service account"
  done
  ! grep -qi 'forbidden' "$tmp/serve.log" && ok || bad "tally logged a refusal: $(grep -i -m3 forbidden "$tmp/serve.log")"
  kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
  [ "$rc" -eq 0 ] && ok || bad "tally serve exit $rc after SIGTERM"
else
  bad "tally serve did not start with the Deployment's args: ${run[*]}"; cat "$tmp/serve.log"
fi
kill "$api" 2>/dev/null

echo "manifests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
