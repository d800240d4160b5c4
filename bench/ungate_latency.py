#!/usr/bin/env python3
"""Create -> ungate latency of the gating controller against the test API server (issue 14;
scripts/bench-live.sh runs it, docs/performance.md "Gating (issue 14)" has the figures).

    python3 bench/ungate_latency.py --tally build-bench/tally [--rate 1000] [--seconds 5]
        [--qps 5000] [--burst 10000] [--held 0] [--hook-rate 50] [--hook-seconds 4] [--bound 600]
        [--server-latency-ms 0]

1. The bound: before tally starts, a plain client (Python http.client, one keep-alive HTTPS
   connection, sequential) sends the three writes tally sends per admitted pod to --bound gated
   pods stored for it: the ungate JSON patch (test, remove, add the admitted annotation), the
   QueueAdmitted condition on pods/status (strategic merge) and an Admitted Event (POST), with a
   pod watch open as in the run. Their round trips bound what one controller thread that sends
   them one after another can do: 1 / (sum of the three means) pods a second. The same writes
   from 4 client processes at once give the server's aggregate write rate.
2. One `tally serve --kubeconfig ... --controllers gating --leader-elect=false --kube-api-qps Q
   --kube-api-burst B`; a Queue with room (label kai.scheduler/queue-admission-gating: "true",
   limits unbounded). With --held N, a second Queue at its limit holds N gated pods first (their
   conditions and events written before the clock starts), so every cycle also decides them again.
3. Pods already carrying the gate are stored through POST /_test/put {"objects": [...]} every
   10 ms (RATE/100 a batch) for SECONDS: no admission, no webhook, so the client is not the
   bottleneck. A watch of pods in another process notes, per pod, the MODIFIED event in which
   tally's gate is gone; latency is from the moment its batch was sent.
4. With --hook-rate R > 0: pods created through the API (POST .../pods, no gate) with tally's
   /mutate/pods as a MutatingWebhookConfiguration, as kubectl would create them, at R a second
   for --hook-seconds (one connection; the achieved rate is printed). Latency from the POST.

Prints the achieved rate, p50/p99/max latency, how many were ungated, and tally's and the
server's CPU seconds. Exits 1 only when something did not run (not on a missed target).
"""
import argparse
import base64
import http.client
import json
import multiprocessing as mp
import os
import re
import ssl
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "live"))
import harness  # noqa: E402
import kube_strategy  # noqa: E402  (tests/kube, on the path through harness)

GATE = "kai.scheduler/queue-admission"
ANN = "kai.scheduler/queue-admitted-timestamp"
QUEUE_API = "/apis/scheduling.run.ai/v2/queues"


def queue(name, gpu_limit):
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
            "metadata": {"name": name, "labels": {"kai.scheduler/queue-admission-gating": "true"}},
            "spec": {"resources": {"cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                                   "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                                   "gpu": {"quota": -1, "limit": gpu_limit, "overQuotaWeight": 1}}}}


def pod(ns, name, q, gated=True, gpu=True):
    res = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}
    if gpu:
        res["requests"]["nvidia.com/gpu"] = "1"
        res["limits"]["nvidia.com/gpu"] = "1"
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns,
                      "labels": {"app": "bench", "kai.scheduler/queue": q},
                      "annotations": {"kubectl.kubernetes.io/default-container": "main"}},
         "spec": {"schedulerName": "kai-scheduler", "restartPolicy": "Never",
                  "containers": [{"name": "main", "image": "registry.example/train:1", "resources": res}],
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
         "status": {"phase": "Pending"}}
    if gated:
        p["spec"]["schedulingGates"] = [{"name": GATE}]
        # Stored through /_test/put, which does no defaulting: as the server would have defaulted it
        # (or a later update would count the defaults as a forbidden spec change).
        kube_strategy.default_pod(p)
    return p


