#!/usr/bin/env python3
"""Runs the test API server's own tests (tests/kube/test_*.py), each module in a process of its
own, a few at a time (they mostly wait on sockets), and prints a PASS/FAIL count.

    python3 tests/kube/run_tests.py [-j N] [MODULE...]

Exit status 0 when every test passed. Every module has a time bound (--timeout, default 120 s).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def run_one(name):
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.loadTestsFromName(name)
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
    failed = [t.id() for t, _ in result.failures + result.errors]
    print("RESULT " + json.dumps({"run": result.testsRun, "failed": failed,
                                  "skipped": len(result.skipped)}))
    return 0 if result.wasSuccessful() else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--one")
    ap.add_argument("modules", nargs="*")
    args = ap.parse_args()
    if args.one:
        return run_one(args.one)
    mods = args.modules or sorted(os.path.basename(p)[:-3]
                                  for p in glob.glob(os.path.join(HERE, "test_*.py")))
    pending = list(mods)
    running = {}
    passed = failed = 0
    bad = []
    start = time.time()
    while pending or running:
        while pending and len(running) < args.j:
            m = pending.pop(0)
            p = subprocess.Popen([sys.executable, __file__, "--one", m], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, cwd=HERE)
            running[m] = (p, time.time())
        for m, (p, t0) in list(running.items()):
            if p.poll() is None and time.time() - t0 < args.timeout:
                continue
            if p.poll() is None:
                p.kill()
            out = p.communicate()[0].decode(errors="replace")
            del running[m]
            res = None
            for line in out.splitlines():
                if line.startswith("RESULT "):
                    res = json.loads(line[7:])
            if res is None:
                failed += 1
                bad.append("%s: did not finish (exit %s, %.0f s)" % (m, p.returncode,
                                                                   time.time() - t0))
                sys.stdout.write(out)
                continue
            passed += res["run"] - len(res["failed"])
            failed += len(res["failed"])
            if res["failed"]:
                bad.extend(res["failed"])
                sys.stdout.write(out)
            print("%-18s %3d tests, %d failed (%.1f s)" % (m, res["run"], len(res["failed"]),
                                                           time.time() - t0))
        time.sleep(0.05)
    for b in bad:
        print("FAIL: " + b)
    print("kube server tests: PASS %d FAIL %d (%.1f s)" % (passed, failed, time.time() - start))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
