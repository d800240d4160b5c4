#!/usr/bin/env python3
"""Memory of `tally serve` under the worst bodies (issue 17 item 2), on loopback only:

    python3 tests/live/mem_flood.py path/to/tally [--clients 16] [--seconds 10] [--max-mib 256]

Four phases against one server on examples/cluster, its RSS read from /proc every 50 ms:
  1. worst: `--clients` clients at once, each sending 5.8 MB reviews whose padding is a
     2.9-million-element array, one after another for `--seconds` (refused by their value count);
  1b. parsed: the same clients sending reviews under the value limit that are parsed whole, the
     costliest shape per byte measured (padding a map of 520,000 keys, 6.2 MB), for `--seconds`;
  2. held: 90 connections each sending 6 MiB of a body and stopping short (Content-Length says
     6 MiB), held open for 3 s;
  3. large: one review of 500,000 padding elements (under the value limit: parsed), then the RSS
     must fall back to within 48 MiB of the RSS before it (the memory is given back).
Prints the answers by status code and the peak RSS of each phase; fails when a peak is at or over
`--max-mib`, or phase 3 does not give the memory back. Every wait is bounded.
"""
import argparse
import collections
import os
import socket
import ssl
import sys
import threading
import time

from serve_lib import serving


def review(pad, as_map=False):
    head = ('{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"m",'
            '"kind":{"group":"scheduling.run.ai","version":"v2","kind":"Queue"},"operation":"CREATE",'
            '"object":{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"m"},"spec":{}}},'
            '"padding":[')
    if as_map:
        return (head[:-1] + "{" + ",".join('"k%d":0' % i for i in range(pad)) + "}}").encode()
    return (head + ",".join(["0"] * pad) + "]}").encode()


class Sampler(threading.Thread):
    """The server's peak RSS (KiB) since the last reset."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.srv, self.peak, self.stop = srv, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, self.srv.rss_kb())
            time.sleep(0.05)

    def reset(self):
        self.peak = self.srv.rss_kb()


def worst(srv, body, clients, seconds):
    codes = collections.Counter()
    until = time.time() + seconds

    def client():
        while time.time() < until:
            try:
                status, _ = srv.request("POST", "/validate/queues", body, timeout=60)
            except OSError:
                status = "error"
            codes[status] += 1

    th = [threading.Thread(target=client) for _ in range(clients)]
    for t in th:
        t.start()
    for t in th:
        t.join(seconds + 90)
    return codes


def held(srv, n, size, seconds):
    """n connections that send all but the last byte of a `size`-byte body and wait."""
    ctx = ssl.create_default_context(cafile=os.path.join(srv.d, "tls.crt"))
    socks, codes = [], collections.Counter()
    chunk = b" " * 65536
    for _ in range(n):
        try:
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), timeout=10),
                                server_hostname="127.0.0.1")
            s.sendall(b"POST /validate/queues HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % size)
            left = size - 1
            while left > 0:
                left -= s.send(chunk[:min(left, len(chunk))])
            socks.append(s)
        except OSError:
            codes["refused or cut"] += 1
    time.sleep(seconds)
    for s in socks:
        s.settimeout(0.5)
        try:
            line = s.recv(64).split(b" ")
            codes[int(line[1]) if len(line) > 1 else "no answer"] += 1
        except (OSError, ValueError):
            codes["no answer"] += 1
        s.close()
    return codes


def phases(srv, a):
    """The phases; whether each stayed under the bound (and the third gave its memory back)."""
    ok = True
    sampler = Sampler(srv)
    sampler.start()
    start_kb = srv.rss_kb()
    body = review(2900000)
    sampler.reset()
    codes = worst(srv, body, a.clients, a.seconds)
    print("worst: %d clients x %.0f s of %.1f MB reviews (2.9 million values): answers %s; "
          "peak RSS %.0f MiB (at start %.0f MiB)" % (a.clients, a.seconds, len(body) / 1e6,
                                                   dict(codes), sampler.peak / 1024, start_kb / 1024))
    ok &= sampler.peak / 1024 < a.max_mib
    body = review(520000, as_map=True)
    sampler.reset()
    codes = worst(srv, body, a.clients, a.seconds)
    print("parsed: %d clients x %.0f s of %.1f MB reviews (a map of 520,000 keys, under the value "
          "limit): answers %s; peak RSS %.0f MiB" % (a.clients, a.seconds, len(body) / 1e6, dict(codes),
                                                      sampler.peak / 1024))
    ok &= sampler.peak / 1024 < a.max_mib and codes.get(200, 0) > 0
    sampler.reset()
    codes = held(srv, 90, 6 << 20, 3)
    print("held: 90 connections x 6 MiB bodies left unfinished: %s; peak RSS %.0f MiB"
          % (dict(codes), sampler.peak / 1024))
    ok &= sampler.peak / 1024 < a.max_mib
    time.sleep(1)
    before = srv.rss_kb()
    sampler.reset()
    status, _ = srv.request("POST", "/validate/queues", review(500000))
    time.sleep(0.5)
    after = srv.rss_kb()
    print("large: one review of 500,000 values: HTTP %s; RSS %.0f MiB before, peak %.0f MiB, "
          "%.0f MiB after" % (status, before / 1024, sampler.peak / 1024, after / 1024))
    sampler.stop.set()
    return ok and status == 200 and after - before < 48 * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tally")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--max-mib", type=float, default=256)
    a = ap.parse_args()
    with serving(a.tally, prefix="tally-mem-flood-") as srv:
        ok = phases(srv, a)
    print("mem_flood: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