def cpu_s(pid):
    """utime + stime of a process, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(v, q):
    return v[min(len(v) - 1, int(len(v) * q))] if v else float("nan")


# ---- the watcher (its own process, so decoding events takes nothing from the creator) ----------

def watcher(port, ca, token, namespaces, ready, stop, out):
    ctx = ssl.create_default_context(cafile=ca)
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=0.5)
    conn.request("GET", "/api/v1/pods?watch=true&allowWatchBookmarks=true",
                 headers={"Authorization": "Bearer " + token})
    resp = conn.getresponse()
    ready.set()
    added, ungated, never = {}, {}, set()
    while True:
        try:
            line = resp.readline()
        except (TimeoutError, OSError):
            if stop.is_set():
                break
            continue
        if not line:
            break
        t = time.monotonic()
        ev = json.loads(line)
        if ev["type"] not in ("ADDED", "MODIFIED"):
            continue
        md = ev["object"]["metadata"]
        if md.get("namespace") not in namespaces:
            continue
        key = md["namespace"] + "/" + md["name"]
        gated = any(g.get("name") == GATE for g in ev["object"]["spec"].get("schedulingGates") or [])
        if key not in added:
            added[key] = t
            if not gated:
                never.add(key)
        elif not gated and key not in ungated and key not in never:
            ungated[key] = t
    out.send((added, ungated, sorted(never)))
    out.close()


class Watch:
    def __init__(self, h, namespaces):
        self.stop = mp.Event()
        ready = mp.Event()
        self.rx, tx = mp.Pipe(False)
        self.p = mp.Process(target=watcher, args=(h.srv.port, h.srv.ca, h.srv.token, set(namespaces),
                                                  ready, self.stop, tx))
        self.p.start()
        if not ready.wait(10):
            raise RuntimeError("the watch did not start")

    def result(self):
        self.stop.set()
        added, ungated, never = self.rx.recv()
        self.p.join(10)
        return added, ungated, never


# ---- 1. the bound ---------------------------------------------------------------------------

def write_triple(c, ns, name, i):
    """The three writes tally sends per admitted pod; returns the three round trips."""
    rtt = []
    t = time.monotonic()
    st, _, b = c.patch("/api/v1/namespaces/%s/pods/%s" % (ns, name),
                       [{"op": "test", "path": "/spec/schedulingGates", "value": [{"name": GATE}]},
                        {"op": "remove", "path": "/spec/schedulingGates/0"},
                        {"op": "add", "path": "/metadata/annotations/" + ANN.replace("/", "~1"),
                         "value": "2026-12-01T00:00:00Z"}], "json")
    rtt.append(time.monotonic() - t)
    assert st == 200, (st, b)
    t = time.monotonic()
    st, _, b = c.patch("/api/v1/namespaces/%s/pods/%s/status" % (ns, name),
                       {"status": {"conditions": [{"type": "QueueAdmitted", "status": "True",
                                                   "reason": "Admitted", "message": "admitted by queue policy",
                                                   "lastTransitionTime": "2026-12-01T00:00:00Z"}]}},
                       "strategic")
    rtt.append(time.monotonic() - t)
    assert st == 200, (st, b)
    t = time.monotonic()
    st, _, b = c.post("/api/v1/namespaces/%s/events" % ns,
                      {"apiVersion": "v1", "kind": "Event",
                       "metadata": {"name": "%s.%x" % (name, i), "namespace": ns},
                       "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name},
                       "type": "Normal", "reason": "Admitted", "message": "admitted by queue policy",
                       "source": {"component": "tally"}, "count": 1})
    rtt.append(time.monotonic() - t)
    assert st == 201, (st, b)
    return rtt


def bound_worker(srv_dir, port, ca, token, names, out):
    class S:
        pass
    s = S()
    s.dir, s.port, s.ca, s.token, s.opened = srv_dir, port, ca, token, []
    import kube_testlib as kt
    c = kt.Client(s, token=token)
    t = time.monotonic()
    for i, (ns, name) in enumerate(names):
        write_triple(c, ns, name, i)
    out.send((len(names), time.monotonic() - t))
    out.close()


def bound(h, n):
    ns = "bound"
    pods = [pod(ns, "b-%05d" % i, "bound-q") for i in range(n)]
    for k in range(0, n, 200):
        h.srv.control("put", {"objects": pods[k:k + 200]})
    w = Watch(h, [ns])
    c = h.srv.client()
    single = n // 2
    rtts = [write_triple(c, ns, "b-%05d" % i, i) for i in range(single)]
    c.close()
    means = [sum(r[k] for r in rtts) / len(rtts) for k in range(3)]
    per_pod = sum(means)
    # Four processes at once, on the other half.
    rest = [(ns, "b-%05d" % i) for i in range(single, n)]
    parts = [rest[k::4] for k in range(4)]
    pipes, procs = [], []
    t = time.monotonic()
    for part in parts:
        rx, tx = mp.Pipe(False)
        p = mp.Process(target=bound_worker, args=(h.srv.dir, h.srv.port, h.srv.ca, h.srv.token, part, tx))
        p.start()
        pipes.append(rx)
        procs.append(p)
    done = sum(rx.recv()[0] for rx in pipes)
    wall = time.monotonic() - t
    for p in procs:
        p.join(10)
    w.result()
    print("  bound (a plain Python client, one HTTPS keep-alive connection, sequential, %d pods; a pod watch "
          "open): ungate patch %.2f ms, pods/status patch %.2f ms, event POST %.2f ms: %.2f ms per admitted pod, "
          "at most %.0f pods/s for one thread sending them one after another" %
          (single, means[0] * 1e3, means[1] * 1e3, means[2] * 1e3, per_pod * 1e3, 1 / per_pod))
    print("  bound (4 client processes at once, %d pods): %.0f writes/s, %.0f pods/s (3 writes each) for the "
          "server as a whole" % (done, 3 * done / wall, done / wall))
    return 1 / per_pod


# ---- 2-4. the run ---------------------------------------------------------------------------

def metrics(h, r):
    ctx = ssl.create_default_context(cafile=h.crt)
    c = http.client.HTTPSConnection("127.0.0.1", r.port, timeout=5, context=ctx)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    return body


def ungates(h, r, q):
    m = re.search(r'^tally_ungates_total\{queue="%s"\} (\d+)$' % q, metrics(h, r), re.M)
    return int(m.group(1)) if m else 0


def report(label, sent, added, ungated, never, rate_asked, rate_got, cpu):
    lat = sorted(ungated[k] - sent[k] for k in sent if k in ungated)
    add = sorted(added[k] - sent[k] for k in sent if k in added)
    print("  %s: %d pods asked at %.0f/s, sent at %.0f/s; %d ungated, %d not ungated in time%s" %
          (label, len(sent), rate_asked, rate_got, len(lat), len(sent) - len(lat),
           ", %d arrived without the gate" % len(never) if never else ""))
    if lat:
        print("    create -> ungate: p50 %.0f ms, p99 %.0f ms, max %.0f ms (create -> ADDED seen: p50 %.0f ms, "
              "p99 %.0f ms)" % (pct(lat, .5) * 1e3, pct(lat, .99) * 1e3, lat[-1] * 1e3, pct(add, .5) * 1e3,
                                pct(add, .99) * 1e3))
    print("    CPU during it: tally %.2f s, the test API server %.2f s" % cpu)
    return lat


def until_ungated(h, r, q, n, wait):
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and ungates(h, r, q) < n:
        time.sleep(0.2)


def put_run(h, r, rate, seconds, wait):
    """Gated pods stored through /_test/put, paced."""
    ns, q = "lat", "room"
    w = Watch(h, [ns])
    per = max(1, int(round(rate / 100.0)))
    nbatches = int(rate * seconds / per)
    ctl = harness.kt.Client(h.srv, token="")
    sent = {}
    c0 = (cpu_s(r.proc.pid), cpu_s(h.srv.proc.pid))
    t0 = time.monotonic()
    for b in range(nbatches):
        due = t0 + b * per / rate
        d = due - time.monotonic()
        if d > 0:
            time.sleep(d)
        objs = [pod(ns, "p-%06d" % (b * per + i), q) for i in range(per)]
        t = time.monotonic()
        st, _, body = ctl.request("POST", "/_test/put", {"objects": objs})
        if st != 200:
            raise RuntimeError("put: %s %s" % (st, body))
        for o in objs:
            sent[ns + "/" + o["metadata"]["name"]] = t
    got = len(sent) / (time.monotonic() - t0)
    until_ungated(h, r, q, len(sent), wait)
    time.sleep(0.3)
    cpu = (cpu_s(r.proc.pid) - c0[0], cpu_s(h.srv.proc.pid) - c0[1])
    added, ungated, never = w.result()
    ctl.close()
    return report("put, gated at creation", sent, added, ungated, never, rate, got, cpu)


def hook_run(h, r, rate, seconds, wait):
    """Pods created through the API; tally's /mutate/pods adds the gate."""
    ns, q = "hook", "room"
    st, _, body = h.c.post("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "tally-gate"},
        "webhooks": [{"name": "gate.tally.dev",
                      "clientConfig": {"url": "https://127.0.0.1:%d/mutate/pods" % r.port, "caBundle": h.ca},
                      "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                 "resources": ["pods"]}],
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                      "failurePolicy": "Ignore", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "timeoutSeconds": 5}]})
    if st != 201:
        raise RuntimeError("webhook configuration: %s %s" % (st, body))
    st, _, body = h.c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if st != 201:
        raise RuntimeError("namespace: %s %s" % (st, body))
    w = Watch(h, [ns])
    c = h.srv.client()
    sent = {}
    n = int(rate * seconds)
    before = ungates(h, r, q)
    c0 = (cpu_s(r.proc.pid), cpu_s(h.srv.proc.pid))
    t0 = time.monotonic()
    for i in range(n):
        due = t0 + i / rate
        d = due - time.monotonic()
        if d > 0:
            time.sleep(d)
        o = pod(ns, "k-%06d" % i, q, gated=False)
        del o["status"]
        t = time.monotonic()
        st, _, body = c.post("/api/v1/namespaces/%s/pods" % ns, o)
        if st != 201:
            raise RuntimeError("create: %s %s" % (st, body))
        sent[ns + "/" + o["metadata"]["name"]] = t
    got = len(sent) / (time.monotonic() - t0)
    until_ungated(h, r, q, before + len(sent), wait)
    time.sleep(0.3)
    cpu = (cpu_s(r.proc.pid) - c0[0], cpu_s(h.srv.proc.pid) - c0[1])
    added, ungated, never = w.result()
    c.close()
    return report("API create + /mutate/pods", sent, added, ungated, never, rate, got, cpu)


