#!/usr/bin/env bash
# `tally serve --client-ca FILE` (contract section 9, docs/serve.md "Client certificates"), run by
# ctest from the repository root:
#   bash tests/cli/clientca.sh path/to/tally
# Certificates made with openssl in a temp dir: a CA, another CA, client certificates signed by
# each, one expired, one for server authentication only. curl is the client:
#   - startup: a missing file, a file that is not PEM, a PEM file with no certificate each exit 1
#     naming the file; --client-ca without --tls-cert/--tls-key is refused (exit 2);
#   - every admission endpoint answers 403 without a certificate, with one from another CA, an
#     expired one and a server-only one, and the AdmissionReview of `tally admit` with the right one
#     (also twice on one keep-alive connection); /healthz, /readyz and /metrics answer 200 without;
#     tally_client_cert_rejections_total counts the refusals by reason;
#   - a CA file with two CAs accepts clients of both; the CA file is reloaded when it changes (a
#     bad new file is refused and the old CAs stay);
#   - end to end: the test API server (tests/kube/apiserver.py) calls tally through a
#     ValidatingWebhookConfiguration with its webhook client certificate (CN=kube-apiserver,
#     signed by its CA): a tally trusting that CA decides, a tally trusting another CA refuses
#     with 403 and failurePolicy Fail refuses the write.
# Every wait is bounded; every process is killed on exit.
set -u
source tests/cli/lib/logwait.sh
TALLY=$(realpath "${1:?usage: clientca.sh path/to/tally}")
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
for tool in curl openssl jq python3; do
  command -v "$tool" >/dev/null || { echo "clientca.sh: $tool is missing (scripts/deps.sh test)"; exit 1; }
done
# kubectl on PATH may be a dispatcher that asks the server for /version first: use the versioned
# binary next to it when there is one (as tests/cli/kube_apiserver.sh does).
KUBECTL=${KUBECTL:-kubectl}
if [ "$KUBECTL" = kubectl ] && command -v kubectl >/dev/null; then
  kdir=$(dirname "$(readlink -f "$(command -v kubectl)")")
  [ -x "$kdir/kubectl.1.33" ] && KUBECTL=$kdir/kubectl.1.33
fi

# ---- certificates -------------------------------------------------------------------------------
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
cd "$tmp" || exit 1
openssl req -x509 "${ec[@]}" -days 2 -subj /CN=tally-clientca -addext subjectAltName=IP:127.0.0.1 \
  -keyout tls.key -out tls.crt 2>/dev/null
for c in ca other; do
  openssl req -x509 "${ec[@]}" -days 30 -subj "/CN=$c-ca" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign -keyout $c.key -out $c.crt 2>/dev/null
done
# client NAME CA EKU [openssl ca dates...]: NAME.crt/.key signed by CA.
mkdir -p db
: > db/index.txt
echo 1000 > db/serial
client() {
  local name=$1 ca=$2 eku=$3
  shift 3
  cat > "$name.cnf" <<EOF
[ca]
default_ca = d
[d]
database = $tmp/db/index.txt
serial = $tmp/db/serial
new_certs_dir = $tmp/db
default_md = sha256
default_days = 2
policy = p
unique_subject = no
x509_extensions = e
[p]
commonName = supplied
[e]
extendedKeyUsage = $eku
keyUsage = critical,digitalSignature
EOF
  openssl req "${ec[@]}" -subj "/CN=$name" -keyout "$name.key" -out "$name.csr" 2>/dev/null
  openssl ca -batch -notext -config "$name.cnf" -cert "$ca.crt" -keyfile "$ca.key" -in "$name.csr" \
    -out "$name.crt" "$@" 2>/dev/null
}
client good ca clientAuth
client stranger other clientAuth
client expired ca clientAuth -startdate 20200101000000Z -enddate 20200102000000Z
client serveronly ca serverAuth
for f in good stranger expired serveronly; do
  [ -s "$f.crt" ] || { echo "clientca.sh: openssl could not make $f.crt"; exit 1; }
done
cat other.crt ca.crt > bundle.crt
cd - >/dev/null || exit 1

