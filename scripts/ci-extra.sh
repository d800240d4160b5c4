#!/usr/bin/env bash
# The slower checks of `make ci-extra` (contract section 1): the unit suite
# under valgrind memcheck, each libFuzzer target for a short run, the HTML
# report in headless Chromium (tests/browser/report.sh), the test API server
# against every kubectl on the machine, and the live mode's multi-replica
# rounds: failover of the lease holder and over-admission across replicas
# (docs/controllers.md), and the webhook server's hostile-client runs (issue 17: a reload during
# upsizes, connection exhaustion, memory under the worst bodies; docs/serve.md). LIVE_ROUNDS sets
# the rounds (default 100).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}

echo "== ThreadSanitizer: runtimed stress =="
scripts/tsan.sh

echo "== unit suite under valgrind memcheck =="
cmake -S . -B build-valgrind -DCMAKE_BUILD_TYPE=Debug -DTALLY_TESTS=ON >/dev/null
cmake --build build-valgrind -j "$JOBS" >/dev/null
fail=0
for t in build-valgrind/test_*; do
  [ -x "$t" ] || continue
  # The property tests run far fewer cases under valgrind (make test runs the full count);
  # TALLY_VALGRIND lets a test skip what valgrind's emulation changes (test_acceptor's fd limit).
  if TALLY_VALGRIND=1 TALLY_PROPERTY_CASES=${TALLY_PROPERTY_CASES_VALGRIND:-60} valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
       "$t" >/tmp/tally-valgrind.$$.log 2>&1; then
    echo "valgrind ok: $(basename "$t")"
  else
    echo "valgrind FAILED: $(basename "$t")"
    tail -40 /tmp/tally-valgrind.$$.log
    fail=1
  fi
done
rm -f /tmp/tally-valgrind.$$.log
[ "$fail" -eq 0 ] || exit 1

if [ -x scripts/fuzz.sh ]; then
  echo "== fuzz targets, ${FUZZ_SECONDS:-20} s each =="
  scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
fi
echo "== HTML report in headless Chromium =="
scripts/deps.sh browser
cmake -S . -B build >/dev/null
cmake --build build -j "$JOBS" --target tally >/dev/null
bash tests/browser/report.sh build/tally
echo "== the HTML report of the realistic 5,000-node, 100,000-pod cluster: under 5 MB, and Chromium opens it =="
cmake --build build -j "$JOBS" --target tally-gen >/dev/null
build/tally-gen cluster 1 42 > build/realistic-1.json
build/tally simulate -o html build/realistic-1.json > build/realistic-1.html 2>/dev/null || true
size=$(stat -c %s build/realistic-1.html)
echo "realistic report: $size bytes"
[ "$size" -lt 5000000 ] || { echo "FAIL: the realistic report is $size bytes (limit 5,000,000)"; exit 1; }
grep -q '</html>' build/realistic-1.html || { echo "FAIL: the realistic report is cut short"; exit 1; }
timeout 300 "$(command -v chromium)" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$(mktemp -d)" --dump-dom "file://$PWD/build/realistic-1.html" > build/realistic-1.dom 2>/dev/null
grep -q 'id="pending"' build/realistic-1.dom || { echo "FAIL: Chromium did not render the realistic report"; exit 1; }
rm -f build/realistic-1.json

echo "== the test API server against every kubectl (scripts/kubectl-matrix.sh) =="
scripts/kubectl-matrix.sh

ROUNDS=${LIVE_ROUNDS:-100}
echo "== failover: $ROUNDS rounds of killing the lease holder (2s / 1.5s / 0.2s) =="
python3 tests/live/failover.py build/tally --rounds "$ROUNDS"
echo "== reservations across replicas: $ROUNDS rounds each, 2 and 3 replicas, relists and leader changes =="
for mode in upsizes claims; do
  for n in 2 3; do
    python3 tests/live/reserve_race.py build/tally --mode "$mode" --replicas "$n" --rounds "$ROUNDS" --faults
  done
done

echo "== a SIGHUP reload during upsize decisions: 30 rounds of 16 (tests/live/reload_race.py) =="
python3 tests/live/reload_race.py build/tally --rounds 30 --inflight 16

echo "== connection exhaustion: 2,000 hostile connections for 12 s, then the deadlines (tests/live/conn_flood.py) =="
# 2,000 sockets here and up to 1,024 in the server: both need the descriptors.
ulimit -n 8192 2>/dev/null || echo "ulimit -n is $(ulimit -n): conn_flood.py needs about 2,100"
python3 tests/live/conn_flood.py build/tally --count 2000 --seconds 12
python3 tests/live/conn_flood.py build/tally --deadlines
echo "== memory under the worst bodies: 16 clients, RSS under 256 MiB (tests/live/mem_flood.py) =="
python3 tests/live/mem_flood.py build/tally --clients 16 --seconds 10

echo "ci-extra: all passed"