def held_backlog(h, r, n, wait):
    """N gated pods in a queue at its limit: held; waits until their conditions are written."""
    ns, q = "held", "full"
    pods = [pod(ns, "h-%06d" % i, q) for i in range(n)]
    for k in range(0, n, 200):
        h.srv.control("put", {"objects": pods[k:k + 200]})
    deadline = time.monotonic() + wait
    c = h.srv.client()
    while time.monotonic() < deadline:
        st, _, body = c.get("/api/v1/namespaces/%s/events" % ns)
        if st == 200 and len(body["items"]) >= n:
            break
        time.sleep(0.5)
    c.close()
    m = re.findall(r'^tally_gated_pods\{queue="%s",reason="[^"]*"\} (\d+)$' % q, metrics(h, r), re.M)
    print("  held backlog: %d pods in queue %s (at its gpu limit), %s held by the gauge, their conditions and "
          "events written" % (n, q, sum(int(x) for x in m)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tally", required=True)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--qps", default="5000")
    ap.add_argument("--burst", default="10000")
    ap.add_argument("--held", type=int, default=0)
    ap.add_argument("--hook-rate", type=float, default=0)
    ap.add_argument("--hook-seconds", type=float, default=4)
    ap.add_argument("--bound", type=int, default=600)
    ap.add_argument("--wait", type=float, default=60, help="seconds to wait for the last ungates")
    ap.add_argument("--server-latency-ms", type=float, default=0,
                    help="the test server's latency fault: that much added to every request (a real API "
                         "server's write latency, without its CPU)")
    a = ap.parse_args()
    a.replicas, a.faults, a.local = 1, False, False
    a.tally = os.path.abspath(a.tally)
    h = harness.Harness(a)
    try:
        with open("/proc/loadavg") as f:
            print("  load average before: %s" % " ".join(f.read().split()[:3]))
        for ns in ("lat", "held", "bound"):
            h.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for obj in (queue("room", -1), queue("full", 0), queue("bound-q", -1)):
            h.put(obj)
        if a.server_latency_ms:
            h.srv.control("fault", {"action": "latency", "ms": a.server_latency_ms})
            print("  the test server adds %.1f ms to every request (latency fault)" % a.server_latency_ms)
        if a.bound:
            bound(h, a.bound)
        args = ["--controllers", "gating", "--leader-elect=false", "--kube-api-qps", a.qps,
                "--kube-api-burst", a.burst]
        r = harness.Replica(h, 0, a.tally, args)
        h.replicas = [r]
        r.start()
        r.ready()
        print("  tally serve %s" % " ".join(args))
        if a.held:
            held_backlog(h, r, a.held, max(a.wait, a.held / 50.0))
        if a.rate > 0 and a.seconds > 0:
            put_run(h, r, a.rate, a.seconds, a.wait)
        if a.hook_rate > 0:
            hook_run(h, r, a.hook_rate, a.hook_seconds, a.wait)
    finally:
        h.close()


if __name__ == "__main__":
    main()
