#!/usr/bin/env bash
# The runtimed admission cache under ThreadSanitizer: builds only the
# test_runtimed target in build-tsan/ (the rest of the suite is single-
# threaded and gains nothing from TSan) and runs it; any data race halts the
# run with a non-zero exit.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}

cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DTALLY_TESTS=ON \
  -DCMAKE_C_FLAGS="-fsanitize=thread -g -O1" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build build-tsan -j "$JOBS" --target test_runtimed >/dev/null
TSAN_OPTIONS=halt_on_error=1 ./build-tsan/test_runtimed
echo "tsan: test_runtimed clean"
