#!/usr/bin/env python3
"""Connection exhaustion against `tally serve` (issue 17 item 1), on loopback only:

    python3 tests/live/conn_flood.py path/to/tally [--kind all|idle|hello|slow] [--count 2000]
        [--addrs 8] [--seconds 12] [--max-ms 100]
    python3 tests/live/conn_flood.py path/to/tally --deadlines

The flood: `--count` hostile connections from `--addrs` source addresses (127.0.0.2 and up, so that
each is a peer of its own), of three kinds: idle TCP connections that send nothing, ClientHellos
that never finish (a TLS record header and a few bytes), and slow requests (a finished handshake,
then a request line and a header one byte every half second). Connections the server closes are
opened again, so the pressure stays at `--count` for `--seconds`. Meanwhile a normal client on
127.0.0.1 opens a new TLS connection every 200 ms and GETs /healthz, as a kubelet probe does. It
passes when every probe is answered 200 and the 95th percentile is at most `--max-ms`.

`--deadlines`: 40 idle connections and 40 unfinished ClientHellos must be cut by the handshake
deadline (10 s), 20 slow requests by the request deadline (30 s), each within 2 s of it, counted in
tally_connections_cut_total. About 35 s.

Needs `ulimit -n` above `--count` + 100 for this process; the server needs the same (it holds up to
its connection limit, 1024). Every wait is bounded.
"""
import argparse
import os
import selectors
import socket
import ssl
import subprocess
import sys
import threading
import time

from serve_lib import serving

HELLO_START = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"  # a record of 512 bytes, 11 sent
REQUEST_LINE = b"POST /validate/runs HTTP/1.1\r\n"  # sent at once: the request's deadline starts
SLOW_REQUEST = b"Host: 127.0.0.1\r\n" + b"X-Pad: " + b"a" * 4000


class Hostile:
    """One hostile connection; `sent` is how far into SLOW_REQUEST a slow one has got."""

    def __init__(self, kind, src, port, ctx):
        self.kind, self.sent, self.opened = kind, 0, time.time()
        raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        raw.bind((src, 0))
        raw.settimeout(5)
        raw.connect(("127.0.0.1", port))
        if kind == "hello":
            raw.sendall(HELLO_START)
        if kind == "slow":
            self.sock = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            self.sock.sendall(REQUEST_LINE)
        else:
            self.sock = raw
        self.sock.setblocking(False)

    def dribble(self):
        """One more byte of the slow request; False once the server has closed the connection."""
        try:
            self.sock.send(SLOW_REQUEST[self.sent % len(SLOW_REQUEST):][:1])
            self.sent += 1
            return True
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
            return True
        except OSError:
            return False

    def closed(self):
        """Whether the server closed it (end of stream or a reset)."""
        try:
            data = self.sock.recv(4096)
            return data == b""
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            return False
        except OSError:
            return True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Flood:
    def __init__(self, port, ctx, kinds, addrs):
        self.port, self.ctx, self.kinds, self.addrs = port, ctx, kinds, addrs
        self.conns, self.opened, self.failed, self.closed_by_server = [], 0, 0, 0
        self.sel = selectors.DefaultSelector()

    def open_one(self, i):
        kind = self.kinds[i % len(self.kinds)]
        src = "127.0.0.%d" % (2 + i % self.addrs)
        try:
            h = Hostile(kind, src, self.port, self.ctx)
        except (OSError, ssl.SSLError):
            self.failed += 1
            return None
        self.opened += 1
        self.sel.register(h.sock, selectors.EVENT_READ, h)
        return h

    def fill(self, count, until):
        i = 0
        while len(self.conns) < count and time.time() < until:
            h = self.open_one(i)
            i += 1
            if h:
                self.conns.append(h)

    def step(self):
        """Drops what the server closed, dribbles the slow ones; returns the closed ones' kinds."""
        gone = []
        for key, _ in self.sel.select(timeout=0):
            h = key.data
            if h.closed():
                gone.append(h)
        for h in self.conns:
            if h.kind == "slow" and h not in gone and not h.dribble():
                gone.append(h)
        for h in gone:
            self.sel.unregister(h.sock)
            h.close()
            self.conns.remove(h)
        self.closed_by_server += len(gone)
        return gone

    def close(self):
        for h in self.conns:
            h.close()
        self.conns = []


def probe(port, crt):
    """Seconds to answer a GET /healthz on a new connection from 127.0.0.1 (curl's own clock: connect,
    handshake, answer; a process of its own, so the flood's loop does not delay it), and the status."""
    try:
        out = subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "5", "--cacert", crt,
                              "-w", "%{http_code} %{time_total}", "https://127.0.0.1:%d/healthz" % port],
                             capture_output=True, text=True, timeout=10).stdout.split()
        return float(out[1]), int(out[0])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return 5.0, 0


