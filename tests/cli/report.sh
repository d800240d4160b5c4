#!/usr/bin/env bash
# report.sh: structural checks of `tally simulate -o html` (docs/report.md)
# that need no browser; tests/browser/report.sh renders the page in Chromium.
#
# Usage: bash tests/cli/report.sh path/to/tally    (from the repository root)
#
# For the example cluster and for a small input built here whose pod message
# carries markup (a scheduling gate named like a <script> element):
#   - the page is one HTML5 document: starts with <!DOCTYPE html>, ends with
#     </html>, and its main elements open and close in equal numbers;
#   - it is self-contained: no http:// or https:// anywhere, no <script>,
#     <link>, <img>, <iframe>, src= attributes, url( or @import;
#   - it holds the sections, the queue names, the bars and the grouped items;
#   - input text is escaped (the <script> text appears only as &lt;script&gt;);
#   - the same input gives the same bytes.
# Prints "N passed, N failed" and exits non-zero if anything failed.
set -u

TALLY=${1:?usage: bash tests/cli/report.sh path/to/tally}
if [ ! -x "$TALLY" ]; then
    echo "report.sh: $TALLY is not an executable" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if command -v timeout >/dev/null 2>&1; then TIMEOUT=(timeout 60); else TIMEOUT=(); fi

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# has FILE TEXT: the page contains TEXT (fixed string).
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$(basename "$1") lacks: $2"; fi; }
# hasnt FILE REGEX (case-insensitive extended regex).
hasnt() {
    if grep -qiE -- "$2" "$1"; then
        bad "$(basename "$1") contains /$2/: $(grep -oiE -- "$2" "$1" | head -3 | tr '\n' ' ')"
    else
        ok
    fi
}
# balanced FILE TAG: as many <TAG ...> / <TAG> as </TAG>.
balanced() {
    local open close
    open=$(grep -oE "<$2[ >]" "$1" | wc -l)
    close=$(grep -oF "</$2>" "$1" | wc -l)
    if [ "$open" -eq "$close" ] && [ "$open" -gt 0 ]; then ok; else
        bad "$(basename "$1"): <$2> opened $open times, closed $close times"
    fi
}

# structure FILE: what every page must satisfy.
structure() {
    local f=$1
    if [ "$(head -c 15 "$f")" = "<!DOCTYPE html>" ]; then ok; else bad "$(basename "$f") does not start with <!DOCTYPE html>"; fi
    if [ "$(tail -n 1 "$f")" = "</html>" ]; then ok; else bad "$(basename "$f") does not end with </html>"; fi
    has "$f" '<meta charset="utf-8">'
    for tag in html head body header main section table thead tbody tr td th ul li details pre style; do
        balanced "$f" "$tag"
    done
    hasnt "$f" 'https?://'
    hasnt "$f" '<script|<link|<img|<iframe|<object|<embed|[[:space:]]src=|url\(|@import'
    for id in queues pending runtime runs; do
        has "$f" "<section id=\"$id\">"
    done
}

# ---- the example cluster -------------------------------------------------
if "${TIMEOUT[@]}" "$TALLY" simulate -o html examples/cluster >"$tmp/cluster.html" 2>"$tmp/err"; then ok; else
    bad "simulate -o html examples/cluster exited $?: $(head -3 "$tmp/err")"
fi
f=$tmp/cluster.html
structure "$f"
for q in research team-a team-b inference default-queue default-parent-queue; do
    has "$f" "<tr data-queue=\"$q\""
