#!/usr/bin/env bash
# kaisnap.sh: KAI Scheduler snapshots read wherever a file is (contract section 2, docs/input.md):
# the ZIP that KAI's snapshot plugin serves at /get-snapshot, the bare snapshot.json in it, and
# either from a pipe. tests/kaisnap/snapshot.json is written as the plugin writes it (objects
# without apiVersion or kind, Go's field names in schedulerParams, kinds tally does not read).
#   bash tests/cli/kaisnap.sh path/to/tally
set -u
tally=$1
source tests/cli/lib/harness.sh kaisnap.sh python3
fix=tests/kaisnap

zipit() {  # zipit OUT.zip ENTRY-NAME FILE [deflate|store]
  python3 - "$@" <<'PY'
import sys, zipfile
out, name, src = sys.argv[1:4]
mode = zipfile.ZIP_STORED if len(sys.argv) > 4 and sys.argv[4] == "store" else zipfile.ZIP_DEFLATED
with zipfile.ZipFile(out, "w", mode) as z:
    z.write(src, name)
PY
}

check_same() {  # check_same WHAT FILE-OF-OUTPUT
  if cmp -s "$fix/expected.json" "$2"; then ok; else bad "$1: output differs"; diff "$fix/expected.json" "$2" | head -20; fi
}

"$tally" simulate -o json "$fix/snapshot.json" >"$tmp/bare.json" 2>"$tmp/bare.err"
[ $? -eq 0 ] && ok || bad "bare snapshot.json: exit status"
check_same "bare snapshot.json" "$tmp/bare.json"
# The scheduler name comes from schedulerParams.SchedulerName: the pods are tally's.
grep -q '"name": "train-0"' "$tmp/bare.json" && ok || bad "schedulerParams.SchedulerName not applied"

zipit "$tmp/snapshot.zip" snapshot.json "$fix/snapshot.json"
"$tally" simulate -o json "$tmp/snapshot.zip" >"$tmp/zip.json" 2>"$tmp/zip.err"
[ $? -eq 0 ] && ok || bad "snapshot.zip: exit status"
check_same "snapshot.zip (deflated)" "$tmp/zip.json"
zipit "$tmp/stored.zip" snapshot.json "$fix/snapshot.json" store
"$tally" simulate -o json "$tmp/stored.zip" >"$tmp/stored.json" 2>/dev/null
check_same "snapshot.zip (stored)" "$tmp/stored.json"
"$tally" simulate -o json /dev/stdin <"$tmp/snapshot.zip" >"$tmp/pipe.json" 2>/dev/null
check_same "snapshot.zip from a pipe" "$tmp/pipe.json"
"$tally" validate "$tmp/snapshot.zip" >"$tmp/v.out" 2>&1
[ $? -eq 0 ] && ok || { bad "validate snapshot.zip"; cat "$tmp/v.out"; }

# A flag beats schedulerParams: with another scheduler name no pod is tally's.
"$tally" simulate -o json --scheduler-name someone-else "$tmp/snapshot.zip" >"$tmp/flag.json" 2>/dev/null
grep -q '"name": "train-0"' "$tmp/flag.json" && bad "--scheduler-name did not win over schedulerParams" || ok

# Broken archives: refused with the reason, exit 1.
python3 -c "
import zipfile
with zipfile.ZipFile('$tmp/other.zip', 'w') as z: z.writestr('cluster.json', '{}')"
"$tally" simulate "$tmp/other.zip" >/dev/null 2>"$tmp/other.err"
[ $? -eq 1 ] && grep -q "holds no snapshot.json" "$tmp/other.err" && ok || { bad "ZIP without snapshot.json"; cat "$tmp/other.err"; }
head -c 200 "$tmp/snapshot.zip" >"$tmp/cut.zip"
"$tally" simulate "$tmp/cut.zip" >/dev/null 2>"$tmp/cut.err"
[ $? -eq 1 ] && grep -q "ZIP" "$tmp/cut.err" && ok || { bad "truncated ZIP"; cat "$tmp/cut.err"; }

echo "kaisnap.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
