#!/usr/bin/env bash
# Checks the manifests in deploy/ (the serve issue, docs/serve.md "Manifests and how they are
# checked"), run by ctest from the repository root:
#   bash tests/cli/manifests.sh path/to/tally
# 1. tests/manifests/validate.mjs: every object against the upstream Kubernetes OpenAPI schemas
#    (the dev-only npm package kubernetes-models, pinned in tests/manifests/package-lock.json), the
#    webhook rules, the wiring between the objects, the CRD and the JSON patches, the examples;
# 2. validate.mjs again on broken copies of deploy/: each must fail (the checker checks);
# 3. `tally validate` on deploy/*.yaml and on the example objects in deploy/examples/;
# 4. `tally serve` started with the Deployment's own args (--in-cluster against the test API server,
#    with the service account laid out as the kubelet mounts it), answering /readyz.
# node_modules is installed once with `npm ci` and reused while package-lock.json is unchanged.
set -u
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

# 2. broken copies: each edit must make validate.mjs fail, naming what is wrong.
# mutate NAME FILE SED-EXPR EXPECTED-TEXT
mutate() {
  local name=$1 file=$2 expr=$3 want=$4 d=$tmp/mut-$1
  rm -rf "$d"; cp -r deploy "$d"
  sed -i -e "$expr" "$d/$file"
  if cmp -s "deploy/$file" "$d/$file"; then bad "mutation $name did not change $file"; return; fi
  out=$(node "$MDIR/validate.mjs" "$d" 2>&1); rc=$?
  [ "$rc" -ne 0 ] && ok || bad "mutation $name: validate.mjs passed"
  echo "$out" | grep -qF -- "$want" && ok || { bad "mutation $name: no '$want' in the output"; echo "$out" | grep -A3 FAIL; }
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
mutate patch-key patches/queue-accountedresources.yaml 's/required: \[resourceRef\]/required: []/' 'list-map key resourceRef must be required'
mutate rbac-pods webhook.yaml 's/resources: \[namespaces, nodes, pods\]/resources: [namespaces, nodes]/' 'no cluster-wide list and watch of pods'
mutate rbac-secrets webhook.yaml 's/resources: \[namespaces, nodes, pods\]/resources: [namespaces, nodes, pods, secrets]/' 'secrets'
mutate rbac-write webhook.yaml '0,/verbs: \[get, list, watch\]/s//verbs: [get, list, watch, patch]/' 'verb patch; tally only reads'
mutate no-token webhook.yaml 's/      serviceAccountName: tally$/      serviceAccountName: tally\n      automountServiceAccountToken: false/' '--in-cluster needs the service account token mounted'
mutate two-sources webhook.yaml 's|        - --in-cluster|        - --in-cluster\n        - --state=/state|' 'want exactly one of --state PATH... and --in-cluster'

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

# 4. tally serve with the Deployment's args, in a Pod as it would be: /tls/* is moved under $tmp,
# the API server is the test server (tests/kube/apiserver.py) holding the examples, and the service
# account is laid out as the kubelet mounts it (token, ca.crt, namespace; TALLY_SERVICEACCOUNT_DIR
# moves /var/run/secrets/kubernetes.io/serviceaccount), with KUBERNETES_SERVICE_HOST/PORT set.
mapfile -t args < <(node "$MDIR/validate.mjs" --serve-args deploy)
mkdir -p "$tmp/tls" "$tmp/sa"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=tally-manifests \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls/tls.key" -out "$tmp/tls/tls.crt" 2>/dev/null
python3 tests/kube/apiserver.py --dir "$tmp/api" >"$tmp/api.log" 2>&1 &
api=$!
for _ in $(seq 100); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
url=$(jq -r .url "$tmp/api/ready.json")
jq -r .token "$tmp/api/ready.json" >"$tmp/sa/token"
cp "$(jq -r .ca "$tmp/api/ready.json")" "$tmp/sa/ca.crt"
echo tally-system >"$tmp/sa/namespace"
# The examples go in through kubectl, as a user would apply them.
kubectl --kubeconfig "$tmp/api/kubeconfig" apply -f deploy/examples/ >/dev/null 2>"$tmp/apply.err" && ok ||
  { bad "kubectl apply -f deploy/examples/ on the test API server"; cat "$tmp/apply.err"; }
run=()
for a in "${args[@]}"; do
  case "$a" in
    --listen=*) a=--listen=127.0.0.1:0 ;;
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
  n=$(cat deploy/examples/*.yaml | grep -c '^kind: AccountedResource')
  curl -s --max-time 5 --cacert "$tmp/tls/tls.crt" "https://127.0.0.1:$port/metrics" > "$tmp/metrics"
  grep -q "^tally_objects{kind=\"AccountedResource\"} $n\$" "$tmp/metrics" && [ "$n" -gt 0 ] && ok ||
    bad "the live state should hold the $n example AccountedResources: $(grep '^tally_objects' "$tmp/metrics" | tr '\n' ' ')"
  kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
  [ "$rc" -eq 0 ] && ok || bad "tally serve exit $rc after SIGTERM"
else
  bad "tally serve did not start with the Deployment's args: ${run[*]}"; cat "$tmp/serve.log"
fi
kill "$api" 2>/dev/null

echo "manifests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
