#!/usr/bin/env python3
"""Over-admission across replicas (issue 14, docs/controllers.md "Reservations across replicas").

Several `tally serve` replicas decide admission for one queue (or one Runtime Pod) at once, as
behind a Service: each replica is the webhook for a share of the objects (a
ValidatingWebhookConfiguration per replica, split by an object label), and the test API server
(tests/kube/apiserver.py) calls them concurrently while it applies the writes.

  upsizes  P pods of 1 cpu, bound, in queue q whose cpu limit leaves room for H more cores; every
           round resizes all P pods to 2 cpu at once (`pods/resize`, --reserve-upsizes). At most H
           may be admitted, and the queue's spec cpu never exceeds its limit.
  claims   one Runtime Pod with capacity C of example.com/gpu and N > C Runs Scheduled on it; every
           round claims all N at once, as runtimed does (status Scheduled -> Running through
           /validate/runs-status). At most C may be admitted.

After a round the admitted objects are put back (downsize, Run back to Scheduled) and the next round
starts. With --faults every 10th round compacts the watch history in the middle of the round (every
replica relists) and every 10th (offset 5) kills the lease holder with SIGKILL mid-round and starts it
again (a leader change; its webhook calls fail meanwhile, and failurePolicy Fail denies them).

--local runs the replicas with TALLY_TEST_LOCAL_RESERVATIONS=1 (each keeps its holds to itself, the
design before this one) and then expects over-admission: the proof that the check can fail.

Prints one summary line per mode and exits 1 on any over-admission (or, with --local, on none).
"""
import argparse
import sys
import time

from harness import PODS, RUNS, Harness, Replica, write


def start_round(h, rnd):
    if h.a.stall:
        h.stall(h.a.stall)
    else:
        h.fault(rnd, "start")


