#!/usr/bin/env bash
# report.sh: the HTML report of `tally simulate -o html` in a real browser
# (docs/report.md "How it is tested"). Run by scripts/ci-extra.sh after
# `scripts/deps.sh browser` has installed Debian's chromium.
#
# Usage: bash tests/browser/report.sh [path/to/tally]   (from the repository
#        root; default build/tally). CHROMIUM overrides the browser binary.
#
# 1. Writes build/report.html for examples/cluster and tests/browser/long-queue.yaml (a queue
#    with a long name).
# 2. Loads a copy of it in headless Chromium with --dump-dom and checks the
#    DOM the browser built: the queues, the team-a gpu-h200 bar at 100%
#    flagged as at/over 90%, the Gated and Unschedulable pods with reasons and
#    messages, the Runtime Pod heat map, the Pending Run. The copy carries one
#    probe script at its end (the page itself has none) that writes layout
#    facts into <body> attributes: the page's scroll width at a 1366 px
#    window (no horizontal scrolling), the rendered width and colour of that
#    bar, whether the explain text is folded away by default, and whether the
#    long queue name is clipped or wraps.
# 3. Takes a 1366x900 screenshot of build/report.html into build/report.png
#    and checks it is a PNG of that size and not trivial (> 20 KB).
# Every Chromium run has a timeout, a fresh --user-data-dir and no network
# (the env's flags, and a new network namespace when unshare allows one).
set -u
cd "$(dirname "$0")/../.."

TALLY=${1:-build/tally}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ ! -x "$TALLY" ]; then
    echo "browser/report.sh: $TALLY is not an executable (build first)" >&2
    exit 2
fi
if [ -z "$CHROMIUM" ] || [ ! -x "$CHROMIUM" ]; then
    echo "browser/report.sh: chromium not found (scripts/deps.sh browser installs it)" >&2
    exit 2
fi

mkdir -p build
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
html=build/report.html
png=build/report.png
log=build/report-chromium.log
: >"$log"

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
has() { if grep -qF -- "$2" "$1"; then ok; else bad "DOM lacks: $2"; fi; }

# No network: a namespace of our own when possible (root, or user namespaces).
NONET=()
if command -v unshare >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
    NONET=(unshare -n)
fi
FLAGS=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --disable-extensions --disable-default-apps --disable-dev-shm-usage
       --window-size=1366,900)

