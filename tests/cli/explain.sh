#!/usr/bin/env bash
# End-to-end checks of `tally explain` on the example cluster (contract
# section 8), run by ctest from the repository root:
#   bash tests/cli/explain.sh path/to/tally
set -u
TALLY=${1:?usage: explain.sh path/to/tally}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
has() { grep -qF -- "$2" <<<"$1" && ok || bad "$3: missing '$2'"; }

# A Gated pod: its queue path, the grouped node reasons, what to change.
out=$("$TALLY" explain examples/cluster pod team-a/ablation-lr-sweep-3-xz7pq 2>&1); rc=$?
[ "$rc" -eq 0 ] && ok || bad "gated pod: exit $rc"
has "$out" "state Gated (OverLimit)" gated
has "$out" "gpu-h200         used 4, limit 4" gated
has "$out" "1 node: gpu-h200 limit of queue team-a (4/4, requesting 1)" gated
has "$out" "2 nodes: node(s) didn't match Pod's node affinity/selector" gated
has "$out" "raise the gpu-h200 limit of queue team-a from 4 to at least 5, or free 1 of it" gated

# An Unschedulable pod: node reasons and the resource to free.
out=$("$TALLY" explain examples/cluster pod inference/embedding-batch-28c4t 2>&1)
has "$out" "state Unschedulable (Unschedulable)" unschedulable
has "$out" "1 node: Insufficient cpu" unschedulable
has "$out" "free cpu on a node that passes the other checks" unschedulable

# A bound pod: what it is charged on its node.
out=$("$TALLY" explain examples/cluster pod team-a/pretrain-llama3-worker-0-0-7kq2d 2>&1)
has "$out" "state Bound on h200-2" bound
has "$out" "gpu-h200         used 4, limit 4; this pod 2" bound

# A bound DRA pod: the devices its claims get on its node (issue 18), and the
# subrequest of firstAvailable that was chosen.
out=$("$TALLY" explain tests/scenarios/pods-dra-gpu-count/input.yaml pod ns/d1 2>&1)
has "$out" "devices on gb-1:" dra
has "$out" "ResourceClaim ns/d1-gpus (pod claim gpus, from a template)" dra
has "$out" "request gpus: gpu.nvidia.com/gb-1/gpu-0 (class gpu.nvidia.com)" dra
has "$out" "request gpus: gpu.nvidia.com/gb-1/gpu-1 (class gpu.nvidia.com)" dra
out=$("$TALLY" explain tests/scenarios/pods-dra-shared-claim/input.yaml pod ns/a2 2>&1)
has "$out" "(pod claim gpus): allocated before this run" dra-shared  # a2 reuses the claim a1 allocated
out=$("$TALLY" explain tests/scenarios/pods-dra-first-available/input.yaml pod ns/p2 2>&1)
has "$out" "request gpus/mig: gpu.nvidia.com/gb-1/mig-0 (class mig.nvidia.com)" dra-first-available

# A Pending Run: every Runtime Pod with its projected load and why it was filtered.
out=$("$TALLY" explain examples/cluster run default/train-resnet50-c 2>&1)
has "$out" "phase Pending (InsufficientCapacity)" run
has "$out" "example.com/gpu      capacity 1, used 1, +1 => 2.000" run
has "$out" "filtered: does not advertise example.com/gpu" run

# A queue: usage against every limit and the pods that charge it.
out=$("$TALLY" explain examples/cluster queue research 2>&1)
has "$out" "Queue research, top level" queue
has "$out" "gpu-h200         used 8, limit 10" queue
has "$out" "team-a/pretrain-llama3-worker-0-1-m4vzt (team-a, Bound on h200-1)" queue

# Unknown targets and bad usage.
"$TALLY" explain examples/cluster pod team-a/nope >/dev/null 2>&1; rc=$?
[ "$rc" -eq 1 ] && ok || bad "unknown pod: exit $rc"
"$TALLY" explain examples/cluster thing x >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] && ok || bad "bad kind: exit $rc"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
