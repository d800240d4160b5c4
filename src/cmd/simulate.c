/*
** simulate.c: `tally simulate [--now RFC3339] [-o table|json|html] PATH...`
** (contract section 3).
**
** Loads the objects and prints what was loaded, per kind and per queue.
** The scheduling engines (Runs onto Runtime Pods, pods onto nodes under
** queue policy) plug in here as they land; until then the table output is a
** load report and the json/html outputs say they need the engine.
** Exit 1 if any input could not be read or parsed, else 0.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "tally/decode.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally simulate [--now RFC3339] [-o table|json|html] [--scheduler-name NAME] "
            "PATH...\n\n"
            "Loads a cluster (kubectl get -o yaml|json dumps, example files, directories) and\n"
            "runs tally's scheduling engine over it until nothing more can be placed.\n");
}

static void print_queue_tree(const tly_store *s, const tly_queue *q, int depth)
{
    uint32_t npods;
    tly_store_pods_in_queue(s, q->meta.name, &npods);
    printf("  %*s%-*s %5u pods\n", depth * 2, "", 28 - depth * 2, q->meta.name, npods);
    uint32_t n = tly_store_count(s, TLY_K_QUEUE);
    for (uint32_t i = 0; i < n; i++) {
        const tly_queue *c = tly_store_at(s, TLY_K_QUEUE, i);
        if (c->parent && strcmp(c->parent, q->meta.name) == 0 && c != q && depth < 32)
            print_queue_tree(s, c, depth + 1);
    }
}

static void print_summary(const tly_store *s)
{
    printf("Loaded objects\n");
    for (int k = 0; k < TLY_K_COUNT; k++) {
        uint32_t n = tly_store_count(s, k);
        if (n)
            printf("  %-24s %6u\n", tly_kind_name(k), n);
    }
    uint32_t nq = tly_store_count(s, TLY_K_QUEUE);
    if (nq) {
        printf("\nQueues (tally pods per queue; scheduler %s)\n", tly_store_scheduler_name(s));
        for (uint32_t i = 0; i < nq; i++) {
            const tly_queue *q = tly_store_at(s, TLY_K_QUEUE, i);
            if (!q->parent || !*q->parent || !tly_store_find(s, TLY_K_QUEUE, NULL, q->parent))
                print_queue_tree(s, q, 0);
        }
    }
    uint32_t nrt = tly_store_count(s, TLY_K_RUNTIME);
    if (nrt) {
        printf("\nRuntimes\n");
        for (uint32_t i = 0; i < nrt; i++) {
            const tly_runtime *rt = tly_store_at(s, TLY_K_RUNTIME, i);
            uint32_t npods, nruns;
            tly_store_runtime_pods(s, rt->meta.ns, rt->meta.name, &npods);
            tly_store_runs_of_runtime(s, rt->meta.ns, rt->meta.name, &nruns);
            printf("  %s/%-20s %3u Runtime Pods %4u Runs\n", rt->meta.ns, rt->meta.name, npods,
                   nruns);
        }
    }
}

int tly_cmd_simulate(int argc, char **argv)
{
    const char *out = "table", *now = NULL, *sched = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--")) {
            i++;
            break;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strncmp(a, "-o", 2) && a[2]) {
            out = a + 2;
        } else if (!strncmp(a, "--output=", 9)) {
            out = a + 9;
        } else if (!strcmp(a, "--now") && i + 1 < argc) {
            now = argv[++i];
        } else if (!strncmp(a, "--now=", 6)) {
            now = a + 6;
        } else if (!strcmp(a, "--scheduler-name") && i + 1 < argc) {
            sched = argv[++i];
        } else if (!strncmp(a, "--scheduler-name=", 17)) {
            sched = a + 17;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tally simulate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            break;
        }
    }
    if (strcmp(out, "table") && strcmp(out, "json") && strcmp(out, "html")) {
        fprintf(stderr, "tally simulate: -o must be table, json or html (got '%s')\n", out);
        return 2;
    }
    int64_t now_s;
    if (now && !tly_parse_time(now, &now_s)) {
        fprintf(stderr, "tally simulate: --now must be an RFC 3339 time such as "
                        "2026-11-29T13:00:00Z (got '%s')\n", now);
        return 2;
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    if (strcmp(out, "table") != 0) {
        fprintf(stderr, "tally simulate: -o %s needs the scheduling engines, which this build "
                        "does not have yet; use -o table for the load report\n", out);
        return 2;
    }
    int errors;
    tly_store *s = tly_cmd_load(argc - i, argv + i, sched, &errors);
    tly_diags_sort(tly_store_diags(s));
    tly_cmd_print_sev(s, TLY_SEV_NOTE);
    tly_cmd_print_sev(s, TLY_SEV_WARNING);
    tly_cmd_print_sev(s, TLY_SEV_ERROR);
    print_summary(s);
    tly_store_destroy(s);
    return errors ? 1 : 0;
}
