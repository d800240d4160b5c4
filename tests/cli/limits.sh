#!/usr/bin/env bash
# The short form of the connection and memory limits of `tally serve` (issue 17 items 1 and 2;
# docs/serve.md "Limits and threads"), run by ctest from the repository root:
#   bash tests/cli/limits.sh path/to/tally
#   - 300 idle connections from one peer (127.0.0.2): 256 are held, the rest refused at accept
#     (tally_connections_refused_total{reason="per_ip"}), and /healthz from 127.0.0.1 still answers;
#   - 17 bodies of 6 MiB announced and left unfinished: 15 fit the 96 MiB budget (each holds its
#     6 MiB and a byte), the 16th and 17th are answered 503 before their bodies are read, and the
#     budget is given back when they go.
# The long forms (2,000 connections of three kinds, the deadlines, RSS under the worst bodies) are
# tests/live/conn_flood.py and tests/live/mem_flood.py in `make ci-extra`.
set -u
TALLY=$(realpath "${1:?usage: limits.sh path/to/tally}")
source tests/cli/lib/harness.sh limits.sh curl openssl python3
harness_serve "$TALLY" --state examples/cluster
metric() {
  curl -s --max-time 10 --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'
}
healthz() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/healthz"; }

# 1. One peer's idle connections, held open for 2 s while /healthz is asked from another address.
timeout 60 python3 - "$PORT" "$tmp/go" <<'PY' &
import os, socket, sys, time
port, go = int(sys.argv[1]), sys.argv[2]
socks = []
for _ in range(300):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    socks.append(s)
open(go, "w").close()
time.sleep(2)
PY
flood=$!
for _ in $(seq 100); do [ -f "$tmp/go" ] && break; sleep 0.05; done
sleep 0.5
[ "$(healthz)" == 200 ] && ok || bad "/healthz with 300 idle connections from one peer: HTTP $(healthz)"
refused=$(metric 'tally_connections_refused_total{reason="per_ip"}')
[ "${refused:-0}" -ge 40 ] && [ "${refused:-0}" -le 44 ] && ok || bad "per-IP refusals: '${refused:-}', want 44 (300 - 256)"
wait "$flood"

# 2. Bodies announced at 6 MiB and left unfinished: the memory budget holds 15 of them.
timeout 60 python3 - "$PORT" "$tmp/tls.crt" >"$tmp/held" <<'PY'
import socket, ssl, sys, time
port, crt = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=crt)
socks = []
for _ in range(17):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
    s.sendall(b"POST /validate/queues HTTP/1.1\r\nHost: x\r\nContent-Length: 6291456\r\n\r\n{")
    socks.append(s)
    time.sleep(0.05)
s = socks[-1]
s.settimeout(5)
print(s.recv(64).split(b" ")[1].decode())
PY
[ "$(cat "$tmp/held")" == 503 ] && ok || bad "the 17th 6 MiB body: HTTP '$(cat "$tmp/held")', want 503"
sleep 0.5
[ "$(metric tally_request_memory_bytes)" == 0 ] && ok || bad "the budget was not given back: $(metric tally_request_memory_bytes) bytes held"
[ "$(metric 'tally_http_responses_total{code="503"}')" == 2 ] && ok || bad "the two 503s are not counted"
echo "limits.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
