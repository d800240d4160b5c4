/*
** bench_runs.c: Run placement benchmark (`make bench`).
**
**   bench-runs PODS RUNS [engine|scan|first|both]
**
** Builds a namespace with PODS Runtime Pods advertising 4 resources (runs
** 128, example.com/gpu 64, example.com/mem 512, example.com/cpu 256) and RUNS
** Pending Runs requesting runs 1 plus a deterministic mix of the others
** (a third ask for a GPU; mem 1-4, cpu 1-2), so that 100 Runs per Pod fit;
** loads them through the normal loader (not timed), then times:
**   engine  tally's scheduler: filter, exact least-loaded scoring, reserve,
**           bind, then runtimed admission (tly_runsched_run);
**   scan    the lower bound for an unindexed least-loaded design: for each
**           Run, check fit (tly_rvec_fits, the same dense usage vectors) on
**           EVERY Pod, as any design that picks the least loaded of the
**           feasible Pods without an index must, and take the first feasible
**           one (no scoring);
**   first   first fit with early exit (not a least-loaded design; shown
**           for scale).
** Prints placements, seconds and Runs per second for each.
**
** --backlog makes the shape a large pending backlog (see build_input): the
** expensive case, where most Runs are refused and some fit nowhere.
*/
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tally/kruntimes.h"
#include "tally/runsched.h"
#include "tally/store.h"

#include "bench.h"

/*
** backlog: the Pods advertise an eighth of the capacity (runs 16, gpu 8, mem
** 64, cpu 32), so about 10 Runs per Pod fit and nine in ten stay Pending, and
** one Run in 20 asks for more GPUs (100) than any Pod has: it fits nowhere.
*/
static char *build_input(unsigned pods, unsigned runs, bool backlog, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    for (unsigned i = 0; i < pods; i++)
        fprintf(f,
                "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: rt-%05u\n  namespace: bench\n"
                "  labels: {runtime: py}\n  annotations:\n    kruntimes.io/capacity.runs: \"%u\"\n"
                "    kruntimes.io/capacities: '{\"example.com/gpu\": \"%u\", \"example.com/mem\": "
                "\"%u\", \"example.com/cpu\": \"%u\"}'\n"
                "spec:\n  containers:\n  - {name: runtimed, image: kruntimes/python}\n"
                "status:\n  phase: Running\n  conditions:\n  - {type: Ready, status: \"True\"}\n"
                "  - {type: kruntimes.io/RuntimedReady, status: \"True\", lastProbeTime: "
                "\"2026-11-29T12:00:00Z\"}\n",
                i, backlog ? 16 : 128, backlog ? 8 : 64, backlog ? 64 : 512, backlog ? 32 : 256);
    unsigned x = 12345;
    for (unsigned i = 0; i < runs; i++) {
        x = x * 1103515245u + 12345u;
        unsigned g = (x >> 16) % 3 == 0, m = 1 + (x >> 8) % 4, c = 1 + (x >> 4) % 2;
        fprintf(f,
                "---\napiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata:\n  name: run-%06u\n"
                "  namespace: bench\n  creationTimestamp: \"2026-11-29T11:%02u:%02uZ\"\n"
                "spec:\n  runtime: py\n  mode: {task: {args: [x]}}\n  resources:\n    requests:\n"
                "      runs: \"1\"\n      example.com/gpu: \"%u\"\n      example.com/mem: \"%u\"\n"
                "      example.com/cpu: \"%u\"\n",
                i, (i / 60) % 60, i % 60, backlog && i % 20 == 7 ? 100 : g, m, c);
    }
    fclose(f);
    return buf;
}

__attribute__((noinline)) static void engine(tly_store *s)
{
    int64_t now = tly_store_newest_time(s);
    double t0 = now_s();
    tly_runsched *rs = tly_runsched_create(s, now, true, NULL);
    tly_runsched_run(rs);
    double t1 = now_s();
    unsigned placed = 0, pending = 0;
    for (uint32_t i = 0; i < tly_runsched_nruns(rs); i++) {
        placed += tly_runsched_run_at(rs, i)->pod >= 0;
        pending += tly_runsched_run_at(rs, i)->phase == TLY_RUN_PENDING;
    }
    printf("engine: %u runs placed of %u (%u Pending) in %.3f s: %.0f Runs/s\n", placed,
           tly_runsched_nruns(rs), pending, t1 - t0, tly_runsched_nruns(rs) / (t1 - t0));
    tly_runsched_destroy(rs);
}

__attribute__((noinline)) static void scan(tly_store *s, bool early_exit)
{
    tly_arena *a = tly_arena_create(0);
    uint32_t np = 0, npods = tly_store_count(s, TLY_K_POD), nruns = tly_store_count(s, TLY_K_RUN);
    tly_rlist *cap = calloc(npods, sizeof *cap);
    tly_rvec *use = calloc(npods, sizeof *use);
    for (uint32_t i = 0; i < npods; i++) {
        tly_runtime_pod_capacity(tly_store_at(s, TLY_K_POD, i), tly_store_names(s), a, &cap[np], NULL);
        tly_rvec_init(&use[np++]);
    }
    tly_rlist *req = calloc(nruns, sizeof *req);
    for (uint32_t i = 0; i < nruns; i++)
        tly_run_normalized_request(tly_store_at(s, TLY_K_RUN, i), a, &req[i], NULL);
    double t0 = now_s();
    unsigned placed = 0;
    for (uint32_t i = 0; i < nruns; i++) {
        uint32_t chosen = UINT32_MAX;
        for (uint32_t p = 0; p < np; p++)
            if (tly_rvec_fits(&use[p], &req[i], &cap[p], NULL)) {
                if (chosen == UINT32_MAX)
                    chosen = p;
                if (early_exit)
                    break;
            }
        if (chosen != UINT32_MAX) {
            tly_rvec_add_list(&use[chosen], &req[i]);
            placed++;
        }
    }
    double t1 = now_s();
    printf("%s %u runs placed of %u in %.3f s: %.0f Runs/s\n", early_exit ? "first: " : "scan:  ",
           placed, nruns, t1 - t0, nruns / (t1 - t0));
    for (uint32_t p = 0; p < np; p++)
        tly_rvec_free(&use[p]);
    free(use);
    free(cap);
    free(req);
    tly_arena_destroy(a);
}

int main(int argc, char **argv)
{
    bool backlog = argc > 1 && !strcmp(argv[1], "--backlog");
    if (backlog) {
        argv++;
        argc--;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: bench-runs [--backlog] PODS RUNS [engine|scan|first|both]\n");
        return 2;
    }
    unsigned pods = (unsigned)strtoul(argv[1], NULL, 10), runs = (unsigned)strtoul(argv[2], NULL, 10);
    const char *mode = argc > 3 ? argv[3] : "both";
    size_t len;
    char *text = build_input(pods, runs, backlog, &len);
    tly_store *s = bench_load("bench-runs", text, len);
    bool both = strcmp(mode, "both") == 0;
    if (both || !strcmp(mode, "engine"))
        engine(s);
    if (both || !strcmp(mode, "scan"))
        scan(s, false);
    if (both || !strcmp(mode, "first"))
        scan(s, true);
    tly_store_destroy(s);
    return 0;
}
