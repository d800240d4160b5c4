#!/usr/bin/env python3
"""Throughput of the test API server (not run by the tests):

    python3 tests/kube/bench.py [--pods 100000] [--page 500] [--events 20000]

LIST: seeds N pods, then pages through them with limit=PAGE over one keep-alive connection,
reading the bytes (no client-side JSON decoding) and, separately, with json.loads of each page.
WATCH: one watcher while the server writes one object EVENTS times (/_test/churn); the rate is
what the watcher reads.
"""
import argparse
import http.client
import json
import os
import ssl
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube_testlib import Server  # noqa: E402


def seed_file(n):
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    items = []
    for i in range(n):
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": "pod-%06d" % i, "namespace": "ns-%03d" % (i % 100),
                                   "labels": {"app": "bench", "kai.scheduler/queue": "q%d" %
                                              (i % 20)},
                                   "annotations": {"pod-group-name": "pg-%d" % (i // 8)}},
                      "spec": {"schedulerName": "kai-scheduler", "nodeName": "node-%d" % (i % 500),
                               "containers": [{"name": "main", "image": "train:1",
                                               "resources": {"requests": {"cpu": "4",
                                                                          "memory": "16Gi",
                                                                          "nvidia.com/gpu": "1"},
                                                             "limits": {"nvidia.com/gpu": "1"}}}],
                               "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
                      "status": {"phase": "Running", "conditions": [
                          {"type": "Ready", "status": "True"}]}})
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    f.close()
    return f.name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=100000)
    ap.add_argument("--page", type=int, default=500)
    ap.add_argument("--events", type=int, default=20000)
    args = ap.parse_args()
    path = seed_file(args.pods)
    t = time.time()
    s = Server("--seed", path, "--history", "1000", wait=600)
    print("seeded %d pods in %.1f s (%.0f MB seed file)" % (args.pods, time.time() - t,
                                                              os.path.getsize(path) / 1e6))
    os.remove(path)
    try:
        ctx = ssl.create_default_context(cafile=s.ca)
        for decode in (False, True):
            conn = http.client.HTTPSConnection("127.0.0.1", s.port, context=ctx, timeout=60)
            h = {"Authorization": "Bearer " + s.token}
            cont, n, pages, size = None, 0, 0, 0
            t = time.time()
            while True:
                q = "/api/v1/pods?limit=%d" % args.page + ("&continue=" + cont if cont else "")
                conn.request("GET", q, headers=h)
                r = conn.getresponse()
                body = r.read()
                size += len(body)
                pages += 1
                if decode:
                    d = json.loads(body)
                    n += len(d["items"])
                    cont = d["metadata"].get("continue")
                else:
                    i = body.find(b'"continue":"')
                    cont = body[i + 12:body.index(b'"', i + 12)].decode() if i >= 0 and \
                        i < 200 else None
                    n += body.count(b'{"metadata":')
                if not cont:
                    break
            dt = time.time() - t
            print("LIST %d pods in %d pages of %d: %.2f s (%.0f MB, %s)"
                  % (n, pages, args.page, dt, size / 1e6,
                     "json.loads of each page" if decode else "bytes only"))
            conn.close()
        conn = http.client.HTTPSConnection("127.0.0.1", s.port, context=ctx, timeout=60)
        conn.request("GET", "/api/v1/namespaces/ns-000/configmaps?watch=true&resourceVersion=0",
                     headers={"Authorization": "Bearer " + s.token})
        r = conn.getresponse()
        got = [0]
        first = [None]

        def reader():
            while got[0] < args.events:
                line = r.readline()
                if not line:
                    break
                if first[0] is None:
                    first[0] = time.time()
                got[0] += 1
        th = threading.Thread(target=reader)
        th.start()
        time.sleep(0.3)
        t = time.time()
        out = s.control("churn", {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "churn",
                                                          "namespace": "ns-000"},
                                             "data": {"i": "0"}},
                                  "count": args.events, "field": "data.i"})
        th.join(120)
        dt = time.time() - t
        print("WATCH %d events read in %.2f s: %.0f events/s (the writes alone: %.2f s, "
              "%.0f writes/s)" % (got[0], dt, got[0] / dt, out["seconds"],
                                  args.events / out["seconds"]))
    finally:
        s.stop()


if __name__ == "__main__":
    main()
