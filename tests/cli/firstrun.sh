#!/usr/bin/env bash
# A new user's first ten minutes (issue 15 item 18), run by ctest from the repository root:
#   bash tests/cli/firstrun.sh path/to/tally
# What README.md and docs/serve.md tell a new user to do works as written: tally on PATH by
# `make install` (cmake --install), the shipped examples/review.json for `tally admit`, the
# documented openssl line for `tally serve`. Inputs that hold nothing say so, a missing file
# says it does not exist, the terminal tables line up with long names, the table ends with
# `tally explain` lines that work, and `tally explain --help` says what it does.
set -u
TALLY=$(realpath "${1:?usage: firstrun.sh path/to/tally}")
source tests/cli/lib/harness.sh firstrun.sh curl openssl

# --- tally on PATH: the install rule puts bin/tally under the prefix; the README says how.
cmake --install "$(dirname "$TALLY")" --prefix "$tmp/prefix" >/dev/null 2>&1 && ok || bad "cmake --install failed"
PATH="$tmp/prefix/bin:$PATH" tally --help 2>/dev/null | grep -q '^commands:' && ok || bad "installed tally does not run"
grep -q '^install: build' Makefile && grep -q 'cmake --install' Makefile && ok || bad "Makefile has no install target"
grep -q 'sudo make install' README.md && grep -q 'export PATH="$PWD/build:$PATH"' README.md && ok \
  || bad "README does not say how to put tally on PATH"

# --- examples/review.json: a review to use with `tally admit`, allowed; the README's denied variant.
out=$("$TALLY" admit examples/cluster < examples/review.json); rc=$?
[ "$rc" -eq 0 ] && [[ "$out" == *'"uid": "example-resize-eval-harness"'* ]] && [[ "$out" == *'"allowed": true'* ]] \
  && ok || bad "examples/review.json: exit $rc $out"
out=$(sed 's/"cpu": "6"/"cpu": "300"/' examples/review.json | "$TALLY" admit examples/cluster); rc=$?
[ "$rc" -eq 0 ] && [[ "$out" == *'"allowed": false'* ]] && [[ "$out" == *'over limit (200000m)'* ]] \
  && ok || bad "the denied variant: exit $rc $out"
grep -q 'tally admit examples/cluster < examples/review.json' README.md && ok || bad "README does not use examples/review.json"

# --- tally serve with the certificate docs/serve.md's openssl line makes (the README has the same line).
line=$(grep -m1 '^openssl req -x509' docs/serve.md)
[ -n "$line" ] && [ "$line" == "$(grep -m1 '^openssl req -x509' README.md)" ] && ok \
  || bad "docs/serve.md and README.md do not give the same openssl line"
(cd "$tmp" && eval "$line") >/dev/null 2>&1 && [ -s "$tmp/tls.crt" ] && [ -s "$tmp/tls.key" ] && ok \
  || bad "the documented openssl line failed: $line"
"$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" --state examples/cluster \
  2>"$tmp/serve.log" &
pids+=($!)
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
got=
for _ in $(seq 50); do
  got=$(curl -sS --max-time 5 --cacert "$tmp/tls.crt" -H 'Content-Type: application/json' \
    --data-binary @examples/review.json "https://127.0.0.1:$port/validate/pods-resize" 2>/dev/null) && break
  sleep 0.1
done
[ -n "$port" ] && [[ "$got" == *'"uid":"example-resize-eval-harness"'*'"allowed":true'* || \
  "$got" == *'"uid": "example-resize-eval-harness"'*'"allowed": true'* ]] && ok \
  || bad "serve with the documented certificate: port '$port' answer '$got' log $(cat "$tmp/serve.log")"
kill -TERM "${pids[-1]}" 2>/dev/null && wait "${pids[-1]}" 2>/dev/null

# --- nothing read: a note on stderr, exit 0 (the input was read; contract sections 3 and 4).
mkdir -p "$tmp/emptydir" "$tmp/nofiles"
: > "$tmp/empty.yaml"
: > "$tmp/nofiles/README.txt"
printf '# only a comment\n---\n' > "$tmp/comments.yaml"
note() { # CMD PATH WHY: the note for PATH, exit 0, nothing on stdout for validate
  local err rc
  "$TALLY" "$1" "$2" >"$tmp/stdout" 2>"$tmp/stderr" < /dev/null; rc=$?
  err=$(cat "$tmp/stderr")
  [ "$rc" -eq 0 ] && [ "$err" == "$2:0:0: note: -: -: no objects were read: $3" ] && ok \
    || bad "$1 $2: exit $rc, stderr '$err'"
}
for cmd in simulate validate; do
  note "$cmd" "$tmp/emptydir" "the directory holds no *.yaml, *.yml or *.json file"
  note "$cmd" "$tmp/nofiles" "the directory holds no *.yaml, *.yml or *.json file"
  note "$cmd" "$tmp/empty.yaml" "the file is empty"
  note "$cmd" "$tmp/comments.yaml" "it holds only whitespace, comments or empty documents"
done
err=$(: | "$TALLY" validate /dev/stdin 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 0 ] && [ "$err" == "/dev/stdin:0:0: note: -: -: no objects were read: the input was empty" ] && ok \
  || bad "an empty pipe: exit $rc '$err'"
