#!/usr/bin/env python3
"""A SIGHUP reload of --state files while upsizes are being decided (issue 17 item 3), one replica of
`tally serve --reserve-upsizes` on loopback, no API server:

    python3 tests/live/reload_race.py path/to/tally [--rounds N] [--pad N] [--inflight N]

Each round starts a server on a state S0 whose queue has room for 8 upsizes (24 pods of 500m under a
16-core limit, each upsize +500m), admits 8 upsizes (the queue is then full: 8 reservations), writes a
state S1 that shows those 8 enacted (renamed into place), sends `--inflight` more upsizes at once whose
reviews carry a padding array of `--pad` elements (so that each takes a while to parse: the decision
holds its state while it does), and sends SIGHUP while they are being decided. S1 is full and the
reservations it settles are in its pods, so every one of those upsizes must be denied; a decision
that pairs the old state S0 with the ledger reconciled against S1 sees 4 free cores and admits.

Prints one line per round and a summary; exits 1 if any upsize was over-admitted or a round did not
run as designed (the reload not during the decisions). Bounded: every request and wait has a timeout.
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

from serve_lib import Server, make_cert

NPODS = 24   # 24 x 500m = 12 cores of a 16-core limit: room for 8 upsizes of +500m
FILL = 8


def pod(i, cpu):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p%02d" % i, "namespace": "team", "uid": "uid-p%02d" % i,
                         "labels": {"kai.scheduler/queue": "q"}},
            "spec": {"schedulerName": "kai-scheduler", "nodeName": "n1",
                     "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running"}}


QUEUE = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "q"},
         "spec": {"resources": {"cpu": {"quota": -1, "limit": 16000, "overQuotaWeight": 1},
                                "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                                "gpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}}


def write_state(d, enacted):
    """The state file, replaced by a rename: pods below `enacted` at 1 cpu, the rest at 500m."""
    items = [QUEUE] + [pod(i, "1" if i < enacted else "500m") for i in range(NPODS)]
    tmp = os.path.join(d, ".state.json.new")
    with open(tmp, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    os.rename(tmp, os.path.join(d, "state", "state.json"))


def review(i, pad):
    r = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
         "request": {"uid": "up-%02d" % i, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                     "subResource": "resize", "operation": "UPDATE", "namespace": "team",
                     "name": "p%02d" % i, "object": pod(i, "1"), "oldObject": pod(i, "500m")}}
    body = json.dumps(r)
    if pad:
        # Unread by the decision, parsed all the same: a large review's parse time.
        body = body[:-1] + ',"padding":[' + ",".join(["0"] * pad) + "]}"
    return body.encode()


def one_round(tally, d, pad, inflight, hup_after):
    write_state(d, 0)
    s = Server(tally, d, ["--reserve-upsizes=60s"])

    def post(body):
        status, data = s.request("POST", "/validate/pods-resize", body)
        if status != 200:
            raise RuntimeError("HTTP %d: %s" % (status, data[:300]))
        return json.loads(data)["response"]["allowed"]

    try:
        filled = sum(post(review(i, 0)) for i in range(FILL))
        if filled != FILL:
            raise RuntimeError("only %d of the %d filling upsizes were admitted" % (filled, FILL))
        write_state(d, FILL)
        bodies = [review(FILL + k, pad) for k in range(inflight)]
        results = [None] * inflight
        done = []

        def send(k):
            try:
                results[k] = post(bodies[k])
            except Exception as e:  # noqa: BLE001 - reported below
                results[k] = e
            done.append(time.time())

        threads = [threading.Thread(target=send, args=(k,)) for k in range(inflight)]
        t0 = time.time()
        for t in threads:
            t.start()
        time.sleep(hup_after)
        s.proc.send_signal(signal.SIGHUP)
        t_hup = time.time()
        for t in threads:
            t.join(120)
        deadline = time.time() + 10
        reloads = lambda: open(s.log).read().count("event=state-reloaded")  # noqa: E731
        while reloads() < 1 and time.time() < deadline:
            time.sleep(0.05)
        errors = [r for r in results if not isinstance(r, bool)]
        if errors:
            raise RuntimeError("a request failed: %s" % errors[0])
        if reloads() != 1:
            raise RuntimeError("the SIGHUP reload did not happen")
        during = sum(1 for t in done if t > t_hup)
        return sum(results), during, time.time() - t0
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tally")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pad", type=int, default=500000)  # under serve's 600,000-value cap per review
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--hup-after", type=float, default=0.15)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="tally-reload-race-")
    try:
        os.mkdir(os.path.join(d, "state"))
        make_cert(d)
        over = bad_rounds = 0
        for rnd in range(a.rounds):
            # A round proves something only when the reload lands while answers are still due. On
            # a fast, quiet machine every answer may come before the SIGHUP: that round is run again
            # with the SIGHUP sent sooner (half the delay, up to four times). Every run's
            # admissions count.
            hup = a.hup_after
            for _attempt in range(5):
                admitted, during, took = one_round(os.path.abspath(a.tally), d, a.pad, a.inflight, hup)
                over += admitted
                if during > 0:
                    break
                hup /= 2
            ok = during > 0
            bad_rounds += not ok
            print("round %d: %d of %d in-flight upsizes admitted over a full queue (want 0); %d answered "
                  "after the SIGHUP; %.1f s%s" % (rnd, admitted, a.inflight, during, took,
                                                  "" if ok else " (the reload came after every answer)"),
                  flush=True)
        print("reload_race: %d rounds, %d upsizes over-admitted, %d rounds without a reload mid-flight"
              % (a.rounds, over, bad_rounds))
        return 1 if over or bad_rounds else 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
