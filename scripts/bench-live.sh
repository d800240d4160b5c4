#!/usr/bin/env bash
# The live mode's benchmarks (docs/live.md "Performance"), part of `make bench`:
#   1. watch events applied per second (bench-live: parse, decode, apply), at 10,000 and 100,000
#      running pods, with forks held while the writer goes on; the writer lock's hold times;
#   2. instructions per event under callgrind (only parse + apply are counted) at 10,000, 100,000
#      and 1,000,000 pods: an event must cost the same however large the cluster
#      (BENCH_LIVE_1M=0 leaves the 1M run out: it needs about 6 GB and ten minutes);
#   3. webhook decision latency on the live state: p50/p99 of pods/resize decisions at a fixed
#      1,000 reviews/s with no events, then while 10,000 events/s stream in (bench-live --webhook);
#   4. initial sync: `tally serve --kubeconfig` against the test API server (tests/kube/) holding
#      100,000 pods (tally-gen), until /readyz is 200; tally's CPU against the server's;
#   5. gating (issue 14): the gating controller's cycle on a 5,000-node live state with a backlog of
#      gated pods, most held (bench-gating: ms per cycle, workloads decided per second, and under
#      callgrind instructions per decided workload against a 100-pod backlog and against a quarter of
#      the running pods), then create -> ungate latency at 1,000 pods/s: tally's part with the
#      controller writing to a stand-in server that answers at once or a few ms late (bench-gating
#      --latency), and end to end against the test API server, whose own write rate is the bound
#      there (bench/ungate_latency.py).
# BENCH_LIVE_ONLY=gating runs section 5 alone.
# Wall-clock figures move with whatever else the machine runs; the instruction counts do not.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${BENCH_OUT:-build-bench/data}
mkdir -p "$OUT"
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTALLY_TESTS=OFF >/dev/null
cmake --build build-bench -j 2 --target tally tally-gen bench-live bench-gating >/dev/null

# Instructions of the cycles alone (bench-gating toggles collection around them), divided by the
# cycles, and the workloads each decided: "INSTRUCTIONS_PER_CYCLE WORKLOADS".
gating_ins() {
  local out
  out=$(valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --callgrind-out-file=/dev/null \
          build-bench/bench-gating --cycles 2 "$@" 2>&1)
  echo "$(($(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' <<<"$out") / 2)) $(sed -n 's/^workloads \([0-9]*\)$/\1/p' <<<"$out")"
}

gating() {
  echo "== gating: the controller's cycle (bench-gating; 5,000 nodes, 40,000 running pods, 104 queues, most of the backlog held) =="
  echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  for b in 100 5000 20000; do
    build-bench/bench-gating --cycles 9 5000 40000 "$b" | grep -v '^workloads ' | sed "s/^/  /"
  done
  for b in 5000 20000; do
    build-bench/bench-gating --steady --cycles 5 5000 40000 "$b" | grep -v -e '^workloads ' -e '^state' | sed "s/^/  /"
  done
  build-bench/bench-gating --cycles 5 --reserved 5000 5000 40000 100 | grep -v '^workloads ' | sed "s/^/  /"

  echo "== gating: instructions per decided workload (callgrind; the cycles only, 2 each) =="
  local fixed base w ins per b r0 r1
  read -r fixed _ < <(gating_ins 5000 40000 0)
  echo "  no backlog: $fixed instructions per cycle (the queues from the live ledger, the nodes' largest GPU memory)"
  for b in 100 5000 20000; do
    read -r ins w < <(gating_ins 5000 40000 "$b")
    per=$(((ins - fixed) / w))
    [ -z "${base:-}" ] && base=$per
    echo "  backlog $b ($w workloads): $ins per cycle, $((ins / w)) per workload; above the fixed part $per per workload ($(awk -v a="$per" -v b="$base" 'BEGIN{printf "%.2f", a/b}')x the 100-pod backlog's)"
  done
  read -r ins w < <(gating_ins 5000 10000 5000)
  read -r r0 _ < <(gating_ins 5000 40000 5000)
  echo "  backlog 5000 with 10,000 running pods instead of 40,000: $((ins / w)) per workload ($(awk -v a="$r0" -v b="$ins" 'BEGIN{printf "%.3f", a/b}') of them at 40,000: a held pod's decision does not grow with the pods)"
  read -r ins w < <(gating_ins --steady 5000 40000 5000)
  echo "  steady (conditions written, admitted pods shown ungated), backlog 5000: $((ins / w)) per workload ($w decided)"
  read -r r0 _ < <(gating_ins --reserved 0 5000 40000 100)
  read -r r1 _ < <(gating_ins --reserved 5000 5000 40000 100)
  echo "  the Reserved bucket: $(((r1 - r0) / 5000)) instructions per admitted, unbound pod per cycle (5,000 of them)"

  echo "== gating: create -> ungate latency at 1,000 pods/s, tally's part (bench-gating --latency: the controller as serve runs it, writing to a stand-in server; 5,000 nodes, 40,000 running pods, --kube-api-qps 5000 --kube-api-burst 10000) =="
  for a in "0 0" "0 5000" "0 20000" "3 5000" "5 5000"; do
    read -r d b <<<"$a"
    echo "  backlog $b held, the stand-in ${d} ms a write: $(build-bench/bench-gating --latency 1000 10 --server-delay-ms "$d" 5000 40000 "$b" | sed -n 's/^latency: .*ungated; //p')"
  done
  echo "== gating: create -> ungate latency at 1,000 pods/s (bench/ungate_latency.py; the test API server) =="
  python3 bench/ungate_latency.py --tally build-bench/tally --rate 1000 --seconds 5 --qps 5000 --burst 10000
  echo "== gating: create -> ungate latency of pods created through the API and /mutate/pods, 50 pods/s =="
  python3 bench/ungate_latency.py --tally build-bench/tally --rate 0 --qps 5000 --burst 10000 --bound 0 \
    --hook-rate 50 --hook-seconds 5
  echo "== gating: create -> ungate latency at 200 pods/s, with 2,000 pods held in another queue =="
  python3 bench/ungate_latency.py --tally build-bench/tally --rate 200 --seconds 5 --qps 5000 --burst 10000 \
    --held 2000 --bound 0
  echo "== gating: create -> ungate latency at 150 pods/s, the test API server 2 ms slower per request =="
  python3 bench/ungate_latency.py --tally build-bench/tally --rate 150 --seconds 5 --qps 5000 --burst 10000 \
    --server-latency-ms 2 --bound 300
  echo "== gating: create -> ungate latency at 150 pods/s, the test API server 5 ms slower per request (a real server's write latency; ungates in parallel) =="
  python3 bench/ungate_latency.py --tally build-bench/tally --rate 150 --seconds 5 --qps 5000 --burst 10000 \
    --server-latency-ms 5 --bound 0
}
if [ "${BENCH_LIVE_ONLY:-}" = gating ]; then
  gating
  exit 0
