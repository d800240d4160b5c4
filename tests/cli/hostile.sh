#!/usr/bin/env bash
# Hostile and broken input (issue 7): every file gets clear errors, and tally
# never crashes, hangs, or grows without bound. Each case runs under a time
# limit; peak memory is measured with /usr/bin/time and bounded.
#   bash tests/cli/hostile.sh path/to/tally
set -u
TALLY=${1:?usage: hostile.sh path/to/tally}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Sanitizer builds use about three times the memory: scale the bounds.
scale=1
case "$TALLY" in *asan*) scale=3 ;; esac

# run NAME FILE MAX_RSS_MB: validate must finish in 30 s, exit 0 or 1 (never a
# signal), print at least one problem line for broken input, and stay under the bound.
run() {
  local name=$1 file=$2 max=$3 want_problem=${4:-yes}
  timeout 30 /usr/bin/time -o "$tmp/time" -f "%M" "$TALLY" validate "$file" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then bad "$name: exit $rc (crash or timeout)"; return; fi
  ok
  local kb; kb=$(tail -1 "$tmp/time")
  [ "$kb" -le $((max * 1024 * scale)) ] && ok || bad "$name: peak RSS ${kb} KB over $((max * scale)) MB"
  if [ "$want_problem" = yes ]; then
    grep -q ": error: " "$tmp/out" && ok || bad "$name: no error line"
  fi
  printf '%-28s rc=%d peak=%6d KB  %s\n' "$name" "$rc" "$kb" "$(head -c 140 "$tmp/out" | head -1)"
}

# Truncated YAML (a real pod cut mid-way).
head -c 300 examples/cluster/pods-team-a.yaml > "$tmp/truncated.yaml"
run truncated "$tmp/truncated.yaml" 64 no
# Deep nesting: 100000 nested flow lists inside an object.
{ printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: deep}\nx: '; head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; echo; } > "$tmp/deep.yaml"
run deep-nesting "$tmp/deep.yaml" 128
# A 10 MB string value in a label.
{ printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: big\n  labels:\n    x: "'; head -c 10000000 /dev/zero | tr '\0' 'a'; printf '"\n'; } > "$tmp/bigstring.yaml"
run 10mb-string "$tmp/bigstring.yaml" 128 no
# A 20 MB string: over the 16 MiB scalar limit.
{ printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: huge\n  annotations:\n    x: "'; head -c 20000000 /dev/zero | tr '\0' 'b'; printf '"\n'; } > "$tmp/hugestring.yaml"
run 20mb-string "$tmp/hugestring.yaml" 160
# Huge numbers where quantities go.
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {cpu: 1e999999999, memory: 99999999999999999999999999999999999999999}\n' > "$tmp/huge-numbers.yaml"
run huge-numbers "$tmp/huge-numbers.yaml" 64
# Wrong types everywhere.
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: [a, b]}\nspec: {containers: 5, nodeSelector: x, tolerations: {a: b}, priority: "high"}\n' > "$tmp/wrong-types.yaml"
run wrong-types "$tmp/wrong-types.yaml" 64
# Duplicate keys.
printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  name: b\n' > "$tmp/dup-keys.yaml"
run duplicate-keys "$tmp/dup-keys.yaml" 64
# 200,000 keys in one map (a duplicate among them), in a file and in an
# AdmissionReview: duplicate detection must not be quadratic (it was: 9 s for
# 60,000 keys), so both finish well inside the 30 s limit.
awk 'BEGIN { print "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: many\n  labels:";
             for (i = 0; i < 200000; i++) printf "    k%d: v\n", i; print "    k7: again" }' > "$tmp/many-keys.yaml"
run many-keys "$tmp/many-keys.yaml" 256
grep -q 'duplicate key "k7"' "$tmp/out" && ok || bad "many-keys: the duplicate was not reported"
awk 'BEGIN { printf "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", ";
             printf "\"request\": {\"uid\": \"u\", \"labels\": {";
             for (i = 0; i < 200000; i++) printf "%s\"k%d\": 1", (i ? ", " : ""), i; print "}}}" }' > "$tmp/many-keys.json"
timeout 30 "$TALLY" admit examples/cluster < "$tmp/many-keys.json" > "$tmp/out" 2>/dev/null
rc=$?
[ "$rc" -eq 0 ] && grep -q '"uid": "u"' "$tmp/out" && ok || bad "many-keys review: exit $rc (timeout or crash)"

# Invalid UTF-8 (the libfyaml hang the fuzzer found) and binary garbage.
printf '%%\xba\n' > "$tmp/bad-utf8.yaml"
run invalid-utf8 "$tmp/bad-utf8.yaml" 64
head -c 65536 /dev/urandom > "$tmp/garbage.yaml"
run binary-garbage "$tmp/garbage.yaml" 64
# Aliases (billion laughs).
printf 'a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n' > "$tmp/laughs.yaml"
run billion-laughs "$tmp/laughs.yaml" 64 no
# Many documents: 200000 empty ones and 20000 objects.
{ for i in $(seq 20000); do printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns-%d}\n---\n---\n' "$i"; done; } > "$tmp/many.yaml"
run many-documents "$tmp/many.yaml" 128 no
# Broken JSON.
printf '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x"' > "$tmp/broken.json"
run broken-json "$tmp/broken.json" 64

# simulate and admit get the same hostile inputs without crashing.
for f in "$tmp"/*.yaml; do
  timeout 30 "$TALLY" simulate -o json "$f" >/dev/null 2>&1; rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] && ok || bad "simulate $(basename "$f"): exit $rc"
done
for f in "$tmp"/garbage.yaml "$tmp"/deep.yaml "$tmp"/bad-utf8.yaml; do
  timeout 30 "$TALLY" admit examples/cluster < "$f" >/dev/null 2>&1; rc=$?
  [ "$rc" -eq 1 ] && ok || bad "admit $(basename "$f"): exit $rc (want 1: not a review)"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
