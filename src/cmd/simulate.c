/*
** simulate.c: `tally simulate [--now RFC3339] [-o table|json|html] PATH...`
** (contract section 3).
**
** Loads the objects, then runs the engines until nothing more can be placed:
** Runs onto Runtime Pods and each Runtime Pod's runtimed admission
** (runsched.h), and tally's pods onto nodes under queue policy
** (podsched.h). Prints pods, queues, runs and runtimePods.
** Exit 1 if any input could not be read or parsed, else 0.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "tally/decode.h"
#include "tally/json.h"
#include "tally/podsched.h"
#include "tally/report.h"
#include "tally/runsched.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tally simulate [--now RFC3339] [-o table|json|html] [--scheduler-name NAME] [--queue-admission-gating all|opt-in|off] "
            "(PATH... | --kubeconfig FILE [--context NAME] | --in-cluster)\n\n"
            "Loads a cluster (kubectl get -o yaml|json dumps, example files, directories, a\n"
            "tally snapshot, or the API server itself) and runs tally's scheduling engine over\n"
            "it until nothing more can be placed.\n\n" TLY_CMD_LIVE_HELP);
}

static const char *qtext(tly_qty q, char *buf)
{
    tly_qty_format(q, buf, TLY_QTY_BUFSZ);
    return buf;
}

static void json_pods(tly_json *j, tly_podsched *ps)
{
    tly_queues *qs = tly_podsched_queues(ps);
    tly_json_key(j, "pods");
    tly_json_begin_array(j);
    for (uint32_t i = 0; i < tly_podsched_npods(ps); i++) {
        const tly_ps_result *r = tly_podsched_pod(ps, i);
        tly_json_begin_object(j);
        tly_json_key(j, "namespace");
        tly_json_string(j, r->pod->meta.ns);
        tly_json_key(j, "name");
        tly_json_string(j, r->pod->meta.name);
        tly_json_key(j, "queue");
        tly_json_string(j, r->queue);
        tly_json_key(j, "state");
        tly_json_string(j, r->state);
        tly_json_key(j, "node");
        tly_json_string(j, r->node);
        tly_json_key(j, "reason");
        tly_json_string(j, r->reason);
        tly_json_key(j, "message");
        tly_json_string(j, r->message);
        tly_json_key(j, "accounted");
        tly_json_begin_object(j);
        for (uint32_t e = 0; e < r->ncharges; e++) {
            tly_json_key(j, tly_queues_accres(qs, r->charges[e].ar)->meta.name);
            tly_json_qty(j, r->charges[e].q);
        }
        tly_json_end_object(j);
        tly_json_end_object(j);
    }
    tly_json_end_array(j);
}

static void json_queues(tly_json *j, tly_podsched *ps, tly_names *names)
{
    tly_queues *qs = tly_podsched_queues(ps);
    tly_json_key(j, "queues");
    tly_json_begin_array(j);
    for (uint32_t i = 0; i < tly_queues_count(qs); i++) {
        const tly_queue *q = tly_queues_queue(qs, i);
        tly_json_begin_object(j);
        tly_json_key(j, "name");
        tly_json_string(j, q->meta.name);
        tly_json_key(j, "parent");
        tly_json_string(j, q->parent && *q->parent ? q->parent : NULL);
        tly_json_key(j, "allocated");
        tly_json_rvec(j, tly_queues_allocated(qs, i), names);
        tly_json_key(j, "allocatedNonPreemptible");
        tly_json_rvec(j, tly_queues_allocated_np(qs, i), names);
        tly_json_key(j, "accounted");
        tly_json_begin_object(j);
        for (uint32_t a = 0; a < tly_queues_naccres(qs); a++) {
            tly_json_key(j, tly_queues_accres(qs, a)->meta.name);
            tly_json_begin_object(j);
            tly_json_key(j, "used");
            tly_json_qty(j, tly_queues_accounted_used(qs, i, a));
            tly_json_key(j, "limit");
            tly_json_qty(j, tly_queues_accounted_limit(qs, i, a));
            tly_json_end_object(j);
        }
        tly_json_end_object(j);
        tly_json_key(j, "conditions");
        tly_json_begin_array(j);
        tly_json_begin_object(j);
        tly_json_key(j, "type");
        tly_json_string(j, "AccountedResourcesResolved");
        const char *missing = tly_queues_missing_ref(qs, i);
        tly_json_key(j, "status");
        tly_json_string(j, missing ? "False" : "True");
        tly_json_key(j, "reason");
        tly_json_string(j, missing ? "AccountedResourceNotFound" : NULL);
        tly_json_key(j, "message");
        if (missing) {
            char msg[512];
            snprintf(msg, sizeof msg, "AccountedResource \"%s\" referenced by spec.accountedResources does not exist", missing);
            tly_json_string(j, msg);
        } else {
            tly_json_null(j);
        }
        tly_json_end_object(j);
        tly_json_end_array(j);
        tly_json_end_object(j);
    }
    tly_json_end_array(j);
}

static void print_json(tly_podsched *ps, tly_runsched *rs, tly_names *names)
{
    tly_json j;
    tly_json_init(&j, stdout, true);
    tly_json_begin_object(&j);
    json_pods(&j, ps);
    json_queues(&j, ps, names);
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

/*
** Column widths follow the content (the widest cell, the header at least):
** a long pod, queue or node name widens its column instead of pushing the
** rest of its row out of line.
*/
static int widen(int w, const char *cell)
{
    int n = (int)strlen(cell ? cell : "-");
    return n > w ? n : w;
}