fi

echo "== live: watch events applied (bench-live) =="
for n in 10000 100000; do
  build-bench/bench-live "$n" 90000 100 | sed "s/^/  /"
done
# The stream of earlier figures: every event moves a pod to another node (a stress of the node index).
build-bench/bench-live --moves 100000 90000 100 | sed -n "s/^events/  --moves: events/p"

echo "== live: instructions per event (callgrind; parse + apply only, 20,000 events, 20 forks) =="
sizes="10000 100000"
[ "${BENCH_LIVE_1M:-1}" = 1 ] && sizes="$sizes 1000000"
base=
for n in $sizes; do
  ins=$(valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no --callgrind-out-file=/dev/null \
          build-bench/bench-live "$n" 20000 20 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  per=$((ins / 20000))
  [ -z "$base" ] && base=$per
  echo "  $n pods: $per instructions per event ($(awk -v a="$per" -v b="$base" 'BEGIN{printf "%.2f", a/b}')x the 10,000-pod figure)"
done

echo "== live: webhook decisions on the live state, 1,000 reviews/s, idle and with 10,000 events/s =="
build-bench/bench-live --webhook 10000 10000 1000 10 | sed "s/^/  /"

echo "== live: initial sync of 100,000 pods from the test API server =="
pods=$OUT/live-pods-100000.json
[ -s "$pods" ] || build-bench/tally-gen pods 100000 42 >"$pods"
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
python3 tests/kube/apiserver.py --dir "$tmp/api" --seed "$pods" >"$tmp/api.log" 2>&1 &
api=$!
for _ in $(seq 1200); do [ -s "$tmp/api/ready.json" ] && break; sleep 0.1; done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=bench \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null
server_cpu0=$(awk '{print $14 + $15}' "/proc/$api/stat")
t0=$(date +%s.%N)
build-bench/tally serve --listen 127.0.0.1:0 --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key" \
  --kubeconfig "$tmp/api/kubeconfig" >"$tmp/serve.log" 2>&1 &
srv=$!
port=
for _ in $(seq 200); do
  port=$(sed -n 's/.*event=listening.* port=\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.05
done
until [ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/tls.crt" "https://127.0.0.1:$port/readyz")" = 200 ]; do
  sleep 0.05
done
t1=$(date +%s.%N)
tck=$(getconf CLK_TCK)
tally_cpu=$(awk -v t="$tck" '{printf "%.2f", ($14 + $15) / t}' "/proc/$srv/stat")
server_cpu=$(awk -v t="$tck" -v c="$server_cpu0" '{printf "%.2f", ($14 + $15 - c) / t}' "/proc/$api/stat")
echo "  ready after $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b - a}') s; CPU: tally $tally_cpu s, the test API server $server_cpu s"
kill "$srv" "$api" 2>/dev/null || true

gating
