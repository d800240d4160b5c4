#!/usr/bin/env bash
# End-to-end checks of `tally validate` (contract section 4), run by ctest as
#   bash tests/cli/validate.sh path/to/tally
# from the repository root.
set -u
TALLY=${1:?usage: validate.sh path/to/tally}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# The example cluster is valid: no problem lines, exit 0.
out=$("$TALLY" validate examples/cluster 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && ok || bad "examples/cluster: exit $rc"
[ -z "$out" ] && ok || bad "examples/cluster printed problems: $out"

# Every broken file gives exactly its one expected line and exit 1.
for f in tests/bad/*.yaml tests/bad/*.json; do
  name=$(basename "$f")
  expected="tests/bad/expected/$name.out"
  out=$("$TALLY" validate "$f" 2>/dev/null); rc=$?
  [ "$rc" -eq 1 ] && ok || bad "$name: exit $rc, want 1"
  if [ -f "$expected" ] && [ "$out" == "$(cat "$expected")" ]; then ok; else
    bad "$name: output differs"; echo "  got:  $out"; echo "  want: $(cat "$expected" 2>/dev/null)"; fi
  [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] && ok || bad "$name: not exactly one problem line"
done

# The whole folder at once: every file's problem is still found (one bad
# document never hides another), sorted by path, line, column.
out=$("$TALLY" validate tests/bad 2>/dev/null); rc=$?
[ "$rc" -eq 1 ] && ok || bad "tests/bad: exit $rc"
sorted=$(printf '%s\n' "$out" | sort -t: -k1,1 -k2,2n -k3,3n -s)
[ "$out" == "$sorted" ] && ok || bad "tests/bad: lines are not sorted by path, line, column"
for f in tests/bad/expected/*.out; do
  line=$(cat "$f")
  printf '%s\n' "$out" | grep -qxF -- "$line" && ok || bad "tests/bad: missing $line"
done

# Unknown kinds are notes on stderr, never problems.
tmp=$(mktemp -d)
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n' > "$tmp/d.yaml"
out=$("$TALLY" validate "$tmp/d.yaml" 2>"$tmp/err"); rc=$?
[ "$rc" -eq 0 ] && [ -z "$out" ] && ok || bad "unknown kind: exit $rc, stdout '$out'"
grep -q "note:.*apps/v1 Deployment" "$tmp/err" && ok || bad "unknown kind: no note on stderr"

# A reference to an absent object is a warning (partial input is normal).
cat > "$tmp/q.yaml" <<'YAML'
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: team-x
spec:
  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: -1}
    gpu: {quota: -1, limit: -1}
  accountedResources:
  - resourceRef: gpu-h200
    limit: "4"
YAML
out=$("$TALLY" validate "$tmp/q.yaml" 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && ok || bad "missing reference: exit $rc, want 0"
[ "$out" == "$tmp/q.yaml:11:5: warning: Queue team-x: spec.accountedResources[0].resourceRef: AccountedResource \"gpu-h200\" is not in the input; every workload in this queue is blocked (AccountedResourceNotFound) until it exists" ] \
  && ok || bad "missing reference: got '$out'"

# kruntimes capacity names and DRA templates (issue 15 item 16): warnings, exit 0.
cat > "$tmp/krt.yaml" <<'YAML'
apiVersion: kruntimes.io/v1alpha1
kind: Runtime
metadata:
  name: python
  namespace: default
spec:
  capacity:
    resources:
      runs: "4"
      example.com/gpu: "1"
      gpu: "1"
  template:
    spec:
      containers:
      - name: runtime
        image: example/runtime:1
---
apiVersion: v1
kind: Pod
metadata:
  name: rt-a
  namespace: default
  labels:
    runtime: python
  annotations:
    kruntimes.io/capacity.example.com/gpu: "1"
    kruntimes.io/capacity.gpu: "1"
spec:
  containers:
  - name: runtime
    image: example/runtime:1
---
apiVersion: v1
kind: Pod
metadata:
  name: dra-a
  namespace: default
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
  - name: held
    resourceClaimTemplateName: deleted-template
  containers:
  - name: main
    image: example/main:1
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: dra-a-held-x7k2p
  namespace: default
  annotations:
    resource.kubernetes.io/pod-claim-name: held
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
status:
  reservedFor:
  - resource: pods
    name: dra-a
    uid: uid-dra-a
YAML
out=$("$TALLY" validate "$tmp/krt.yaml" 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && ok || bad "capacity names: exit $rc, want 0"
[ "$(printf '%s\n' "$out" | grep -c .)" -eq 3 ] && ok || bad "capacity names: want 3 warnings, got: $out"
printf '%s\n' "$out" | grep -F "$tmp/krt.yaml:10:24: warning: Runtime default/python: spec.capacity.resources.example.com/gpu: cannot be projected to a Pod annotation: the Runtime controller writes kruntimes.io/capacity.example.com/gpu, which is not a valid annotation key (" \
  | grep -qF 'instead' && ok || bad "Runtime capacity name with '/': $out"
printf '%s\n' "$out" | grep -F "$tmp/krt.yaml:18:1: warning: Pod default/rt-a: metadata.annotations.kruntimes.io/capacity.example.com/gpu: not a valid annotation key, so the API server rejects it (" \
  | grep -qF 'tally reads it for compatibility with the seed'"'"'s form. Give this capacity in the annotation kruntimes.io/capacities instead: {"example.com/gpu": "1"}' \
  && ok || bad "two-'/' capacity annotation: $out"
printf '%s\n' "$out" | grep -qxF "$tmp/krt.yaml:33:1: warning: Pod default/dra-a: spec.resourceClaims[0].resourceClaimTemplateName: ResourceClaimTemplate \"gpu-template\" is not in the input; the pod's claim cannot be made, so the pod cannot be placed until the template exists" \
  && ok || bad "missing ResourceClaimTemplate: $out"
# The simulation still reads the two-'/' form (compatibility) and the valid names.
"$TALLY" simulate -o json "$tmp/krt.yaml" 2>/dev/null | jq -e '.runtimePods[0].capacity == {"runs": "2", "example.com/gpu": "1", "gpu": "1"}' \
  >/dev/null && ok || bad "the two-'/' annotation must still be read"

# KAI's PodGroup webhook (issue 15 item 15): a minSubGroup above the number of direct children
# is admitted with a warning, on the PodGroup and on a subgroup; exit 0.
cat > "$tmp/over.yaml" <<'YAML'
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: over, namespace: ns1}
spec:
  queue: q
  minSubGroup: 3
  subGroups:
  - {name: mid, minSubGroup: 2}
  - {name: leaf, parent: mid, minMember: 1}
  - {name: other, minMember: 0}
YAML
out=$("$TALLY" validate "$tmp/over.yaml" 2>/dev/null); rc=$?
[ "$rc" -eq 0 ] && ok || bad "minSubGroup above the children: exit $rc, want 0"
[ "$out" == "$tmp/over.yaml:6:16: warning: PodGroup ns1/over: spec.minSubGroup: 3 exceeds the number of direct child SubGroups (2), so it can never be satisfied (KAI's webhook admits it with a warning)
$tmp/over.yaml:8:30: warning: PodGroup ns1/over: spec.subGroups[0].minSubGroup: 2 exceeds the number of direct child SubGroups (1), so it can never be satisfied (KAI's webhook admits it with a warning)" ] \
  && ok || bad "minSubGroup above the children: got '$out'"

# With the CRD of a kind in the input, a problem the CRD states is reported once, in the API
# server's words; the hand rules no CRD states (KAI's webhook rules) are still reported.
cat > "$tmp/twice.yaml" <<'YAML'
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: pg, namespace: ns1}
spec: {queue: q, minMember: -1, preemptibility: maybe}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: both, namespace: ns1}
spec: {queue: q, minMember: 2, minSubGroup: 1, subGroups: [{name: x, minMember: 1}]}
---
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: {name: r1, namespace: ns1}
spec:
  runtime: python
  mode: {task: {}, function: {handler: h}}
YAML
out=$("$TALLY" validate "$tmp/twice.yaml" tests/admit-crd/podgroups-crd.yaml tests/admit-crd/runs-crd.yaml 2>/dev/null)
want="$tmp/twice.yaml:4:18: error: PodGroup ns1/pg: spec.minMember: Invalid value: -1: should be greater than or equal to 0
$tmp/twice.yaml:4:33: error: PodGroup ns1/pg: spec.preemptibility: Unsupported value: \"maybe\": supported values: \"preemptible\", \"non-preemptible\"
$tmp/twice.yaml:9:29: error: PodGroup ns1/both: spec.minMember: minMember and minSubGroup are mutually exclusive: if minSubGroup is specified, minMember must be unset
$tmp/twice.yaml:16:3: error: Run ns1/r1: spec.mode: Invalid value: \"object\": exactly one of task or function must be set"
[ "$(printf '%s\n' "$out" | grep -v 'spec.runtime: no Runtime')" == "$want" ] && ok || bad "CRD and hand rules: got '$out'"
# Without the CRDs, the hand rules say it.
out=$("$TALLY" validate "$tmp/twice.yaml" 2>/dev/null)
[ "$(printf '%s\n' "$out" | grep -c 'error: PodGroup ns1/pg: spec.minMember: must be greater than or equal to 0$\|error: Run ns1/r1: spec.mode: exactly one of task or function must be set$')" -eq 2 ] \
  && ok || bad "hand rules without the CRDs: got '$out'"

# Unreadable input: an error line, exit 1; no arguments: usage, exit 2.
out=$("$TALLY" validate "$tmp/none.yaml" 2>/dev/null); rc=$?
[ "$rc" -eq 1 ] && [ "$out" == "$tmp/none.yaml:0:0: error: -: -: $tmp/none.yaml does not exist (no file or directory has that name)" ] && ok || bad "missing file: exit $rc '$out'"
"$TALLY" validate >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] && ok || bad "no arguments: exit $rc, want 2"
rm -rf "$tmp"

# A pipe or /dev/stdin is read to its end (it has no size to map): the same
# problem line as the file, named after the path given.
f=tests/bad/accres-bad-limit-quantity.yaml
want=$("$TALLY" validate "$f" 2>/dev/null | sed "s|^$f:|/dev/stdin:|")
out=$("$TALLY" validate /dev/stdin < "$f" 2>/dev/null); rc=$?
[ "$rc" -eq 1 ] && ok || bad "/dev/stdin: exit $rc, want 1"
[ -n "$want" ] && [ "$out" == "$want" ] && ok || bad "/dev/stdin: got '$out', want '$want'"
out=$(cat "$f" | "$TALLY" validate /dev/stdin 2>/dev/null); rc=$?
[ "$rc" -eq 1 ] && [ "$out" == "$want" ] && ok || bad "pipe: exit $rc, got '$out'"
out=$("$TALLY" validate examples/cluster/nodes.json 2>/dev/null | wc -c)
pipe=$(cat examples/cluster/nodes.json | "$TALLY" validate /dev/stdin 2>/dev/null | wc -c)
[ "$out" -eq 0 ] && [ "$pipe" -eq 0 ] && ok || bad "valid JSON through a pipe printed problems"

# CRLF line endings: the same line and column as with LF, for JSON (where
# libfyaml counts a CRLF as two lines) and YAML, syntax and value errors.
tmp=$(mktemp -d)
printf '{\n"apiVersion": "v1",\n"kind": "Node",\n"metadata": {"name": "n1"},\n"status": {"allocatable": {\n"cpu": "12x"}}}\n' > "$tmp/value.json"
cp tests/bad/json-trailing-comma.json "$tmp/syntax.json"
cp tests/bad/yaml-syntax-error.yaml "$tmp/syntax.yaml"
for f in value.json syntax.json syntax.yaml; do
  want=$("$TALLY" validate "$tmp/$f" 2>/dev/null | sed "s|^$tmp/||")
  sed 's/$/\r/' "$tmp/$f" > "$tmp/crlf-$f"
  got=$("$TALLY" validate "$tmp/crlf-$f" 2>/dev/null | sed "s|^$tmp/crlf-||")
  [ -n "$want" ] && [ "$got" == "$want" ] && ok || bad "CRLF $f: got '$got', want '$want'"
done
want=$("$TALLY" validate "$tmp/value.json" 2>/dev/null | cut -d: -f2,3)
[ "$want" == "6:8" ] && ok || bad "value.json: error at $want, want 6:8"
rm -rf "$tmp"

# An object of a known group at a version its server does not serve is an
# error and is not applied (contract section 2): a Config at kai.scheduler/
# v1alpha1 does not rename the scheduler, and a Queue at v2alpha2 does not
# exist for the pod that names it. The served versions pass silently.
tmp=$(mktemp -d)
pod='apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns, labels: {kai.scheduler/queue: team-a}}
spec:
  schedulerName: kai-scheduler
  containers: [{name: main, resources: {requests: {cpu: "1"}}}]'
res='  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: -1}
    gpu: {quota: -1, limit: -1}'
node='apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "10"}
  conditions: [{type: Ready, status: "True"}]'
printf '%s\n---\n%s\n---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-a}\nspec:\n%s\n---\n' \
  "$pod" "$node" "$res" > "$tmp/base.yaml"
printf 'apiVersion: kai.scheduler/v1alpha1\nkind: Config\nmetadata: {name: kai-config}\nspec:\n  global: {schedulerName: other}\n' \
  > "$tmp/config.yaml"
# simulate's JSON on one line, single spaces: easy to match.
flat() { tr -d '\n' | tr -s ' '; }
"$TALLY" simulate -o json "$tmp/base.yaml" "$tmp/config.yaml" >"$tmp/out" 2>"$tmp/err"; rc=$?
out=$(flat < "$tmp/out")
[ "$rc" -eq 1 ] && ok || bad "Config v1alpha1: simulate exit $rc, want 1"
[[ "$out" == *'"name": "p", "queue": "team-a", "state": "Bound",'* ]] && ok \
  || bad "Config v1alpha1 renamed the scheduler: $out"
grep -q 'config.yaml:1:13: error: Config kai-config: apiVersion: kai.scheduler/v1alpha1 is not a version of Config that tally reads (it reads kai.scheduler/v1)' "$tmp/err" \
  && ok || bad "Config v1alpha1: no error on stderr: $(cat "$tmp/err")"
sed 's|^apiVersion: scheduling.run.ai/v2$|apiVersion: scheduling.run.ai/v2alpha2|' "$tmp/base.yaml" > "$tmp/q.yaml"
"$TALLY" simulate -o json "$tmp/q.yaml" >"$tmp/out" 2>/dev/null; rc=$?
out=$(flat < "$tmp/out")
[ "$rc" -eq 1 ] && [[ "$out" == *'"state": "Gated", "node": null, "reason": "QueueDoesNotExist",'* ]] && ok \
  || bad "Queue v2alpha2 was applied: exit $rc $out"
for v in scheduling.run.ai/v2 scheduling.run.ai/v1alpha1; do
  sed "s|^apiVersion: scheduling.run.ai/v2\$|apiVersion: $v|" "$tmp/base.yaml" > "$tmp/ok.yaml"
  out=$("$TALLY" validate "$tmp/ok.yaml" 2>&1); rc=$?
  [ "$rc" -eq 0 ] && [ -z "$out" ] && ok || bad "Queue $v: exit $rc '$out'"
done
rm -rf "$tmp"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
