"""Pieces the `tally serve` harnesses on --state files share (reload_race.py, conn_flood.py,
mem_flood.py): a throwaway certificate for 127.0.0.1 and one server on a port the kernel picks, read
back from its `listening` log line. Every wait is bounded."""
import contextlib
import http.client
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time


def make_cert(d):
    """A self-signed P-256 pair for 127.0.0.1 in d/tls.crt and d/tls.key."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=tally-serve-test", "-addext",
                    "subjectAltName=IP:127.0.0.1", "-keyout", os.path.join(d, "tls.key"),
                    "-out", os.path.join(d, "tls.crt")], check=True, capture_output=True)


class Server:
    """`tally serve --state d/state` with extra flags; its log in d/serve.log."""

    def __init__(self, tally, d, args=()):
        self.d = d
        self.log = os.path.join(d, "serve.log")
        self.proc = subprocess.Popen(
            [tally, "serve", "--listen", "127.0.0.1:0", "--tls-cert", os.path.join(d, "tls.crt"),
             "--tls-key", os.path.join(d, "tls.key"), "--state", os.path.join(d, "state")] + list(args),
            stderr=open(self.log, "w"))
        self.ctx = ssl.create_default_context(cafile=os.path.join(d, "tls.crt"))
        deadline = time.time() + 20
        self.port = None
        while time.time() < deadline and self.port is None:
            if self.proc.poll() is not None:
                raise RuntimeError("serve exited: " + open(self.log).read()[-2000:])
            m = re.search(r"event=listening .*port=(\d+)", open(self.log).read())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.05)
        if self.port is None:
            raise RuntimeError("serve did not start in 20 s")

    def request(self, method, path, body=None, timeout=60):
        """(status, body) of one request on a new connection."""
        c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self.ctx)
        try:
            c.request(method, path, body, {"Content-Type": "application/json"} if body is not None else {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def metric(self, name):
        """A series' value in /metrics (0 when absent)."""
        _, body = self.request("GET", "/metrics", timeout=10)
        for line in body.decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return 0.0

    def rss_kb(self):
        for line in open("/proc/%d/status" % self.proc.pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def serving(tally, args=(), prefix="tally-serve-"):
    """A Server on a copy of examples/cluster in a temp dir of its own, stopped and removed after."""
    d = tempfile.mkdtemp(prefix=prefix)
    try:
        shutil.copytree("examples/cluster", os.path.join(d, "state"))
        make_cert(d)
        srv = Server(os.path.abspath(tally), d, args)
        try:
            yield srv
        finally:
            srv.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)