# A path that did give objects, or whose objects were skipped with notes, gets no such note.
err=$("$TALLY" validate examples/cluster 2>&1 >/dev/null)
[[ "$err" != *"no objects were read"* ]] && ok || bad "examples/cluster: $err"
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n' > "$tmp/deploy.yaml"
err=$("$TALLY" validate "$tmp/deploy.yaml" 2>&1 >/dev/null)
[[ "$err" == *"is not one tally reads"* && "$err" != *"no objects were read"* ]] && ok || bad "skipped kind: $err"

# --- a missing file says plainly that it does not exist.
err=$("$TALLY" simulate "$tmp/nosuch.yaml" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 1 ] && [ "$err" == "$tmp/nosuch.yaml:0:0: error: -: -: $tmp/nosuch.yaml does not exist (no file or directory has that name)" ] \
  && ok || bad "missing file: exit $rc '$err'"

# --- terminal tables: columns sized to the content, whatever the name lengths.
long=$(printf 'x%.0s' $(seq 120))
cat > "$tmp/long.yaml" <<YAML
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: a-queue-with-a-rather-long-name-for-the-table}
spec:
  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: -1}
    gpu: {quota: -1, limit: -1}
---
apiVersion: v1
kind: Node
metadata: {name: node-with-a-long-name-0123456789}
status:
  allocatable: {cpu: "8", memory: 8Gi, pods: "10"}
  conditions: [{type: Ready, status: "True"}]
YAML
for n in "p-$long" short; do
  cat >> "$tmp/long.yaml" <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: $n, namespace: team-with-long-namespace, labels: {kai.scheduler/queue: a-queue-with-a-rather-long-name-for-the-table}}
spec:
  schedulerName: kai-scheduler
  containers: [{name: main, resources: {requests: {cpu: "1"}}}]
YAML
done
"$TALLY" simulate "$tmp/long.yaml" > "$tmp/table" 2>/dev/null
# Where each column starts must be the same on the header and on every row.
cols=$(awk '/^Pods$/ {p = 1; next} p && /^$/ {exit} p && /^  [^ ]/ {
  n = split($0, f, / +/); pos = ""; s = $0; off = 0
  for (i = 2; i <= n; i++) { k = index(s, f[i]); off += k - 1; pos = pos " " off; s = substr(s, k + length(f[i])); off += length(f[i]) }
  print pos }' "$tmp/table" | sort -u | wc -l)
[ "$cols" -eq 1 ] && ok || bad "pod table columns do not line up: $(cat "$tmp/table")"
grep -q "team-with-long-namespace/p-$long " "$tmp/table" && ok || bad "a long pod name was cut"
qcol=$(awk '/^Queues/ {getline; print index($0, " cpu ")}' "$tmp/table")
[ "$qcol" -gt 0 ] && ok || bad "queue row: $(cat "$tmp/table")"

# --- the table ends with tally explain lines for the pods and Runs that wait; each one works.
"$TALLY" simulate examples/cluster > "$tmp/demo" 2>/dev/null
hints=$(sed -n '/^Why they wait (tally explain):$/,$p' "$tmp/demo" | grep '^  tally explain ')
[ "$(printf '%s\n' "$hints" | grep -c .)" -eq 3 ] && ok || bad "explain lines: '$hints'"
[[ "$hints" == *"pod inference/embedding-batch-28c4t"* && "$hints" == *"pod team-a/ablation-lr-sweep-3-xz7pq"* && \
   "$hints" == *"run default/train-resnet50-c"* ]] && ok || bad "explain lines name the wrong objects: $hints"
while read -r _ _ args; do
  # shellcheck disable=SC2086
  out=$("$TALLY" explain $args 2>&1); rc=$?
  [ "$rc" -eq 0 ] && [ -n "$out" ] && ok || bad "tally explain $args: exit $rc"
done <<< "$hints"
tail -n 2 "$tmp/demo" | grep -q '^  tally explain' && ok || bad "the table does not end with explain lines"
# make demo ends by pointing at tally explain (its last lines, not only the HTML page). Run
# apart from any make this test runs under, whose "Leaving directory" line would come last.
env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -n demo 2>/dev/null | tail -2 | grep -q 'tally explain' && ok || bad "make demo does not end with tally explain"
# Many waiting pods: six lines and a count, not a wall.
for i in 1 2 3 4 5 6 7 8; do
  printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: big-%s, namespace: ns}\nspec:\n  schedulerName: kai-scheduler\n  containers: [{name: main, resources: {requests: {cpu: "100"}}}]\n' "$i"
done > "$tmp/many.yaml"
out=$("$TALLY" simulate "$tmp/many.yaml" 2>/dev/null)
[ "$(printf '%s\n' "$out" | grep -c '^  tally explain')" -eq 6 ] && [[ "$out" == *"  ... and 2 more (each one as above)"* ]] \
  && ok || bad "many waiting pods: $out"

# --- tally explain --help says what it does.
out=$("$TALLY" explain --help); rc=$?
[ "$rc" -eq 0 ] && [[ "$out" == *"Explains, for a person, one decision of tally simulate"* ]] && ok \
  || bad "explain --help: exit $rc $out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