/* NAMESPACE/NAME padded to width w, with no length limit. */
static void print_nsname(const tly_meta *m, int w)
{
    int n = (int)(strlen(m->ns) + 1 + strlen(m->name));
    printf("  %s/%s%*s", m->ns, m->name, w > n ? w - n : 0, "");
}

static int nsname_width(int w, const tly_meta *m)
{
    int n = (int)(strlen(m->ns) + 1 + strlen(m->name));
    return n > w ? n : w;
}

/* The widest queue name with its indent (two spaces per level) below parent. */
static int queue_name_width(tly_queues *qs, int32_t parent, int depth, int w)
{
    for (uint32_t i = 0; i < tly_queues_count(qs); i++) {
        if (tly_queues_parent(qs, i) != parent || depth > 32)
            continue;
        int n = depth * 2 + (int)strlen(tly_queues_queue(qs, i)->meta.name);
        w = queue_name_width(qs, (int32_t)i, depth + 1, n > w ? n : w);
    }
    return w;
}

/* The reserved gpu-memory AccountedResource charges bytes; the others plain numbers. */
static tly_human_unit accounted_unit(tly_queues *qs, uint32_t a)
{
    return tly_queues_accres_is_gpu_memory(qs, a) ? TLY_HUMAN_BYTES : TLY_HUMAN_NUMBER;
}

static void print_queue_rows(tly_queues *qs, tly_names *names, int32_t parent, int depth, int w)
{
    char u[TLY_QTY_BUFSZ], l[TLY_QTY_BUFSZ], g[TLY_QTY_BUFSZ];
    for (uint32_t i = 0; i < tly_queues_count(qs); i++) {
        if (tly_queues_parent(qs, i) != parent || depth > 32)
            continue;
        const tly_queue *q = tly_queues_queue(qs, i);
        const tly_rvec *al = tly_queues_allocated(qs, i);
        /* Amounts for people (issue 15 item 19): raw milli-units and Mi do not read at scale. */
        printf("  %*s%-*s cpu %s, memory %s, nvidia.com/gpu %s", depth * 2, "", w - depth * 2,
               q->meta.name, tly_qty_human(tly_rvec_get(al, TLY_R_CPU), TLY_HUMAN_CORES, u),
               tly_qty_human(tly_rvec_get(al, TLY_R_MEMORY), TLY_HUMAN_BYTES, l),
               tly_qty_human(tly_rvec_get(al, TLY_R_NVIDIA_GPU), TLY_HUMAN_DEVICES, g));
        bool first = true;
        for (uint32_t a = 0; a < tly_queues_naccres(qs); a++) {
            tly_qty lim = tly_queues_accounted_limit(qs, i, a);
            if (tly_qty_sign(lim) < 0)
                continue;
            printf("%s%s %s/%s", first ? "; accounted " : ", ", tly_queues_accres(qs, a)->meta.name,
                   tly_qty_human(tly_queues_accounted_used(qs, i, a), accounted_unit(qs, a), u),
                   tly_qty_human(lim, accounted_unit(qs, a), l));
            first = false;
        }
        if (tly_queues_missing_ref(qs, i))
            printf("  [AccountedResourceNotFound: %s]", tly_queues_missing_ref(qs, i));
        printf("\n");
        print_queue_rows(qs, names, (int32_t)i, depth + 1, w);
    }
}

