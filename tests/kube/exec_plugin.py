#!/usr/bin/env python3
"""The client-go exec credential plugin of the test API server's `exec` kubeconfig context.

    exec_plugin.py --dir DIR --expiry SECONDS

Prints an ExecCredential (client.authentication.k8s.io/v1) whose token is the server's admin
token (DIR/admin-token) and whose expirationTimestamp is SECONDS ahead, and appends one line to
DIR/exec.log per run (so tests can count how often a client ran it). DIR/exec.json, when it
exists, overrides per run: {"token": "...", "expiry_seconds": N, "fail": "message"}.
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--expiry", type=int, default=3600)
    args = ap.parse_args()
    d = args.dir
    over = {}
    try:
        with open(os.path.join(d, "exec.json")) as f:
            over = json.load(f)
    except (OSError, ValueError):
        over = {}
    with open(os.path.join(d, "exec.log"), "a") as f:
        f.write("%s pid=%d\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.getpid()))
    if over.get("fail"):
        sys.stderr.write("exec_plugin: %s\n" % over["fail"])
        return 1
    token = over.get("token")
    if not token:
        with open(os.path.join(d, "admin-token")) as f:
            token = f.read().strip()
    expiry = int(over.get("expiry_seconds", args.expiry))
    cred = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
            "status": {"token": token,
                       "expirationTimestamp": time.strftime(
                           "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + expiry))}}
    sys.stdout.write(json.dumps(cred) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
