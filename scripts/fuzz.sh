#!/usr/bin/env bash
# Builds every libFuzzer target in fuzz/ (fuzz/fuzz_<name>.c) with clang,
# ASan and UBSan into build-fuzz/, and runs each for SECONDS seconds on a
# copy of its seed corpus (fuzz/corpus/<name>/ is never written to).
# Usage: scripts/fuzz.sh [SECONDS]      (default 60; `make fuzz` passes $FUZZ_SECONDS)
# Prints one summary line per target; exits 1 if any target crashed, leaked,
# timed out or ran out of memory, leaving the reproducer in build-fuzz/.
# Needs clang and libclang-rt-14-dev (scripts/deps.sh extra installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
case "$secs" in
  ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$secs'" >&2; exit 2 ;;
esac
CC=${FUZZ_CC:-clang}
OUT=build-fuzz

command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (run scripts/deps.sh extra)" >&2; exit 2; }
fyaml=$(pkg-config --cflags --libs libfyaml libzip) || { echo "fuzz.sh: libfyaml or libzip not found by pkg-config (scripts/deps.sh extra)" >&2; exit 2; }

mkdir -p "$OUT"
core=()
for f in src/*.c; do
  # The targets call the library, not the binary or the HTTPS server.
  case "$f" in src/main.c|src/server.c) continue ;; esac
  core+=("$f")
done

targets=()
for src in fuzz/fuzz_*.c; do
  t=$(basename "$src" .c)
  t=${t#fuzz_}
  echo "== build fuzz_$t =="
  # shellcheck disable=SC2086  # $fyaml is a list of flags
  "$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -std=c11 -D_GNU_SOURCE -Iinclude -Isrc \
    -o "$OUT/fuzz_$t" "$src" "${core[@]}" $fyaml
  targets+=("$t")
done

failed=0
summary=()
for t in "${targets[@]}"; do
  corpus="$OUT/corpus-$t"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  if [ -d "fuzz/corpus/$t" ]; then
    cp -R "fuzz/corpus/$t/." "$corpus/"
  fi
  log="$OUT/fuzz_$t.log"
  echo "== run fuzz_$t for $secs s (log: $log) =="
  start=$(date +%s.%N)
  rc=0
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/fuzz/lsan.supp} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "./$OUT/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$OUT/$t-" "$corpus" >"$log" 2>&1 || rc=$?
  end=$(date +%s.%N)
  elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  nfiles=$(find "$corpus" -type f | wc -l)
  line="fuzz $t: ${execs:-?} executions in $elapsed s, corpus $nfiles files"
  echo "$line"
  summary+=("$line")
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "fuzz $t: FAILED (exit $rc)" >&2
    # The sanitizer or libFuzzer report, and the input that triggered it.
    grep -E 'ERROR: |runtime error: |fuzz_[a-z]+: |SUMMARY: ' "$log" | head -20 >&2 || true
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    if [ -n "$artifact" ]; then
      echo "fuzz $t: reproducer: $artifact (re-run: ./$OUT/fuzz_$t $artifact)" >&2
    else
      echo "fuzz $t: no reproducer written; see $log" >&2
    fi
  fi
done

echo "== fuzz summary =="
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || { echo "fuzz.sh: at least one target failed" >&2; exit 1; }