def probes(port, crt, seconds):
    """The latencies of the probes answered 200 in `seconds`, one every 200 ms, and the failures."""
    lat, bad = [], 0
    until = time.time() + seconds
    while time.time() < until:
        dt, status = probe(port, crt)
        if status == 200:
            lat.append(dt)
        else:
            bad += 1
        time.sleep(0.2)
    return lat, bad


def summary(lat, bad):
    return "%d answered, %d failed; /healthz p50 %.1f ms, p95 %.1f ms, max %.1f ms" % (
        len(lat), bad, pct(lat, 0.5) * 1000, pct(lat, 0.95) * 1000, max(lat or [0]) * 1000)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] if v else float("nan")


def flood(srv, a):
    crt = os.path.join(srv.d, "tls.crt")
    ctx = ssl.create_default_context(cafile=crt)
    kinds = ["idle", "hello", "slow"] if a.kind == "all" else [a.kind]
    f = Flood(srv.port, ctx, kinds, a.addrs)
    base, base_bad = probes(srv.port, crt, 3)
    print("probes before the flood: " + summary(base, base_bad), flush=True)
    lat, bad = [], 0

    def prober():
        nonlocal lat, bad
        lat, bad = probes(srv.port, crt, a.seconds)

    t_start = time.time()
    f.fill(a.count, t_start + a.seconds)
    filled = time.time() - t_start
    print("flood: %d hostile connections open from %d addresses in %.1f s (%d connects failed)"
          % (len(f.conns), a.addrs, filled, f.failed), flush=True)
    th = threading.Thread(target=prober)
    th.start()
    until = time.time() + a.seconds
    while time.time() < until:
        f.step()
        f.fill(a.count, until)
        time.sleep(0.5)
    th.join(30)
    held = len(f.conns)
    f.close()
    print("flood: %d connects in all, %d closed by the server, %d still open at the end"
          % (f.opened, f.closed_by_server, held))
    refused = {r: srv.metric('tally_connections_refused_total{reason="%s"}' % r)
               for r in ("per_ip", "reserve", "limit", "httpd_limit")}
    print("server: refused " + ", ".join("%s %d" % (k, v) for k, v in refused.items()))
    print("probes during the flood: " + summary(lat, bad))
    # On a loaded machine the probe is slow with no flood at all: the bound is the larger of the two.
    bound = max(a.max_ms, 1.5 * pct(base, 0.95) * 1000)
    print("bound: p95 at most %.0f ms (--max-ms %.0f, or 1.5 x the p95 before the flood)" % (bound, a.max_ms))
    return bad == 0 and len(lat) > 0 and pct(lat, 0.95) * 1000 <= bound


def deadlines(srv):
    ctx = ssl.create_default_context(cafile=os.path.join(srv.d, "tls.crt"))
    f = Flood(srv.port, ctx, ["idle", "hello"], 1)
    f.fill(80, time.time() + 10)
    s = Flood(srv.port, ctx, ["slow"], 1)
    s.fill(20, time.time() + 10)
    t0 = time.time()
    first = {}
    while time.time() - t0 < 35 and (f.conns or s.conns):
        for h in f.step() + s.step():
            first.setdefault(h.kind, []).append(time.time() - h.opened)
        time.sleep(0.25)
    ok = not f.conns and not s.conns
    for kind, want in (("idle", 10), ("hello", 10), ("slow", 30)):
        v = first.get(kind, [])
        print("deadlines: %d %s connections cut after %.1f-%.1f s (deadline %d s)"
              % (len(v), kind, min(v or [0]), max(v or [0]), want))
        ok = ok and v and min(v) >= want - 0.5 and max(v) <= want + 2
    cut = {p: srv.metric('tally_connections_cut_total{phase="%s"}' % p) for p in ("handshake", "request")}
    print("server: cut handshake %d, request %d" % (cut["handshake"], cut["request"]))
    return ok and cut["handshake"] >= 80 and cut["request"] >= 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tally")
    ap.add_argument("--kind", default="all", choices=["all", "idle", "hello", "slow"])
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--addrs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=12)
    ap.add_argument("--max-ms", type=float, default=100)
    ap.add_argument("--deadlines", action="store_true")
    a = ap.parse_args()
    with serving(a.tally, prefix="tally-conn-flood-") as srv:
        ok = deadlines(srv) if a.deadlines else flood(srv, a)
    print("conn_flood: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