def upsize_mode(h):
    a = h.a
    P, H = a.pods, a.room
    h.start_replicas(["--reserve-upsizes=120s"])
    h.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
           "status": {"allocatable": {"cpu": "256", "memory": "1Ti", "pods": "500"},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
    h.put({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "q"},
           "spec": {"resources": {"cpu": {"quota": -1, "limit": (P + H) * 1000, "overQuotaWeight": 1},
                                  "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                                  "gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}})
    for i in range(P):
        h.put({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p%02d" % i, "namespace": "default",
                            "labels": {"kai.scheduler/queue": "q", "tally-replica": str(i % a.replicas)}},
               "spec": {"schedulerName": "kai-scheduler", "nodeName": "n1",
                        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
               "status": {"phase": "Running"}})
    h.webhooks("tally-resize", "pods/resize", "", "v1", "/validate/pods-resize")
    time.sleep(0.5)

    def resize(i, cpu):
        return lambda: write(h, "PATCH", "%s/p%02d/resize" % (PODS, i),
                             {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
                             "strategic")
    stats = []
    worst = 0
    for rnd in range(a.rounds):
        fns = [resize(i, "2") for i in range(P)]
        start_round(h, rnd)
        mid = [None]

        def chaos():
            time.sleep(0.005)
            mid[0] = h.fault(rnd, "mid")
            return None, None
        res = h.concurrently(fns + [chaos])[:P]
        admitted = [i for i, (st, _) in enumerate(res) if st == 200]
        for i, (st, b) in enumerate(res):
            if st not in (200, 400, 403, 422, 500):
                print("round %d: pod p%02d: unexpected %s %s" % (rnd, i, st, b))
        pods = h.c.get(PODS).json["items"]
        spec = sum(float(p["spec"]["containers"][0]["resources"]["requests"]["cpu"]) for p in pods)
        over = max(0, len(admitted) - H)
        if spec > P + H:
            over = max(over, int(spec - (P + H)))
        worst = max(worst, over)
        stats.append(len(admitted))
        if over and not h.local:
            print("round %d: OVER-ADMITTED %d (admitted %d of room %d; spec cpu %.0f of limit %d)"
                  % (rnd, over, len(admitted), H, spec, P + H))
        if isinstance(mid[0], Replica):
            h.restart(mid[0])
        # Put the round back: the admitted pods down to 1 cpu (downsizes are always admitted).
        for i in admitted:
            for _ in range(50):
                st, b = resize(i, "1")()
                if st == 200:
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("round %d: the downsize of p%02d failed: %s" % (rnd, i, b))
        time.sleep(a.pause)
    return stats, worst, H


def claim_mode(h):
    a = h.a
    N, C = a.pods, a.room
    h.watched = "runs.kruntimes.io"
    h.start_replicas(["--controllers", "runs"])
    h.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
           "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
    h.put({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "rt-0", "namespace": "default", "labels": {"runtime": "python"},
                        "annotations": {"kruntimes.io/capacity.example.com/gpu": str(C),
                                        "kruntimes.io/capacity.runs": str(N + 4)}},
           "spec": {"nodeName": "n1", "containers": [{"name": "runtimed", "image": "x"}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    uid = h.c.get(PODS + "/rt-0").json["metadata"]["uid"]
    for i in range(N):
        h.put({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
               "metadata": {"name": "r%02d" % i, "namespace": "default", "labels": {"tally-replica": str(i % a.replicas)}},
               "spec": {"runtime": "python", "resources": {"requests": {"example.com/gpu": "1"}}},
               "status": {"phase": "Scheduled", "assignedPod": "rt-0", "assignedPodUID": uid}})
    h.webhooks("tally-claims", "runs/status", "kruntimes.io", "v1alpha1", "/validate/runs-status")
    time.sleep(0.5)

    def phase(i, ph):
        return lambda: write(h, "PATCH", "%s/r%02d/status" % (RUNS, i), {"status": {"phase": ph}})
    stats = []
    worst = 0
    for rnd in range(a.rounds):
        start_round(h, rnd)
        mid = [None]

        def chaos():
            time.sleep(0.005)
            mid[0] = h.fault(rnd, "mid")
            return None, None
        res = h.concurrently([phase(i, "Running") for i in range(N)] + [chaos])[:N]
        admitted = [i for i, (st, _) in enumerate(res) if st == 200]
        runs = h.c.get(RUNS).json["items"]
        running = sum(1 for r in runs if r.get("status", {}).get("phase") == "Running")
        over = max(0, len(admitted) - C, running - C)
        worst = max(worst, over)
        stats.append(len(admitted))
        if over and not h.local:
            print("round %d: OVER-ADMITTED %d (admitted %d, Running %d, capacity %d)" % (rnd, over, len(admitted), running, C))
        if isinstance(mid[0], Replica):
            h.restart(mid[0])
        for i in admitted:
            st, b = phase(i, "Scheduled")()
            if st != 200:
                raise RuntimeError("round %d: putting r%02d back failed: %s %s" % (rnd, i, st, b))
        time.sleep(a.pause)
    return stats, worst, C


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tally")
    p.add_argument("--mode", choices=["upsizes", "claims"], default="upsizes")
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--pods", type=int, default=16)
    p.add_argument("--room", type=int, default=8)
    p.add_argument("--pause", type=float, default=0.3, help="seconds between rounds")
    p.add_argument("--faults", action="store_true")
    p.add_argument("--local", action="store_true")
    p.add_argument("--stall", type=float, default=0, help="stall the watches this long at every round's start")
    a = p.parse_args()
    h = Harness(a)
    t0 = time.time()
    try:
        stats, worst, room = (upsize_mode if a.mode == "upsizes" else claim_mode)(h)
    finally:
        h.close()
    exact = sum(1 for s in stats if s == room)
    print("%s: %d replicas, %d rounds%s%s: admitted per round min %d mean %.2f max %d of room %d; "
          "exactly the room in %d rounds; worst over-admission %d; %.1f s"
          % (a.mode, a.replicas, a.rounds, " with faults" if a.faults else "",
             " (LOCAL holds)" if a.local else "", min(stats), sum(stats) / len(stats), max(stats), room,
             exact, worst, time.time() - t0))
    if a.local:
        return 0 if worst > 0 else 1
    return 1 if worst > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
