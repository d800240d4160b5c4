#!/usr/bin/env bash
# scenarios.sh: end-to-end scenario tests of `tally simulate -o json`.
#
# Usage (from the repository root, as ctest runs it):
#   bash tests/cli/scenarios.sh path/to/tally [SCENARIO_DIR...]
#
# Every directory tests/scenarios/*/ that holds an input.yaml is one scenario:
#   input.yaml     the objects (any kinds simulate reads)
#   args           optional: one line of extra simulate flags, such as
#                  --now 2026-11-24T12:00:10Z (split on whitespace)
#   expected.json  the exact stdout of `tally simulate -o json $(cat args) input.yaml`
# A scenario passes when stdout equals expected.json byte for byte and the exit
# status is 0; on a mismatch the unified diff (expected -> actual) is printed.
# With SCENARIO_DIR arguments only those directories are run.
set -u

if [ $# -lt 1 ]; then
    echo "usage: bash tests/cli/scenarios.sh path/to/tally [SCENARIO_DIR...]" >&2
    exit 2
fi
tally=$1
shift
case $tally in
    /*) ;;
    *) tally=$PWD/$tally ;;
esac
if [ ! -x "$tally" ]; then
    echo "scenarios.sh: $tally is not an executable" >&2
    exit 2
fi

if [ $# -gt 0 ]; then
    dirs=("$@")
else
    shopt -s nullglob
    dirs=(tests/scenarios/*/)
    shopt -u nullglob
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
failures=()
for dir in "${dirs[@]}"; do
    dir=${dir%/}
    [ -f "$dir/input.yaml" ] || continue
    name=${dir##*/}
    if [ ! -f "$dir/expected.json" ]; then
        echo "FAIL $name: no expected.json"
        failed=$((failed + 1))
        failures+=("$name")
        continue
    fi
    extra=()
    if [ -f "$dir/args" ]; then
        read -r -a extra < "$dir/args" || true
    fi
    status=0
    (cd "$dir" && "$tally" simulate -o json "${extra[@]}" input.yaml) \
        > "$tmp/stdout" 2> "$tmp/stderr" || status=$?
    ok=1
    if [ "$status" -ne 0 ]; then
        echo "FAIL $name: exit status $status (want 0)"
        sed 's/^/    stderr: /' "$tmp/stderr" | head -n 20
        ok=0
    fi
    if ! cmp -s "$dir/expected.json" "$tmp/stdout"; then
        echo "FAIL $name: output differs from expected.json (- expected, + actual)"
        diff -u --label "$name/expected.json" --label "$name/actual" \
            "$dir/expected.json" "$tmp/stdout"
        ok=0
    fi
    if [ $ok -eq 1 ]; then
        echo "ok   $name"
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures+=("$name")
    fi
done

# Options may follow the paths (`tally simulate DIR -o json`); after `--`
# everything is a path.
a=$("$tally" simulate -o json --now 2026-11-29T12:00:00Z examples/cluster 2>/dev/null)
b=$("$tally" simulate examples/cluster -o json --now=2026-11-29T12:00:00Z 2>/dev/null)
if [ -n "$a" ] && [ "$a" == "$b" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); failures+=("options-after-paths"); fi
"$tally" simulate -- -o >/dev/null 2>&1; rc=$?
if [ $rc -eq 1 ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); failures+=("double-dash-path (exit $rc, want 1)"); fi

echo "$passed passed, $failed failed"
if [ $failed -ne 0 ]; then
    echo "failed: ${failures[*]}"
    exit 1
fi
if [ $passed -eq 0 ]; then
    echo "scenarios.sh: no scenarios found under tests/scenarios/" >&2
    exit 1
fi
exit 0
