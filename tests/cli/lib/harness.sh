# tests/cli/lib/harness.sh: the frame the newer command-line tests share, sourced after `set -u`:
#   source tests/cli/lib/harness.sh NAME TOOL...
# gives the pass/fail counters and ok/bad, a temp dir $tmp, the array pids (every process in it
# is killed with SIGKILL on exit, and $tmp removed), checks that each TOOL is on PATH, and
# harness_serve (below) to start `tally serve` on a certificate of its own.
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
pids=()
harness_cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap harness_cleanup EXIT
harness_name=$1
shift
for tool in "$@"; do
  command -v "$tool" >/dev/null || { echo "$harness_name: $tool is missing (scripts/deps.sh test)"; exit 1; }
done

# harness_serve TALLY ARGS...: a throwaway certificate for 127.0.0.1 in $tmp/tls.{crt,key} (unless
# one is there), then `TALLY serve` on a port the kernel picks with ARGS, logging to
# $tmp/serve.log; sets PORT (read back from the `listening` line) and PID, and exits the script
# when it does not start within 10 s.
harness_serve() {
  local tally=$1
  shift
  [ -f "$tmp/tls.crt" ] || openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 2 -subj "/CN=tally-$harness_name" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null
  "$tally" serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" "$@" 2>"$tmp/serve.log" &
  PID=$!
  pids+=("$PID")
  PORT=
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*event=listening .*port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
    [ -n "$PORT" ] && return 0
    sleep 0.1
  done
  echo "$harness_name: serve did not start: $(cat "$tmp/serve.log")"
  exit 1
}
