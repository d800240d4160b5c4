#!/usr/bin/env bash
# Every answer of `tally serve` is counted with its status code, those libmicrohttpd sends itself
# included, and every request that gets no answer by why (issue 17 item 7; docs/serve.md
# "Metrics"), run by ctest from the repository root:
#   bash tests/cli/httpd_counts.sh path/to/tally
# Raw requests over TLS: a request line with no space, one with a bad version, a 40 KB URI, a 40 KB header, HTTP/3.7, a
# Content-Length that is not a number, an oversized chunk size (libmicrohttpd answers each
# itself), a GET on a validator and a Content-Length over the limit (tally's 405 and 413), and a
# chunked body that goes on past four times the limit (cut). tally_http_responses_total must show
# each code exactly as often as the client saw it, tally_http_requests_aborted_total the cut, and
# the decision histogram none of these requests (it showed the 405 and 413 as decisions of 0 s).
set -u
TALLY=$(realpath "${1:?usage: httpd_counts.sh path/to/tally}")
source tests/cli/lib/harness.sh httpd_counts.sh curl openssl python3
harness_serve "$TALLY" --state examples/cluster

# One raw request per line of output: NAME CODE (0: no answer).
timeout 60 python3 - "$PORT" "$tmp/tls.crt" >"$tmp/seen" <<'PY'
import socket, ssl, sys
port, crt = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=crt)
def send(name, head, body_chunks=()):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
    code = 0
    try:
        s.sendall(head)
        for c in body_chunks:
            s.sendall(c)
    except OSError:
        # The server may answer and close before the rest of an oversized request is sent
        # (a 40 KB header is refused after its first 16 KB record): the answer is still
        # in this socket's receive queue, so read it all the same.
        pass
    try:
        data = s.recv(4096)
        if data.startswith(b"HTTP/1."):
            code = int(data.split(b" ")[1])
    except OSError:
        pass
    s.close()
    print(name, code, flush=True)
H = b"Host: 127.0.0.1\r\n"
send("no-request-line", b"GARBAGE\r\n\r\n")
send("bad-request-line", b"GET /healthz FOO/1.1\r\n" + H + b"\r\n")
send("uri-too-long", b"GET /" + b"u" * 40000 + b" HTTP/1.1\r\n" + H + b"\r\n")
send("header-too-large", b"GET /healthz HTTP/1.1\r\n" + H + b"X-Big: " + b"h" * 40000 + b"\r\n\r\n")
send("bad-version", b"GET /healthz HTTP/3.7\r\n" + H + b"\r\n")
send("bad-content-length", b"POST /validate/runs HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n")
send("oversized-chunk", b"POST /validate/runs HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
     + b"FFFFFFFFFFFFFFFFFFFF\r\n")
send("get-on-validator", b"GET /validate/queues HTTP/1.1\r\n" + H + b"\r\n")
send("content-length-over", b"POST /validate/queues HTTP/1.1\r\n" + H + b"Content-Length: 99999999\r\n\r\n")
chunk = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
send("cut-past-limit", b"POST /validate/queues HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n",
     [chunk] * 40)
PY
cat "$tmp/seen"
curl -s --max-time 10 --cacert "$tmp/tls.crt" "https://127.0.0.1:$PORT/metrics" >"$tmp/metrics"
metric() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/metrics"; }

# The codes libmicrohttpd gives these (0.9.75): every one of them an answer, none of them 200.
for want in "no-request-line 0" "bad-request-line 400" "uri-too-long 414" "header-too-large 431" "bad-version 505" \
            "bad-content-length 400" "oversized-chunk 413" "get-on-validator 405" "content-length-over 413" \
            "cut-past-limit 0"; do
  grep -qx "$want" "$tmp/seen" && ok || bad "${want% *}: the client saw '$(grep "^${want% *} " "$tmp/seen")', want '$want'"
done
for code in 400 405 413 414 431 505; do
  seen=$(awk -v c="$code" '$2 == c' "$tmp/seen" | wc -l)
  got=$(metric "tally_http_responses_total{code=\"$code\"}")
  [ "${got:-0}" == "$seen" ] && ok || bad "tally_http_responses_total{code=\"$code\"} = '${got:-}', the client saw $seen"
done
[ "$(metric 'tally_http_requests_aborted_total{reason="body_over_limit"}')" == 1 ] && ok \
  || bad "the cut past the body limit is not counted: $(grep aborted "$tmp/metrics")"
# Four connections ended before a request line was read: the one with no space (no answer), and the
# bad version, HTTP/3.7 and the 40 KB URI, which libmicrohttpd answered (counted above) and closed.
[ "$(metric tally_connections_closed_without_request_total)" == 4 ] && ok \
  || bad "the connection with no request line is not counted: $(metric tally_connections_closed_without_request_total)"
[ "$(metric 'tally_admission_duration_seconds_count{endpoint="queues"}')" == 0 ] && ok \
  || bad "the decision histogram counts answers that were no decision: $(grep 'seconds_count{endpoint="queues"' "$tmp/metrics")"
[ "$(metric 'tally_admission_requests_total{endpoint="queues",outcome="method_not_allowed"}')" == 1 ] && ok \
  || bad "the 405 is not counted as an outcome"
echo "httpd_counts.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