static void print_pods_table(tly_podsched *ps, tly_names *names)
{
    uint32_t np = tly_podsched_npods(ps);
    if (np) {
        int wn = (int)strlen("NAMESPACE/NAME"), wq = 5, ws = 5, wd = 4;
        for (uint32_t i = 0; i < np; i++) {
            const tly_ps_result *r = tly_podsched_pod(ps, i);
            wn = nsname_width(wn, &r->pod->meta);
            wq = widen(wq, r->queue);
            ws = widen(ws, r->state);
            wd = widen(wd, r->node);
        }
        printf("Pods\n  %-*s %-*s %-*s %-*s %s\n", wn, "NAMESPACE/NAME", wq, "QUEUE", ws, "STATE", wd,
               "NODE", "REASON");
        for (uint32_t i = 0; i < np; i++) {
            const tly_ps_result *r = tly_podsched_pod(ps, i);
            print_nsname(&r->pod->meta, wn);
            printf(" %-*s %-*s %-*s %s\n", wq, r->queue ? r->queue : "-", ws, r->state, wd,
                   r->node ? r->node : "-", r->reason ? r->reason : "-");
            if (r->message)
                printf("      %s\n", r->message);
        }
        printf("\n");
    }
    tly_queues *qs = tly_podsched_queues(ps);
    if (tly_queues_count(qs)) {
        printf("Queues (allocated over each subtree; accounted used/limit where limited)\n");
        /* Roots, and queues whose parent is missing (they hang under no root). */
        print_queue_rows(qs, names, -1, 0, queue_name_width(qs, -1, 0, 0));
        printf("\n");
    }
}

static void print_table(tly_runsched *rs, tly_names *names)
{
    uint32_t nr = tly_runsched_nruns(rs), np = tly_runsched_npods(rs);
    if (nr) {
        int wn = (int)strlen("NAMESPACE/NAME"), wr = 7, wp = 5, wa = 3;
        for (uint32_t i = 0; i < nr; i++) {
            const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
            wn = nsname_width(wn, &r->run->meta);
            wr = widen(wr, r->run->runtime);
            wp = widen(wp, tly_run_phase_name(r->phase));
            wa = widen(wa, r->assigned);
        }
        printf("Runs\n  %-*s %-*s %-*s %-*s %s\n", wn, "NAMESPACE/NAME", wr, "RUNTIME", wp, "PHASE",
               wa, "POD", "REASON");
        for (uint32_t i = 0; i < nr; i++) {
            const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
            print_nsname(&r->run->meta, wn);
            printf(" %-*s %-*s %-*s %s\n", wr, r->run->runtime ? r->run->runtime : "-", wp,
                   tly_run_phase_name(r->phase), wa, r->assigned ? r->assigned : "-",
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

/* Writes w to f, in single quotes when a shell would split or expand it. */
static void put_word(FILE *f, const char *w)
{
    if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+-,") ==
                  strlen(w)) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (; *w; w++) {
        if (*w == '\'')
            fputs("'\\''", f);  /* close the quotes, an escaped quote, reopen */
        else
            fputc(*w, f);
    }
    fputc('\'', f);
}

/* " PATH..." or " --kubeconfig F --context C" / " --in-cluster": where the input came from. */
static void put_source(FILE *f, const tly_cmd_input *in)
{
    for (int k = 0; k < in->npaths; k++) {
        fputc(' ', f);
        put_word(f, in->paths[k]);
    }
    if (in->live.src.in_cluster)
        fputs(" --in-cluster", f);
    if (in->live.src.kubeconfig) {
        fputs(" --kubeconfig ", f);
        put_word(f, in->live.src.kubeconfig);
    }
    if (in->live.src.context) {
        fputs(" --context ", f);
        put_word(f, in->live.src.context);
    }
}

/* At most this many explain lines; a big cluster's waiting pods are in the table. */
#define HINTS_MAX 6

/* One "tally explain SOURCE KIND NS/NAME" line, while fewer than HINTS_MAX were printed. */
static void hint(const tly_cmd_input *in, const char *kind, const tly_meta *m, uint32_t *n)
{
    if ((*n)++ >= HINTS_MAX)
        return;
    if (*n == 1)
        printf("Why they wait (tally explain):\n");
    fputs("  tally explain", stdout);
    put_source(stdout, in);
    printf(" %s ", kind);
    put_word(stdout, m->ns);
    putchar('/');
    put_word(stdout, m->name);
    putchar('\n');
}

/*
** The table ends by saying how to ask why: one `tally explain` line for each
** pod that was not placed (Gated, Unschedulable, Invalid) and each Pending
** Run, up to HINTS_MAX, then how many more there are.
*/
static void print_explain_hints(tly_podsched *ps, tly_runsched *rs, const tly_cmd_input *in)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < tly_podsched_npods(ps); i++) {
        const tly_ps_result *r = tly_podsched_pod(ps, i);
        if (!strcmp(r->state, "Gated") || !strcmp(r->state, "Unschedulable") ||
            !strcmp(r->state, "Invalid"))
            hint(in, "pod", &r->pod->meta, &n);
    }
    for (uint32_t i = 0; i < tly_runsched_nruns(rs); i++) {
        const tly_rs_run_result *r = tly_runsched_run_at(rs, i);
        if (r->phase == TLY_RUN_PENDING)
            hint(in, "run", &r->run->meta, &n);
    }
    if (n > HINTS_MAX)
        printf("  ... and %u more (each one as above)\n", n - HINTS_MAX);
    if (n)
        printf("\n");
}

/* -o html: the report (report.h), titled with the command line's paths. */
static void print_html(tly_store *s, tly_podsched *ps, tly_runsched *rs, const tly_cmd_input *in,
                       int64_t now, bool have_clock)
{
    char *title = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&title, &len);
    if (f) {
        fputs("tally simulate", f);
        put_source(f, in);
        fclose(f);
    }
    tly_report_html_at(stdout, s, ps, rs, f ? title : "tally simulate", now, have_clock);
    free(title);
}

