"""Shared pieces of the live-mode harnesses (reserve_race.py, failover.py): the test API server
(tests/kube/apiserver.py through kube_testlib), `tally serve` replicas on fixed ports (so that a
restarted replica keeps its webhook URL), ValidatingWebhookConfigurations split by an object label,
and running writes at once. Every wait is bounded."""
import base64
import http.client
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "kube"))
import kube_testlib as kt  # noqa: E402

PODS = "/api/v1/namespaces/default/pods"
RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Replica:
    def __init__(self, h, i, tally, args):
        self.h, self.i, self.tally, self.args = h, i, tally, args
        self.port = free_port()
        self.proc = None
        self.log = os.path.join(h.tmp, "replica-%d.log" % i)

    def start(self):
        env = dict(os.environ)
        if self.h.local:
            env["TALLY_TEST_LOCAL_RESERVATIONS"] = "1"
        cmd = [self.tally, "serve", "--listen", "127.0.0.1:%d" % self.port, "--tls-cert", self.h.crt,
               "--tls-key", self.h.key, "--kubeconfig", self.h.kubeconfig,
               "--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "200ms",
               "--watch-stale-after", "5s", "--log-level", os.environ.get("TALLY_RACE_LOG", "warn")] + self.args
        self.proc = subprocess.Popen(cmd, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, env=env)

    def ready(self, wait=20.0):
        ctx = ssl.create_default_context(cafile=self.h.crt)
        deadline = time.time() + wait
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("replica %d exited: %s" % (self.i, open(self.log).read()[-2000:]))
            try:
                c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=2, context=ctx)
                c.request("GET", "/readyz")
                st = c.getresponse().status
                c.close()
                if st == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("replica %d not ready in %.0f s" % (self.i, wait))

    def leading(self):
        ctx = ssl.create_default_context(cafile=self.h.crt)
        try:
            c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=2, context=ctx)
            c.request("GET", "/metrics")
            body = c.getresponse().read().decode()
            c.close()
        except OSError:
            return False
        return re.search(r"^tally_leader 1$", body, re.M) is not None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class Harness:
    def __init__(self, a):
        self.a = a
        self.local = getattr(a, "local", False)
        self.tmp = tempfile.mkdtemp(prefix="tally-race-")
        self.srv = kt.Server()
        self.kubeconfig = os.path.join(self.srv.dir, "kubeconfig")
        self.crt = os.path.join(self.tmp, "tls.crt")
        self.key = os.path.join(self.tmp, "tls.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "2", "-subj", "/CN=tally-race", "-addext",
                        "subjectAltName=IP:127.0.0.1", "-keyout", self.key, "-out", self.crt],
                       check=True, capture_output=True)
        self.ca = base64.b64encode(open(self.crt, "rb").read()).decode()
        self.c = self.srv.client()
        self.replicas = []
        self.watched = "pods"

    def close(self):
        for r in self.replicas:
            r.stop()
        self.srv.stop()
        if not os.environ.get("KEEP"):
            subprocess.run(["rm", "-rf", self.tmp])
        else:
            print("kept", self.tmp)

    def put(self, obj):
        self.srv.control("put", {"object": obj})

    def webhooks(self, name, resource, group, version, path):
        for r in self.replicas:
            cfg = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                   "metadata": {"name": "%s-%d" % (name, r.i)},
                   "webhooks": [{"name": "%s-%d.tally.dev" % (name, r.i),
                                 "clientConfig": {"url": "https://127.0.0.1:%d%s" % (r.port, path),
                                                  "caBundle": self.ca},
                                 "rules": [{"operations": ["UPDATE"], "apiGroups": [group],
                                            "apiVersions": [version], "resources": [resource]}],
                                 "objectSelector": {"matchLabels": {"tally-replica": str(r.i)}},
                                 "failurePolicy": "Fail", "sideEffects": "None",
                                 "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}]}
            st, _, body = self.c.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", cfg)
            if st != 201:
                raise RuntimeError("webhook configuration refused: %s %s" % (st, body))

    def start_replicas(self, args):
        self.replicas = [Replica(self, i, self.a.tally, args) for i in range(self.a.replicas)]
        for r in self.replicas:
            r.start()
        for r in self.replicas:
            r.ready()

    def concurrently(self, fns):
        """Runs every fn at once (released together); returns their results in order."""
        out = [None] * len(fns)
        gate = threading.Barrier(len(fns))

        def run(k):
            gate.wait()
            out[k] = fns[k]()
        ts = [threading.Thread(target=run, args=(k,)) for k in range(len(fns))]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        return out

    def leader(self):
        return next((r for r in self.replicas if r.proc.poll() is None and r.leading()), None)

    def fault(self, rnd, stage):
        """--faults: what happens in round rnd at the middle of its writes."""
        if not self.a.faults:
            return None
        if rnd % 10 == 0 and stage == "mid":
            self.srv.control("compact", {})
            return "relist"
        if rnd % 10 == 3 and stage == "start":
            self.stall(1.0)
            return "stall"
        if rnd % 10 == 5 and stage == "mid":
            leader = self.leader() or self.replicas[0]
            leader.kill()
            return leader
        return None

    def stall(self, seconds):
        """The replicas' watches of the harness's resource deliver nothing for that long (watch lag)."""
        self.srv.control("fault", {"action": "stall-watch", "resource": self.watched, "seconds": seconds})

    def restart(self, r):
        r.start()
        r.ready()


def write(h, method, path, body, ptype="merge"):
    c = h.srv.client()
    try:
        if method == "PATCH":
            st, _, b = c.patch(path, body, ptype)
        else:
            st, _, b = c.request(method, path, body)
        return st, b
    except OSError as e:
        return 0, str(e)
    finally:
        c.close()
