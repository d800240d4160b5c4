#!/usr/bin/env python3
"""SIGTERM with a request in flight (issue 17 item 6, docs/serve.md): during the grace period a new
client is refused at once (the listening socket has left LISTEN), while the request already in
flight is answered; then the server exits 0. Every wait is bounded.
  python3 tests/live/shutdown.py path/to/tally"""
import os
import signal
import socket
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_lib import serving  # noqa: E402

REVIEW = (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",'
          b'"kind":{"group":"scheduling.run.ai","version":"v2","kind":"Queue"},"operation":"CREATE",'
          b'"object":{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"q-new"},'
          b'"spec":{"resources":{"cpu":{"quota":-1,"limit":-1},"memory":{"quota":-1,"limit":-1},'
          b'"gpu":{"quota":-1,"limit":-1}}}}}}')


def main():
    failures = []
    with serving(sys.argv[1]) as srv:
        raw = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        tls = srv.ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        head = ("POST /validate/queues HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % len(REVIEW)).encode()
        tls.sendall(head + REVIEW[:20])  # the request is in flight: its body is not complete
        time.sleep(0.5)
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        try:
            socket.create_connection(("127.0.0.1", srv.port), timeout=3).close()
            failures.append("a new client was accepted during the grace period (it should be refused)")
        except ConnectionRefusedError:
            pass
        except OSError as e:
            failures.append("a new client got %r, not a refusal" % e)
        tls.sendall(REVIEW[20:])
        tls.settimeout(10)
        reply = b""
        try:
            while b"\r\n\r\n" not in reply:
                chunk = tls.recv(4096)
                if not chunk:
                    break
                reply += chunk
        except (OSError, ssl.SSLError) as e:
            failures.append("the request in flight got no answer: %r" % e)
        if not reply.startswith(b"HTTP/1.1 200"):
            failures.append("the request in flight was not answered 200: %r" % reply[:80])
        try:
            rc = srv.proc.wait(15)
        except Exception:
            rc = None
        if rc != 0:
            failures.append("serve exited %r, want 0" % rc)
    for f in failures:
        print("FAIL: " + f)
    print("shutdown: %s" % ("passed" if not failures else "%d failed" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