# ---- startup errors -----------------------------------------------------------------------------
# refused EXPECTED-EXIT TEXT ARGS...: tally serve ... must exit EXPECTED-EXIT and print TEXT.
refused() {
  local want=$1 text=$2
  shift 2
  out=$(timeout 10 "$TALLY" serve --listen 127.0.0.1:0 --state examples/cluster "$@" 2>&1); rc=$?
  [ "$rc" -eq "$want" ] && ok || bad "serve $*: exit $rc, want $want: $out"
  echo "$out" | grep -qF -- "$text" && ok || bad "serve $*: no '$text' in: $out"
}
TLS=(--tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key")
echo 'not a certificate' > "$tmp/garbage.crt"
refused 1 "--client-ca $tmp/missing.crt: cannot read it: No such file or directory" "${TLS[@]}" --client-ca "$tmp/missing.crt"
refused 1 "--client-ca $tmp/garbage.crt: no PEM certificate in it" "${TLS[@]}" --client-ca "$tmp/garbage.crt"
refused 1 "--client-ca $tmp/ca.key: no PEM certificate in it" "${TLS[@]}" --client-ca "$tmp/ca.key"
refused 1 "--client-ca $tmp: cannot read it" "${TLS[@]}" --client-ca "$tmp"
refused 2 "--client-ca needs TLS (--tls-cert and --tls-key)" --client-ca "$tmp/ca.crt"
refused 2 "--client-ca needs TLS (--tls-cert and --tls-key)" --tls-cert "$tmp/tls.crt" --client-ca "$tmp/ca.crt"
refused 2 "--client-ca needs a value" "${TLS[@]}" --client-ca

# ---- one server, every endpoint -----------------------------------------------------------------
# start NAME ARGS...: tally serve logging to $tmp/NAME.log; sets PORT and PID; waits for /readyz.
start() {
  local name=$1
  shift
  "$TALLY" serve --listen 127.0.0.1:0 "${TLS[@]}" "$@" > "$tmp/$name.log" 2>&1 &
  PID=$!
  pids+=("$PID")
  PORT=
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$tmp/$name.log" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$PORT" ] || { bad "$name: tally serve did not start: $(cat "$tmp/$name.log")"; return 1; }
  for _ in $(seq 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/readyz")" = 200 ] && return 0
    sleep 0.05
  done
  bad "$name: /readyz never 200: $(tail -5 "$tmp/$name.log")"
  return 1
}
# post PATH BODY-FILE [CLIENT]: sets CODE and BODY.
post() {
  local auth=()
  [ -n "${3:-}" ] && auth=(--cert "$tmp/$3.crt" --key "$tmp/$3.key")
  BODY=$(curl -s --max-time 5 --cacert "$tmp/tls.crt" "${auth[@]}" -H 'Content-Type: application/json' \
    --data-binary "@$2" -w '\n%{http_code}' "https://127.0.0.1:$PORT$1")
  CODE=${BODY##*$'\n'}
  BODY=${BODY%$'\n'*}
  BODY=${BODY%$'\n'}
}
metric() { curl -s --max-time 5 --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/metrics" | awk -v s="$1" '$1 == s {print $2}'; }

review=tests/resize/ancestor-queue-missing/review.json
state=tests/resize/ancestor-queue-missing/state.yaml
start main --state "$state" --client-ca "$tmp/ca.crt"
grep -q "event=listening .*client_ca=$tmp/ca.crt" "$tmp/main.log" && ok || bad "the listening line does not name the client CA"
# Every admission endpoint serve has (src/server.c, metrics.h: the first TLY_EP_ADMISSION).
endpoints=(/validate/pods-resize /validate/queues /validate/accountedresources /validate/runs
           /validate/runs-status /mutate/pods)
for ep in "${endpoints[@]}"; do
  post "$ep" "$review"
  [ "$CODE" = 403 ] && ok || bad "$ep without a client certificate: $CODE $BODY"
  [ "$BODY" = "forbidden: a client certificate is required (--client-ca) and none was presented" ] && ok ||
    bad "$ep without a client certificate: body $BODY"
done
# wrong CLIENT TEXT: every endpoint refuses CLIENT's certificate with TEXT in the reason.
wrong() {
  for ep in "${endpoints[@]}"; do
    post "$ep" "$review" "$1"
    [ "$CODE" = 403 ] && ok || bad "$ep with $1: $CODE $BODY"
  done
  [[ "$BODY" == "forbidden: client certificate CN=$1 rejected: The certificate is NOT trusted. "*"$2"* ]] && ok ||
    bad "$1: body $BODY"
}
wrong stranger "The certificate issuer is unknown"
wrong expired "expired"
wrong serveronly "does not match the intended purpose"
want=$("$TALLY" admit "$state" < "$review" 2>/dev/null | jq -c .)
for ep in /validate/pods-resize /validate/queues /validate/accountedresources /validate/runs; do
  post "$ep" "$review" good
  [ "$CODE" = 200 ] && ok || bad "$ep with the right certificate: $CODE $BODY"
  [ "$(echo "$BODY" | jq -c .)" = "$want" ] && ok || bad "$ep with the right certificate: $BODY, want $want"
done
# the live mode's endpoints pass the certificate check and then say they are not enabled here
post /mutate/pods "$review" good
[ "$CODE" = 404 ] && ok || bad "/mutate/pods with the right certificate on a file state: $CODE $BODY"
# two requests on one keep-alive connection (the verified chain is remembered for the connection)
out=$(curl -s --max-time 5 --cacert "$tmp/tls.crt" --cert "$tmp/good.crt" --key "$tmp/good.key" \
  --data-binary "@$review" -w '%{http_code} %{num_connects}\n' -o /dev/null -o /dev/null \
  "https://127.0.0.1:$PORT/validate/runs" "https://127.0.0.1:$PORT/validate/queues")
[ "$out" = $'200 1\n200 0' ] && ok || bad "keep-alive with a client certificate: $out"
for ep in /healthz /readyz /metrics; do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT$ep")
  [ "$code" = 200 ] && ok || bad "$ep without a client certificate: $code"
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$tmp/tls.crt" \
    --cert "$tmp/stranger.crt" --key "$tmp/stranger.key" "https://127.0.0.1:$PORT$ep")
  [ "$code" = 200 ] && ok || bad "$ep with a foreign client certificate: $code"
done
[ "$(metric 'tally_client_cert_rejections_total{reason="missing"}')" = 6 ] && ok ||
  bad "rejections missing: $(metric 'tally_client_cert_rejections_total{reason="missing"}')"
[ "$(metric 'tally_client_cert_rejections_total{reason="invalid"}')" = 18 ] && ok ||
  bad "rejections invalid: $(metric 'tally_client_cert_rejections_total{reason="invalid"}')"
[ "$(metric 'tally_admission_requests_total{endpoint="runs",outcome="allowed"}')" = 2 ] && ok ||
  bad "a refused request counted as a decision: $(metric 'tally_admission_requests_total{endpoint="runs",outcome="allowed"}')"
log_has "$tmp/main.log" 'event=request-rejected endpoint=queues status=403 msg="client certificate CN=stranger rejected' && ok ||
  bad "no request-rejected log line for the stranger"
# a body over the limit without a certificate is refused for the certificate, not read into memory
head -c $((7 << 20)) /dev/zero | tr '\0' x > "$tmp/big"
post /validate/queues "$tmp/big"
[ "$CODE" = 403 ] && ok || bad "a large body without a certificate: $CODE"
kill -TERM "$PID"; wait "$PID" 2>/dev/null
[ $? -eq 0 ] && ok || bad "serve with --client-ca did not exit 0 on SIGTERM"

# ---- a CA file with two CAs; reload ---------------------------------------------------------------
cp "$tmp/bundle.crt" "$tmp/live-ca.crt"
start reload --state "$state" --client-ca "$tmp/live-ca.crt"
post /validate/runs "$review" good; [ "$CODE" = 200 ] && ok || bad "bundle: ca's client: $CODE $BODY"
post /validate/runs "$review" stranger; [ "$CODE" = 200 ] && ok || bad "bundle: other's client: $CODE $BODY"
# the file replaced by rename (as a Secret volume's symlink swap or cert-manager): only ca now
cp "$tmp/ca.crt" "$tmp/live-ca.new" && mv "$tmp/live-ca.new" "$tmp/live-ca.crt"
for _ in $(seq 50); do
  post /validate/runs "$review" stranger
  [ "$CODE" = 403 ] && break
  sleep 0.1
done
[ "$CODE" = 403 ] && ok || bad "after the CA file changed, other's client still: $CODE"
post /validate/runs "$review" good; [ "$CODE" = 200 ] && ok || bad "after the reload, ca's client: $CODE $BODY"
log_has "$tmp/reload.log" "event=tls-reload msg=\"client CA $tmp/live-ca.crt reloaded\"" && ok || bad "no tls-reload line for the CA"
[ "$(metric tally_tls_reloads_total)" = 1 ] && ok || bad "tally_tls_reloads_total: $(metric tally_tls_reloads_total)"
# a broken new file: refused, logged, counted; the CAs loaded before stay
echo garbage > "$tmp/live-ca.new" && mv "$tmp/live-ca.new" "$tmp/live-ca.crt"
for _ in $(seq 50); do grep -q 'event=tls-reload-failed' "$tmp/reload.log" && break; sleep 0.1; done
grep -q "event=tls-reload-failed msg=\"--client-ca $tmp/live-ca.crt: no PEM certificate in it" "$tmp/reload.log" && ok ||
  bad "no tls-reload-failed line for a broken CA file: $(grep tls-reload "$tmp/reload.log")"
post /validate/runs "$review" good; [ "$CODE" = 200 ] && ok || bad "after a refused reload, ca's client: $CODE $BODY"
post /validate/runs "$review" stranger; [ "$CODE" = 403 ] && ok || bad "after a refused reload, other's client: $CODE"
[ "$(metric tally_tls_reload_failures_total)" = 1 ] && ok || bad "tally_tls_reload_failures_total: $(metric tally_tls_reload_failures_total)"
kill -TERM "$PID"; wait "$PID" 2>/dev/null
[ $? -eq 0 ] && ok || bad "serve after CA reloads did not exit 0 on SIGTERM: $(grep -m3 Sanitizer "$tmp/reload.log")"

# ---- end to end: the test API server calls the webhook with its client certificate ----------------
python3 tests/kube/apiserver.py --dir "$tmp/api" > "$tmp/api.log" 2>&1 &
API_PID=$!
pids+=("$API_PID")
for _ in $(seq 100); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
if [ -s "$tmp/api/ready.json" ]; then
  KC=$tmp/api/kubeconfig
  k() { "$KUBECTL" --kubeconfig "$KC" "$@"; }
  CA=$(base64 -w0 "$tmp/tls.crt")
  # webhook NAME PORT: one ValidatingWebhookConfiguration for Queue CREATE/UPDATE, failurePolicy Fail.
  webhook() {
    cat <<EOF | k apply -f - >/dev/null
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: $1
webhooks:
- name: queues.tally.kai.scheduler
  clientConfig:
    url: https://127.0.0.1:$2/validate/queues
    caBundle: $CA
  rules: [{operations: [CREATE, UPDATE], apiGroups: [scheduling.run.ai], apiVersions: [v2], resources: [queues], scope: Cluster}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
EOF
  }
  queue() {
    cat <<EOF
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: $1}
spec:
  parentQueue: $2
  resources:
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
EOF
  }
  queue root "" | sed '/parentQueue/d' | k apply -f - >/dev/null 2>&1 && ok || bad "kubectl apply of the root queue"
  # The API server's CA signed its webhook client certificate (tests/kube/README.md).
  start e2e --kubeconfig "$KC" --client-ca "$tmp/api/ca.crt"
  webhook tally-clientca "$PORT" && ok || bad "the ValidatingWebhookConfiguration was refused"
  out=$(queue team root | k apply -f - 2>&1) && ok || bad "a valid queue through the webhook: $out"
  out=$(queue orphan nope | k apply -f - 2>&1) && bad "a queue with a missing parent was admitted" || ok
  echo "$out" | grep -q 'admission webhook "queues.tally.kai.scheduler" denied the request' && ok ||
    bad "the denial is not tally's: $out"
  log_has "$tmp/e2e.log" 'event=decision endpoint=queues .*kind=Queue op=CREATE verdict=allowed' && ok ||
    bad "tally decided no Queue CREATE from the API server: $(grep -c event=decision "$tmp/e2e.log")"
  ! grep -q 'status=403' "$tmp/e2e.log" && ok || bad "tally refused the API server's certificate"
  E2E_PID=$PID
  # A tally that trusts another CA refuses the API server's certificate: Fail refuses the write.
  start e2e-other --kubeconfig "$KC" --client-ca "$tmp/other.crt"
  k delete validatingwebhookconfiguration tally-clientca >/dev/null 2>&1
  webhook tally-clientca-other "$PORT"
  out=$(queue team2 root | k apply -f - 2>&1) && bad "the write went through a webhook that refused the caller" || ok
  echo "$out" | grep -qF 'forbidden: client certificate CN=kube-apiserver rejected: The certificate is NOT trusted. The certificate issuer is unknown.' && ok ||
    bad "the API server's error does not carry tally's 403: $out"
  log_has "$tmp/e2e-other.log" 'event=request-rejected endpoint=queues status=403' && ok || bad "no 403 in the second tally's log"
  kill -TERM "$PID" "$E2E_PID" "$API_PID"
  for p in "$PID" "$E2E_PID"; do
    wait "$p" 2>/dev/null && ok || bad "a live-mode serve with --client-ca did not exit 0 on SIGTERM"
  done
  wait "$API_PID" 2>/dev/null
else
  bad "the test API server did not start: $(tail -5 "$tmp/api.log")"
fi

echo "clientca: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
