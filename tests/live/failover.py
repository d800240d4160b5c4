#!/usr/bin/env python3
"""Failover of the gating controller (issue 14, docs/controllers.md "Leader election").

Two (or more) `tally serve --controllers gating` replicas with short lease timings (--lease-duration
2s, --renew-deadline 1500ms, --retry-period 200ms) run against the test API server. Each round:

  1. 2*R pods of 1 cpu are created with tally's gate in queue q, whose cpu limit has room for R;
  2. the lease holder is killed with SIGKILL at a moment that moves from round to round (before,
     during and after its ungate writes);
  3. another replica must hold the lease within lease duration + 2 x retry period (+ the 100 ms this
     harness polls with), and
  4. the round settles with exactly R pods ungated (never more: no gate removed wrongly), each with
     exactly one Admitted event and one successful ungate patch (no gate removed twice), the
     others still gated;
  5. the killed replica is started again and the round's pods are deleted.

Prints a summary (takeover times: max and p50) and exits 1 on any violation.
"""
import argparse
import sys
import time

from harness import PODS, Harness

GATE = "kai.scheduler/queue-admission"


def gated(p):
    return any(g.get("name") == GATE for g in p["spec"].get("schedulingGates") or [])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tally")
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--room", type=int, default=3)
    a = p.parse_args()
    a.faults = False
    h = Harness(a)
    R = a.room
    bound = 2.0 + 2 * 0.2 + 0.1
    takeovers, bad = [], []
    t0 = time.time()
    try:
        h.c.post("/apis/scheduling.run.ai/v2/queues",
                 {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                  "metadata": {"name": "q", "labels": {"kai.scheduler/queue-admission-gating": "true"}},
                  "spec": {"resources": {"cpu": {"quota": -1, "limit": R * 1000, "overQuotaWeight": 1},
                                         "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                                         "gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}})
        h.start_replicas(["--controllers", "gating"])
        for rnd in range(a.rounds):
            deadline = time.time() + 5
            while not h.leader() and time.time() < deadline:
                time.sleep(0.05)
            leader = h.leader()
            if not leader:
                bad.append("round %d: no replica leads" % rnd)
                break
            h.srv.control("requests/clear", {})
            names = ["r%03d-%d" % (rnd, i) for i in range(2 * R)]
            for n in names:
                st, _, b = h.c.post(PODS, {
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": n, "namespace": "default", "labels": {"kai.scheduler/queue": "q"}},
                    "spec": {"schedulerName": "kai-scheduler", "schedulingGates": [{"name": GATE}],
                             "containers": [{"name": "c", "image": "x",
                                             "resources": {"requests": {"cpu": "1"}}}]}})
                if st != 201:
                    raise RuntimeError("pod %s: %s %s" % (n, st, b))
            time.sleep((rnd % 5) * 0.05)  # kill before, during or after the ungates
            leader.kill()
            killed = time.time()
            new = None
            while time.time() - killed < 10:
                new = h.leader()
                if new:
                    break
                time.sleep(0.1)
            took = time.time() - killed
            takeovers.append(took)
            if not new:
                bad.append("round %d: nobody took over in 10 s" % rnd)
                break
            if took > bound:
                bad.append("round %d: takeover after %.2f s (bound %.2f s)" % (rnd, took, bound))
            deadline = time.time() + 10
            while time.time() < deadline:
                pods = [x for x in h.c.get(PODS).json["items"] if x["metadata"]["name"] in names]
                free = [x["metadata"]["name"] for x in pods if not gated(x)]
                if len(free) >= R:
                    break
                time.sleep(0.1)
            time.sleep(0.5)  # anything more would be wrong: give it the chance to show
            pods = [x for x in h.c.get(PODS).json["items"] if x["metadata"]["name"] in names]
            free = sorted(x["metadata"]["name"] for x in pods if not gated(x))
            if len(free) != R:
                bad.append("round %d: %d pods ungated, want exactly %d: %s" % (rnd, len(free), R, free))
            evs = h.c.get("/api/v1/namespaces/default/events").json["items"]
            for n in names:
                adm = sum(1 for e in evs if e.get("reason") == "Admitted" and e["involvedObject"]["name"] == n)
                if adm != (1 if n in free else 0):
                    bad.append("round %d: %s has %d Admitted events" % (rnd, n, adm))
            reqs = h.srv.control("requests", method="GET")["requests"]
            for n in free:
                ok = sum(1 for q in reqs if q.get("method") == "PATCH" and q.get("path", "").endswith("/pods/" + n)
                         and q.get("status") == 200)
                if ok != 1:
                    bad.append("round %d: %s ungated by %d successful patches" % (rnd, n, ok))
            leader.start()
            leader.ready()
            for n in names:
                h.c.delete(PODS + "/" + n)
            for e in evs:
                h.c.delete("/api/v1/namespaces/default/events/" + e["metadata"]["name"])
    finally:
        h.close()
    takeovers.sort()
    if takeovers:
        print("failover: %d replicas, %d rounds: takeover p50 %.2f s, max %.2f s (bound %.2f s); %d violations; %.1f s"
              % (a.replicas, len(takeovers), takeovers[len(takeovers) // 2], takeovers[-1], bound, len(bad),
                 time.time() - t0))
    for b in bad[:20]:
        print("FAIL:", b)
    return 1 if bad or not takeovers else 0


if __name__ == "__main__":
    sys.exit(main())