# url PATH: a file:// URL for a path.
url() { case $1 in /*) echo "file://$1" ;; *) echo "file://$PWD/$1" ;; esac; }

# chrome OUTFILE ARGS...: one Chromium run, stdout to OUTFILE; prints seconds taken.
chrome() {
    local out=$1
    shift
    local profile t0 t1 rc
    profile=$(mktemp -d "$tmp/profile.XXXXXX")
    t0=$(date +%s%N)
    timeout 60 "${NONET[@]}" "$CHROMIUM" "${FLAGS[@]}" --user-data-dir="$profile" "$@" \
        >"$out" 2>>"$log"
    rc=$?
    t1=$(date +%s%N)
    echo "  chromium ${*: -2:1}: exit $rc, $(((t1 - t0) / 1000000)) ms"
    return $rc
}

echo "== browser test of the HTML report (${CHROMIUM}, $("$CHROMIUM" --version 2>/dev/null | head -1)) =="
if ! timeout 60 "$TALLY" simulate -o html examples/cluster tests/browser/long-queue.yaml >"$html" 2>"$tmp/err"; then
    bad "tally simulate -o html examples/cluster tests/browser/long-queue.yaml failed: $(head -3 "$tmp/err")"
fi

# ---- 2. the DOM ------------------------------------------------------------
probe=$tmp/probe.html
sed '/^<\/body>$/,$d' "$html" >"$probe"
cat >>"$probe" <<'EOF'
<script>
(function () {
  var b = document.body, bar = document.querySelector('.bar[data-queue="team-a"][data-resource="gpu-h200"]');
  b.setAttribute('data-probe-scroll-width', String(document.documentElement.scrollWidth));
  if (bar) {
    var fill = bar.firstElementChild;
    b.setAttribute('data-probe-h200-fill', String(Math.round(100 * fill.getBoundingClientRect().width / bar.getBoundingClientRect().width)));
    b.setAttribute('data-probe-h200-color', getComputedStyle(fill).backgroundColor);
  }
  var okFill = document.querySelector('.bar.ok > span');
  if (okFill) b.setAttribute('data-probe-ok-color', getComputedStyle(okFill).backgroundColor);
  var pre = document.querySelector('#pending details pre');
  if (pre) b.setAttribute('data-probe-explain-visible', String(pre.checkVisibility ? pre.checkVisibility() : pre.getClientRects().length > 0));
  var lq = document.querySelector('tr[data-queue^="department-number-0042"] td.qname');
  var sq = document.querySelector('tr[data-queue="team-a"] td.qname');
  if (lq && sq) {
    b.setAttribute('data-probe-long-clipped', String(lq.scrollWidth > lq.clientWidth));
    b.setAttribute('data-probe-long-taller', String(lq.getBoundingClientRect().height > sq.getBoundingClientRect().height));
    b.setAttribute('data-probe-long-ellipsis', getComputedStyle(lq).textOverflow);
  }
  b.setAttribute('data-probe', 'done');
})();
</script>
</body>
</html>
EOF
dom=$tmp/dom.html
if chrome "$dom" --dump-dom "$(url "$probe")"; then ok; else bad "chromium --dump-dom failed (see $log)"; fi
cp "$dom" build/report-dom.html 2>/dev/null

has "$dom" 'data-probe="done"'
# The browser parsed the page: entities in the source are characters in its DOM.
if grep -qF '&middot;' "$dom"; then bad "DOM still holds &middot;: not parsed by a browser?"; else ok; fi
has "$dom" '·'
for q in team-a research inference; do
    has "$dom" "<tr data-queue=\"$q\""
done
bar=$(grep -oE '<div class="bar [a-z]+" data-queue="team-a" data-resource="gpu-h200"[^>]*>' "$dom" | head -1)
case $bar in
    *'class="bar hi"'*'data-pct="100"'* | *'class="bar over"'*'data-pct="100"'*) ok ;;
    *) bad "team-a gpu-h200 bar is not at 100% and flagged at/over 90%: '$bar'" ;;
esac
# probe NAME: the value of body's data-probe-NAME attribute.
probe_val() { grep -oE "data-probe-$1=\"[^\"]*\"" "$dom" | head -1 | sed 's/^[^"]*"//; s/"$//'; }
sw=$(probe_val scroll-width)
if [ -n "$sw" ] && [ "$sw" -le 1366 ] 2>/dev/null; then ok; else bad "page scrolls sideways at 1366 px (scrollWidth ${sw:-?})"; fi
fill=$(probe_val h200-fill)
if [ "${fill:-0}" -ge 99 ] 2>/dev/null; then ok; else bad "team-a gpu-h200 bar fill renders at ${fill:-?}% of its track"; fi
hc=$(probe_val h200-color)
oc=$(probe_val ok-color)
if [ -n "$hc" ] && [ -n "$oc" ] && [ "$hc" != "$oc" ]; then ok; else bad "the at/over-90% bar has the ordinary colour ($hc, $oc)"; fi
has "$dom" 'data-probe-explain-visible="false"'
# The long queue name is whole and wraps: not clipped, its cell taller than a short name's.
has "$dom" 'data-probe-long-clipped="false"'
has "$dom" 'data-probe-long-taller="true"'
has "$dom" 'data-probe-long-ellipsis="clip"'
has "$dom" '<li class="item" data-state="Gated" data-reason="OverLimit" data-pod="team-a/ablation-lr-sweep-3-xz7pq">'
has "$dom" 'team-a has reached the limit of AccountedResource gpu-h200. Limit is 4, currently 4 used and workload requested 1'
has "$dom" '<li class="item" data-state="Unschedulable" data-reason="Unschedulable" data-pod="inference/embedding-batch-28c4t">'
has "$dom" '<pre>Pod inference/embedding-batch-28c4t'
has "$dom" '<table class="heat">'
n=$(grep -oE '<tr class="available" data-runtime-pod="default/runtime-python-[a-z0-9-]+"' "$dom" | wc -l)
if [ "$n" -eq 3 ]; then ok; else bad "heat map has $n runtime-python rows, want 3"; fi
has "$dom" 'data-resource="example.com/gpu" data-pct="100"'
has "$dom" '<li class="item" data-phase="Pending" data-reason="InsufficientCapacity" data-run="default/train-resnet50-c">'
has "$dom" '<pre>Run default/train-resnet50-c'

# ---- 3. the screenshot -------------------------------------------------------
rm -f "$png"
if chrome "$tmp/shot.out" --hide-scrollbars --screenshot="$PWD/$png" "$(url "$html")"; then ok; else
    bad "chromium --screenshot failed (see $log)"
fi
size=$(stat -c %s "$png" 2>/dev/null || echo 0)
if [ "$size" -gt 20480 ]; then ok; else bad "$png is $size bytes (want > 20 KB)"; fi
if [ "$(head -c 8 "$png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then ok; else bad "$png is not a PNG"; fi
dims=$(od -An -tu1 -j16 -N8 "$png" 2>/dev/null | awk '{print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8}')
if [ "$dims" = "1366x900" ]; then ok; else bad "$png is ${dims:-?}, want 1366x900"; fi

echo "browser/report.sh: $pass passed, $fail failed ($html, $png, $size bytes)"
[ "$fail" -eq 0 ] || { echo "chromium log: $log"; tail -5 "$log"; exit 1; }
