/*
** simulate.c: `tally simulate [--now RFC3339] [-o table|json|html] PATH...`
** (contract section 3).
**
** Loads the objects, then runs the engines until nothing more can be placed:
** Runs onto Runtime Pods and each Runtime Pod's runtimed admission
** (runsched.h). The pod placement engine under queue policy (issue 4) is not
** here yet, so `pods` and `queues` are not in the output; the table ends
** with a load report per kind and queue.
** Exit 1 if any input could not be read or parsed, else 0.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "tally/decode.h"
#include "tally/json.h"
#include "tally/runsched.h"

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


static const char *qtext(tly_qty q, char *buf)
{
    tly_qty_format(q, buf, TLY_QTY_BUFSZ);
    return buf;
}

static void print_json(tly_runsched *rs, tly_names *names)
{
    tly_json j;
    tly_json_init(&j, stdout, true);
    tly_json_begin_object(&j);
    tly_json_key(&j, "runs");
    tly_json_begin_array(&j);
    for (uint32_t i = 0; i < tly_runsched_nruns(rs); i++) {
        const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
        tly_json_begin_object(&j);
        tly_json_key(&j, "namespace");
        tly_json_string(&j, r->run->meta.ns);
        tly_json_key(&j, "name");
        tly_json_string(&j, r->run->meta.name);
        tly_json_key(&j, "runtime");
        tly_json_string(&j, r->run->runtime);
        tly_json_key(&j, "phase");
        tly_json_string(&j, tly_run_phase_name(r->phase));
        tly_json_key(&j, "pod");
        tly_json_string(&j, r->assigned);
        tly_json_key(&j, "reason");
        tly_json_string(&j, r->reason);
        tly_json_key(&j, "message");
        tly_json_string(&j, r->message);
        tly_json_end_object(&j);
    }
    tly_json_end_array(&j);
    tly_json_key(&j, "runtimePods");
    tly_json_begin_array(&j);
    for (uint32_t i = 0; i < tly_runsched_npods(rs); i++) {
        const tly_rs_pod_result *p = tly_runsched_pod_at(rs, i);
        tly_json_begin_object(&j);
        tly_json_key(&j, "namespace");
        tly_json_string(&j, p->pod->meta.ns);
        tly_json_key(&j, "name");
        tly_json_string(&j, p->pod->meta.name);
        tly_json_key(&j, "runtime");
        tly_json_string(&j, p->runtime);
        tly_json_key(&j, "capacity");
        tly_json_rlist(&j, p->capacity, names);
        tly_json_key(&j, "used");
        tly_json_rvec(&j, p->used, names);
        tly_json_key(&j, "admitted");
        tly_json_rvec(&j, &p->admitted, names);
        tly_json_end_object(&j);
    }
    tly_json_end_array(&j);
    tly_json_end_object(&j);
}

/* "runs 1/4, example.com/gpu 1/1" for one Runtime Pod. */
static void print_usage_line(const tly_rs_pod_result *p, const tly_rvec *use, tly_names *names)
{
    char a[TLY_QTY_BUFSZ], b[TLY_QTY_BUFSZ];
    for (uint32_t k = 0; k < p->capacity->n; k++)
        printf("%s%s %s/%s", k ? ", " : "", tly_names_str(names, p->capacity->v[k].id),
               qtext(tly_rvec_get(use, p->capacity->v[k].id), a),
               qtext(p->capacity->v[k].q, b));
}

static void print_table(tly_runsched *rs, tly_names *names)
{
    uint32_t nr = tly_runsched_nruns(rs), np = tly_runsched_npods(rs);
    if (nr) {
        printf("Runs\n  %-28s %-12s %-10s %-22s %s\n", "NAMESPACE/NAME", "RUNTIME", "PHASE",
               "POD", "REASON");
        for (uint32_t i = 0; i < nr; i++) {
            const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
            char nsname[256];
            snprintf(nsname, sizeof nsname, "%s/%s", r->run->meta.ns, r->run->meta.name);
            printf("  %-28s %-12s %-10s %-22s %s\n", nsname, r->run->runtime ? r->run->runtime : "-",
                   tly_run_phase_name(r->phase), r->assigned ? r->assigned : "-",
                   r->reason ? r->reason : "-");
            if (r->message)
                printf("      %s\n", r->message);
        }
        printf("\n");
    }
    if (np) {
        printf("Runtime Pods (used by the scheduler / admitted by runtimed, of capacity)\n");
        for (uint32_t i = 0; i < np; i++) {
            const tly_rs_pod_result *p = tly_runsched_pod_at(rs, i);
            printf("  %s/%s (runtime %s, %s)\n    used:     ", p->pod->meta.ns, p->pod->meta.name,
                   p->runtime, tly_rpod_state_text(p->state));
            print_usage_line(p, p->used, names);
            printf("\n    admitted: ");
            print_usage_line(p, &p->admitted, names);
            printf("\n");
        }
        printf("\n");
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
    int64_t now_s = 0;
    if (now && !tly_parse_time(now, &now_s)) {
        fprintf(stderr, "tally simulate: --now must be an RFC 3339 time such as "
                        "2026-11-29T13:00:00Z (got '%s')\n", now);
        return 2;
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    if (strcmp(out, "html") == 0) {
        fprintf(stderr, "tally simulate: -o html arrives with the report issue; use -o table or "
                        "-o json\n");
        return 2;
    }
    int errors;
    tly_store *s = tly_cmd_load(argc - i, argv + i, sched, &errors);
    bool have_clock = true;
    if (!now) {
        now_s = tly_store_newest_time(s);
        have_clock = now_s != TLY_NO_TIME;
    }
    tly_runsched *rs = tly_runsched_create(s, now_s, have_clock, tly_store_diags(s));
    tly_runsched_run(rs);
    tly_diags_sort(tly_store_diags(s));
    tly_cmd_print_sev(s, TLY_SEV_NOTE);
    tly_cmd_print_sev(s, TLY_SEV_WARNING);
    tly_cmd_print_sev(s, TLY_SEV_ERROR);
    fflush(stderr);
    if (!strcmp(out, "json")) {
        print_json(rs, tly_store_names(s));
    } else {
        print_table(rs, tly_store_names(s));
        print_summary(s);
    }
    tly_runsched_destroy(rs);
    tly_store_destroy(s);
    return errors ? 1 : 0;
}
