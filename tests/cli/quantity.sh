#!/usr/bin/env bash
# quantity.sh: end-to-end checks of `tally quantity` (contract section 6,
# docs/quantity.md "The command").
#
# Usage: bash tests/cli/quantity.sh /path/to/tally    (from the repo root)
#
# Each check runs the binary once and compares the exact bytes of stdout and
# the exit status; stderr must be empty when the status is 0 and non-empty
# otherwise (every ERROR line and every usage error explains itself there).
# Prints "N passed, N failed" and exits non-zero if anything failed.
set -u

TALLY=${1:?usage: bash tests/cli/quantity.sh /path/to/tally}
if [ ! -x "$TALLY" ]; then
    echo "quantity.sh: $TALLY is not an executable" >&2
    exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A hang (say, on a huge exponent) must fail the check, not the whole run.
if command -v timeout >/dev/null 2>&1; then
    TIMEOUT=(timeout 20)
else
    TIMEOUT=()
fi

pass=0
fail=0

# check NAME STATUS STDOUT STDIN [ARG...]
#   STDOUT and STDIN are printf %b strings ('\n' is a newline, '\r' a CR).
#   STDIN "<none>" means stdin is /dev/null.
check() {
    local name=$1 want_status=$2 want_out=$3 input=$4 status why=""
    shift 4
    printf '%b' "$want_out" >"$tmp/want"
    if [ "$input" = "<none>" ]; then
        "${TIMEOUT[@]}" "$TALLY" quantity "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
    else
        printf '%b' "$input" | "${TIMEOUT[@]}" "$TALLY" quantity "$@" >"$tmp/out" 2>"$tmp/err"
    fi
    status=$?
    if [ "$status" -ne "$want_status" ]; then
        why="exit status $status, want $want_status"
    elif ! cmp -s "$tmp/want" "$tmp/out"; then
        why="stdout differs"
    elif [ "$want_status" -eq 0 ] && [ -s "$tmp/err" ]; then
        why="unexpected stderr"
    elif [ "$want_status" -ne 0 ] && [ ! -s "$tmp/err" ]; then
        why="no message on stderr"
    fi
    if [ -z "$why" ]; then
        pass=$((pass + 1))
        return
    fi
    fail=$((fail + 1))
    echo "FAIL: $name: $why"
    echo "  args: $*"
    echo "  --- want stdout"; sed 's/^/  | /' "$tmp/want"
    echo "  --- got stdout";  sed 's/^/  | /' "$tmp/out"
    echo "  --- stderr";      sed 's/^/  | /' "$tmp/err"
}

# check_stdout_has NAME STATUS TEXT [ARG...]: for --help, whose text may change.
check_stdout_has() {
    local name=$1 want_status=$2 text=$3 status
    shift 3
    "${TIMEOUT[@]}" "$TALLY" quantity "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
    status=$?
    if [ "$status" -eq "$want_status" ] && grep -q -- "$text" "$tmp/out" && [ ! -s "$tmp/err" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $name: status $status (want $want_status), stdout lacks '$text' or stderr not empty"
    fi
}

# --- canonical form of arguments ---------------------------------------------
check "canonical forms" 0 '1Gi\n500m\n1e3\n100e12\n1200\n1536Mi\n9223372036854775807\n0\n' '<none>' \
    1024Mi 0.5 1e3 1e14 1.2e3 1.5Gi 9Ei 0
check "rounding to 1n" 0 '4n\n-4n\n100u\n' '<none>' 3.001n -3.001n 0.1m
check "DecimalSI above E keeps E" 0 '1000E\n' '<none>' 1000E
check "wide mantissa" 0 '10000000000000000000100m\n' '<none>' 10000000000000000000100m
check "ERROR line, others still printed" 1 '1k\nERROR\n2k\n' '<none>' 1k bogus 2k
check "empty argument" 1 'ERROR\n' '<none>' ''
check "spaces are errors" 1 'ERROR\nERROR\n' '<none>' ' 1' '1 '
check "out of tally's range" 1 'ERROR\n' '<none>' 1e30
check "huge exponent" 1 'ERROR\nERROR\n' '<none>' 1e99999999999 1e9999999999999999999
check "arguments win over stdin" 0 '1\n' '5\n' 1

# --- arguments starting with '-' ---------------------------------------------
check "bare negative quantity" 0 '-5m\n' '<none>' -5m
check "negative after --" 0 '-5m\n-1Gi\n' '<none>' -- -5m -1024Mi
check "option words after -- are quantities" 1 'ERROR\nERROR\n' '<none>' -- --value --foo
check "bare non-option dash word" 1 'ERROR\n' '<none>' -x
check "lone minus is 0, as upstream" 0 '0\n' '<none>' -

# --- --value and --milli -----------------------------------------------------
check "--value rounds away from zero" 0 '2\n6\n1\n-1\n-2\n1024\n9223372036854775807\n' '<none>' \
    --value 1.5 5300m 1n -1n -1.5 1Ki 9Ei
check "--value out of int64" 1 'ERROR\n-9223372036854775808\nERROR\n' '<none>' \
    --value 9223372036854775808 -9223372036854775808 10E
check "--value with a parse error" 1 'ERROR\n3\n' '<none>' --value x 3
check "--milli" 0 '1500\n1\n1\n5300\n-1\n' '<none>' --milli 1.5 1n 0.1m 5.3 -1n
check "--milli out of int64" 1 'ERROR\n9223372036854775807\n' '<none>' \
    --milli 9Ei 9223372036854775.807
check "option after the quantities" 0 '2\n' '<none>' 1.5 --value
check "--value then -- then negative" 0 '-2\n' '<none>' --value -- -1.5

# --- stdin -------------------------------------------------------------------
check "stdin lines" 0 '1k\n2Mi\n500m\n' '1k\n2048Ki\n0.5\n'
check "stdin CRLF" 0 '1k\n2Mi\n' '1k\r\n2048Ki\r\n'
check "stdin last line without newline" 0 '1k\n3\n' '1k\n3'
check "stdin empty" 0 '' ''
check "stdin empty line and spaces" 1 'ERROR\nERROR\nERROR\n1\n' '\n 1\n1 \n1\n'
check "stdin lone CR is not a line ending" 1 'ERROR\n' '1k\r'
check "stdin --value" 1 '2\nERROR\n' '1.5\n1e20\n' --value
check "stdin --milli" 0 '1500\n' '1.5\n' --milli
check "-- alone reads stdin" 0 '1k\n' '1000\n' --

# --- usage -------------------------------------------------------------------
check "unknown option" 2 '' '<none>' --foo 1k
check "unknown option with =" 2 '' '<none>' --value=1 1k
check "--value with --milli" 2 '' '<none>' --value --milli 1
check_stdout_has "--help" 0 'usage: tally quantity' --help
check_stdout_has "-h" 0 'usage: tally quantity' -h

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
