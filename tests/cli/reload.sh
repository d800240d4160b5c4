#!/usr/bin/env bash
# A SIGHUP reload of --state files that were truncated or emptied (issue 17 item 8; docs/serve.md
# "State and reload"), run by ctest from the repository root:
#   bash tests/cli/reload.sh path/to/tally
#   - a state whose queues file was emptied (every Queue gone) is refused: the old state stays, the
#     reason names the kind and the count, and a resize the queue limit denies is still denied;
#   - a state with every file emptied is refused as empty;
#   - a reload that keeps every kind (a limit raised) is taken;
#   - with --allow-state-shrink the queue-less state is taken.
set -u
TALLY=$(realpath "${1:?usage: reload.sh path/to/tally}")
source tests/cli/lib/harness.sh reload.sh curl openssl jq
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=tally-reload" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null

# state: the case none-over-limit split in two files, the queue in queues.yaml.
state() {
  rm -rf "$tmp/state" && mkdir "$tmp/state"
  awk -v d="$tmp/state" 'BEGIN { RS = "\n---\n" } /kind: Queue/ { print > (d "/queues.yaml"); next }
    { print "---" > (d "/rest.yaml"); print > (d "/rest.yaml") }' tests/resize/none-over-limit/state.yaml
}
# start ARGS...: a server on $tmp/state; sets PORT, PID.
start() {
  : >"$tmp/serve.log"
  "$TALLY" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" \
    --state "$tmp/state" "$@" 2>"$tmp/serve.log" &
  PID=$!
  pids+=("$PID")
  PORT=
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
    [ -n "$PORT" ] && break
    sleep 0.1
  done
  [ -n "$PORT" ] || { echo "reload.sh: serve did not start: $(cat "$tmp/serve.log")"; exit 1; }
}
# hup WANT: SIGHUP, then waits for the WANT-th state-reloaded or state-reload-failed line.
hup() {
  kill -HUP "$PID"
  for _ in $(seq 50); do
    [ "$(grep -c 'event=state-reload' "$tmp/serve.log")" -ge "$1" ] && return 0
    sleep 0.1
  done
  bad "no reload line after SIGHUP"
}
# allowed: the none-over-limit review's answer.
allowed() {
  curl -s --max-time 5 --cacert "$tmp/tls.crt" -H 'Content-Type: application/json' \
    --data-binary @tests/resize/none-over-limit/review.json "https://127.0.0.1:$PORT/validate/pods-resize" |
    jq -r .response.allowed
}

state
grep -q 'kind: Queue' "$tmp/state/queues.yaml" && ! grep -q 'kind: Queue' "$tmp/state/rest.yaml" && ok \
  || { bad "the split state is wrong"; ls -l "$tmp/state"; }
start
[ "$(allowed)" = false ] && ok || bad "the limit should deny the upsize at start"

: >"$tmp/state/queues.yaml"
hup 1
grep 'event=state-reload-failed' "$tmp/serve.log" | grep -q 'has no Queue (it had 1).*--allow-state-shrink' && ok \
  || bad "an emptied queues file should be refused: $(grep 'event=state-reload' "$tmp/serve.log")"
[ "$(allowed)" = false ] && ok || bad "the old state should stay: the upsize is still over the limit"

: >"$tmp/state/rest.yaml"
hup 2
grep 'event=state-reload-failed' "$tmp/serve.log" | grep -q 'the reloaded state is empty' && ok \
  || bad "an emptied state should be refused as empty: $(grep 'event=state-reload' "$tmp/serve.log")"

state
sed -i 's/limit: 2000$/limit: 4000/' "$tmp/state/queues.yaml"
hup 3
grep -q 'event=state-reloaded' "$tmp/serve.log" && [ "$(allowed)" = true ] && ok \
  || bad "a reload with every kind should be taken: $(grep 'event=state-reload' "$tmp/serve.log")"
kill "$PID"
wait "$PID" 2>/dev/null

state
start --allow-state-shrink
: >"$tmp/state/queues.yaml"
hup 1
grep -q 'event=state-reloaded' "$tmp/serve.log" && ok \
  || bad "--allow-state-shrink should take the queue-less state: $(grep 'event=state-reload' "$tmp/serve.log")"

echo "reload.sh: $pass passed, $fail failed"
[ $fail -eq 0 ]