static int simulate_input(const tly_cmd_input *in, const char *out, const char *now,
                          const char *sched);

int tly_cmd_simulate(int argc, char **argv)
{
    const char *out = "table", *now = NULL, *sched = NULL;
    /* Options may come before or after the paths (`tally simulate DIR -o json`);
       after `--` every argument is a path. */
    char **paths = tly_xmalloc((size_t)argc * sizeof *paths);
    int npaths = 0;
    bool only_paths = false;
    tly_cmd_input in = {0};
    tly_cmd_live_init(&in.live);
    int lr;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_paths || a[0] != '-' || !a[1]) {
            paths[npaths++] = argv[i];
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            free(paths);
            return 0;
        } else if (!strcmp(a, "--")) {
            only_paths = true;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strncmp(a, "-o", 2) && a[2]) {
            out = a + 2;
        } else if (!strncmp(a, "--output=", 9)) {
            out = a + 9;
        } else if (tly_cmd_engine_option(argc, argv, &i, &now, &sched, &in.gating)) {
            continue;
        } else if ((lr = tly_cmd_live_option(argc, argv, &i, "simulate", &in.live)) != 0) {
            if (lr < 0) {
                free(paths);
                return 2;
            }
        } else {
            fprintf(stderr, "tally simulate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            free(paths);
            return 2;
        }
    }
    if (strcmp(out, "table") && strcmp(out, "json") && strcmp(out, "html")) {
        fprintf(stderr, "tally simulate: -o must be table, json or html (got '%s')\n", out);
        free(paths);
        return 2;
    }
    if ((npaths == 0) == !in.live.set) {
        if (npaths)
            fprintf(stderr, "tally simulate: give PATH... or a live source (--kubeconfig, "
                            "--context, --in-cluster), not both\n");
        usage(stderr);
        free(paths);
        return 2;
    }
    in.npaths = npaths;
    in.paths = paths;
    int rc = simulate_input(&in, out, now, sched);
    free(paths);
    return rc;
}

static int simulate_input(const tly_cmd_input *in, const char *out, const char *now,
                          const char *sched)
{
    tly_cmd_engines e;
    int rc = tly_cmd_run_engines("simulate", in, sched, now, &e);
    if (rc)
        return rc;
    tly_store *s = e.s;
    tly_runsched *rs = e.rs;
    tly_podsched *ps = e.ps;
    int64_t now_s = e.now;
    bool have_clock = e.have_clock;
    int errors = e.errors;
    tly_diags_sort(tly_store_diags(s));
    tly_cmd_print_sev(s, TLY_SEV_NOTE);
    tly_cmd_print_sev(s, TLY_SEV_WARNING);
    tly_cmd_print_sev(s, TLY_SEV_ERROR);
    fflush(stderr);
    if (!strcmp(out, "json")) {
        print_json(ps, rs, tly_store_names(s));
    } else if (!strcmp(out, "html")) {
        print_html(s, ps, rs, in, now_s, have_clock);
    } else {
        print_pods_table(ps, tly_store_names(s));
        print_table(rs, tly_store_names(s));
        print_explain_hints(ps, rs, in);
    }
    tly_cmd_engines_free(&e);
    return errors ? 1 : 0;
}