done
has "$f" '<tr data-queue="team-a" data-depth="1">'
has "$f" '<div class="bar hi" data-queue="team-a" data-resource="gpu-h200" data-kind="accounted" data-pct="100"'
has "$f" '<div class="bar ok" data-queue="research" data-resource="gpu-h200" data-kind="accounted" data-pct="80"'
has "$f" '<div class="bar ok" data-queue="team-b" data-resource="efa" data-kind="accounted" data-pct="25"'
has "$f" 'data-queue="team-a" data-resource="cpu" data-kind="spec" data-pct="35"'
has "$f" '<span class="gpu" data-product="H200" data-count="3">'
has "$f" '<li class="item" data-state="Gated" data-reason="OverLimit" data-pod="team-a/ablation-lr-sweep-3-xz7pq">'
has "$f" 'team-a has reached the limit of AccountedResource gpu-h200. Limit is 4, currently 4 used and workload requested 1'
has "$f" 'data-state="Unschedulable" data-reason="Unschedulable" data-pod="inference/embedding-batch-28c4t"'
has "$f" '<details><summary>Why: explain</summary><pre>Pod team-a/ablation-lr-sweep-3-xz7pq'
has "$f" '<tr class="available" data-runtime-pod="default/runtime-python-5c8d7f6b9-vm4tj">'
has "$f" 'data-resource="runs" data-pct="100"'
has "$f" 'data-phase="Pending" data-reason="InsufficientCapacity" data-run="default/train-resnet50-c"'
has "$f" '<pre>Run default/train-resnet50-c'
has "$f" '<time id="clock">2026-11-24T12:00:00Z</time>'
# Deterministic: the same input gives the same bytes.
"${TIMEOUT[@]}" "$TALLY" simulate -o html examples/cluster >"$tmp/cluster2.html" 2>/dev/null
if cmp -s "$f" "$tmp/cluster2.html"; then ok; else bad "two runs over examples/cluster differ"; fi
# --now is the clock shown.
"${TIMEOUT[@]}" "$TALLY" simulate --now 2026-12-01T08:30:00Z -o html examples/cluster >"$tmp/now.html" 2>/dev/null
has "$tmp/now.html" '<time id="clock">2026-12-01T08:30:00Z</time>'

# ---- a small input: markup in a message, a queue over its limit ----------
cat >"$tmp/markup.yaml" <<'EOF'
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: org
spec:
  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: -1}
    gpu: {quota: -1, limit: 4}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: full
spec:
  parentQueue: org
  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: -1}
    gpu: {quota: -1, limit: 2}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: over
spec:
  parentQueue: org
  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: 0}
    gpu: {quota: -1, limit: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: department-number-0042-computer-vision-research-training
spec:
  parentQueue: org
  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: -1}
    gpu: {quota: -1, limit: -1}
---
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {nvidia.com/gpu.product: "B200 <i>&amp;</i>"}
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}
  conditions:
  - {type: Ready, status: "True", lastTransitionTime: "2026-11-20T08:01:00Z"}
---
apiVersion: v1
kind: Pod
metadata:
  name: running-full
  namespace: ns
  labels: {kai.scheduler/queue: full}
spec:
  schedulerName: kai-scheduler
  nodeName: node-1
  containers:
  - name: main
    resources: {requests: {cpu: "1", nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: running-over
  namespace: ns
  labels: {kai.scheduler/queue: over}
spec:
  schedulerName: kai-scheduler
  nodeName: node-1
  containers:
  - name: main
    resources: {requests: {cpu: "1", nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata:
  name: gated-markup
  namespace: ns
  labels: {kai.scheduler/queue: full}
spec:
  schedulerName: kai-scheduler
  schedulingGates:
  - name: example.com/<script>alert("x&y")</script>
  containers:
  - name: main
    resources: {requests: {cpu: "1"}}
status: {phase: Pending}
EOF
"${TIMEOUT[@]}" "$TALLY" simulate -o html "$tmp/markup.yaml" >"$tmp/markup.html" 2>"$tmp/err"
f=$tmp/markup.html
structure "$f"
for q in org full over; do
    has "$f" "<tr data-queue=\"$q\""
done
# A long queue name is shown whole and wraps in its column: no rule cuts it (issue 15 item 19).
has "$f" '&nbsp;</span>department-number-0042-computer-vision-research-training'
has "$f" 'td.qname{font-weight:600;white-space:normal;overflow-wrap:anywhere}'
hasnt "$f" 'td\.qname\{[^}]*(ellipsis|nowrap|overflow:hidden)'
has "$f" '<div class="bar hi" data-queue="full" data-resource="gpu" data-kind="spec" data-pct="100"'
has "$f" '<div class="bar over" data-queue="over" data-resource="gpu" data-kind="spec" data-pct="200"'
has "$f" '<div class="bar hi" data-queue="org" data-resource="gpu" data-kind="spec" data-pct="100"'
has "$f" '<div class="bar hi" data-queue="over" data-resource="memory" data-kind="spec" data-pct="100"'
has "$f" '<div class="nolimit">1 core used &middot; no limit</div>'
has "$f" 'data-state="Gated" data-reason="SchedulingGated" data-pod="ns/gated-markup"'
has "$f" 'scheduling gate example.com/&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;, which is not'
has "$f" 'data-product="B200 &lt;i&gt;&amp;amp;&lt;/i&gt;" data-count="2"'
hasnt "$f" '<script|<i>'
has "$f" '<p class="muted">No Runtime Pods in the input.</p>'
has "$f" '<p class="muted">No Run is waiting.</p>'

echo "report.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
