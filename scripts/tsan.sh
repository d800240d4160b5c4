#!/usr/bin/env bash
# The multi-threaded parts under ThreadSanitizer: the runtimed admission
# cache (test_runtimed: 8 threads reserving and releasing), the webhook's
# accepting thread and connection guard (test_acceptor) and its log thread
# (test_logq: 8 threads logging, flushes, a full buffer), the resize
# reservation ledger of `tally serve --reserve-upsizes` (test_upsize: 16
# threads admitting upsizes against a nearly full queue), and the webhook
# server itself (cli_serve: concurrent clients, SIGHUP state swaps while
# requests are in flight, certificate reloads), and the live mode against
# the test API server (gating, runs, status, live: reflector threads, the
# controllers and their writer threads, leader election). The rest of the suite is
# single-threaded and gains nothing from TSan. Any data race halts the run
# with a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}

cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DTALLY_TESTS=ON \
  -DCMAKE_C_FLAGS="-fsanitize=thread -g -O1" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build build-tsan -j "$JOBS" --target test_runtimed test_upsize test_acceptor test_logq tally >/dev/null
export TSAN_OPTIONS=halt_on_error=1
./build-tsan/test_runtimed
echo "tsan: test_runtimed clean"
./build-tsan/test_acceptor
echo "tsan: test_acceptor clean"
./build-tsan/test_logq
echo "tsan: test_logq clean"
./build-tsan/test_upsize
echo "tsan: test_upsize clean"
bash tests/cli/serve.sh build-tsan/tally
echo "tsan: tally serve (tests/cli/serve.sh) clean"
python3 tests/live/reload_race.py build-tsan/tally --rounds 2 --inflight 8 --pad 200000
echo "tsan: a reload during upsize decisions (tests/live/reload_race.py) clean"
# The live mode's threads: reflectors, the controllers' cycle and writer threads, the lease.
# A race kills serve (halt_on_error), and the script's checks then fail.
for t in gating runs status live; do
  bash "tests/cli/$t.sh" build-tsan/tally
  echo "tsan: tests/cli/$t.sh clean"
done
