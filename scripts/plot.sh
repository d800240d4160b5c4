#!/usr/bin/env bash
# Scaling curves from a `make bench` table (scripts/bench.sh output) as SVG,
# written with awk only (no plotting package needed):
#   scripts/plot.sh TABLE OUTDIR
# produces OUTDIR/pods-scaling.svg (pods/s against nodes, leaf queues and
# AccountedResources, each doubling from the 500/50/20/5000 point) and
# OUTDIR/runs.svg (Runs/s of tally's scheduler against the full fit-scan).
set -euo pipefail
table=${1:?usage: plot.sh TABLE OUTDIR}
out=${2:?usage: plot.sh TABLE OUTDIR}
mkdir -p "$out"

# chart TITLE XLABEL YLABEL FILE < "x y series" lines: one SVG line chart, log2 x axis.
chart() {
  awk -v title="$1" -v xlabel="$2" -v ylabel="$3" '
    { x[NR] = $1; y[NR] = $2; s[NR] = $3; if (!($3 in seen)) { seen[$3] = 1; order[++ns] = $3 }
      if (NR == 1 || $1 < xmin) xmin = $1; if (NR == 1 || $1 > xmax) xmax = $1
      if ($2 > ymax) ymax = $2 }
    END {
      W = 720; H = 360; L = 70; R = 230; T = 40; B = 50
      pw = W - L - R; ph = H - T - B
      lx0 = log(xmin) / log(2); lx1 = log(xmax) / log(2); if (lx1 == lx0) lx1 = lx0 + 1
      ymax = ymax * 1.1
      printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
      printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      printf "<text x=\"%d\" y=\"22\" font-size=\"15\">%s</text>\n", L, title
      printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, T + ph, L + pw, T + ph
      printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, T, L, T + ph
      for (i = 0; i <= 4; i++) {
        yv = ymax * i / 4; yy = T + ph - ph * i / 4
        printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, yy, L + pw, yy
        printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n", L - 6, yy + 4, yv
      }
      printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", L + pw / 2, H - 10, xlabel
      printf "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">%s</text>\n", T + ph / 2, T + ph / 2, ylabel
      split("#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e", col, " ")
      for (k = 1; k <= ns; k++) {
        pts = ""
        for (i = 1; i <= NR; i++) if (s[i] == order[k]) {
          px = L + pw * (log(x[i]) / log(2) - lx0) / (lx1 - lx0); py = T + ph - ph * y[i] / ymax
          pts = pts sprintf("%.1f,%.1f ", px, py)
          printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", px, py, col[k]
          printf "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">%s</text>\n", px, T + ph + 14, x[i]
        }
        printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", pts, col[k]
        printf "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", L + pw + 12, T + 20 * (k - 1), col[k]
        name = order[k]; gsub(/_/, " ", name)
        printf "<text x=\"%d\" y=\"%d\">%s</text>\n", L + pw + 30, T + 20 * (k - 1) + 10, name
      }
      print "</svg>"
    }'
}

# Pods: rows "pods/s vs target ..." with size n/q/a/p; series by which dimension grew.
# The table has fixed columns: a 34-character measure, then size, tally, baseline, ratio.
awk '/^pods\/s vs target/ {
       split(substr($0, 36), f, " "); size = f[1]; val = f[2]
       split(size, d, "/"); nodes = d[1]; q = d[2]; a = d[3]; p = d[4]
       if (p != 5000) next
       if (q == 50 && a == 20) print nodes / 500, val, "nodes_(500_at_1x)"
       if (nodes == 500 && a == 20) print q / 50, val, "leaf_queues_(50_at_1x)"
       if (nodes == 500 && q == 50) print a / 20, val, "AccountedResources_(20_at_1x)"
     }' "$table" | chart "Pod placements per second as one dimension doubles (5,000 pods)" \
       "size of the dimension, as a multiple of 500 nodes / 50 leaf queues / 20 AccountedResources" \
       "pods per second" > "$out/pods-scaling.svg"

# Runs: rows "Runs/s vs full fit-scan" with size Pp/Rr.
awk '/^Runs\/s vs full fit-scan/ {
       split(substr($0, 36), f, " "); size = f[1]; e = f[2]; sc = f[3]
       sub(/p\/.*/, "", size); print size, e, "tally"; print size, sc, "full_fit_scan"
     }' "$table" | chart "Run placements per second" "Runtime Pods (log scale)" "Runs per second" > "$out/runs.svg"

echo "plot.sh: wrote $out/pods-scaling.svg $out/runs.svg"
