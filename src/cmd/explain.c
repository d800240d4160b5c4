/*
** explain.c: `tally explain PATH... (pod NS/NAME | run NS/NAME | queue NAME)`
** (contract section 8).
**
** Runs the same engines as `tally simulate` on the same input, then explains
** one decision for a person: a pod's queue path and why each node refuses it,
** a Run's Runtime Pods with their projected load and score order, or a
** queue's usage against every limit and the pods that charge it.
*/
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common.h"
#include "tally/decode.h"
#include "tally/podsched.h"
#include "tally/runsched.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: tally explain [--now RFC3339] [--scheduler-name NAME] [--queue-admission-gating all|opt-in|off] "
                 "(PATH... | --kubeconfig FILE [--context NAME] | --in-cluster) "
                 "(pod NS/NAME | run NS/NAME | queue NAME)\n\n"
                 "Explains, for a person, one decision of tally simulate on the same input:\n"
                 "where a pod or a Run went and why, or why it waits (each queue limit, quota\n"
                 "and node it was checked against), or what a queue holds against its limits.\n"
                 "A bare NAME is in the default namespace. Exit 1 when the object is not in\n"
                 "the input.\n\n" TLY_CMD_LIVE_HELP);
}

/* Splits "ns/name"; a bare name means the default namespace. */
static void split(char *arg, const char **ns, const char **name)
{
    char *slash = strchr(arg, '/');
    if (slash) {
        *slash = '\0';
        *ns = arg;
        *name = slash + 1;
    } else {
        *ns = "default";
        *name = arg;
    }
}

int tly_cmd_explain(int argc, char **argv)
{
    const char *now = NULL, *sched = NULL;
    tly_cmd_input in = {0};
    tly_cmd_live_init(&in.live);
    int i = 1, lr;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (tly_cmd_engine_option(argc, argv, &i, &now, &sched, &in.gating)) {
            continue;
        } else if ((lr = tly_cmd_live_option(argc, argv, &i, "explain", &in.live)) != 0) {
            if (lr < 0)
                return 2;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tally explain: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            break;
        }
    }
    int npaths = argc - i - 2;
    if (npaths < 0 || (npaths == 0) == !in.live.set) {
        if (npaths > 0)
            fprintf(stderr, "tally explain: give PATH... or a live source (--kubeconfig, "
                            "--context, --in-cluster), not both\n");
        usage(stderr);
        return 2;
    }
    in.npaths = npaths;
    in.paths = argv + i;
    const char *what = argv[argc - 2];
    char *target = argv[argc - 1];
    if (strcmp(what, "pod") && strcmp(what, "run") && strcmp(what, "queue")) {
        fprintf(stderr, "tally explain: expected pod NS/NAME, run NS/NAME or queue NAME at the end, got '%s'\n", what);
        return 2;
    }
    tly_cmd_engines e;
    int erc = tly_cmd_run_engines("explain", &in, sched, now, &e);
    if (erc)
        return erc;
    tly_store *s = e.s;
    tly_cmd_print_sev(s, TLY_SEV_ERROR);
    tly_runsched *rs = e.rs;
    tly_podsched *ps = e.ps;
    int rc = 0;
    const char *ns, *name;
    if (!strcmp(what, "pod")) {
        split(target, &ns, &name);
        int32_t k = tly_podsched_find(ps, ns, name);
        if (k < 0) {
            fprintf(stderr, "tally explain: no pod %s/%s scheduled by %s in the input\n", ns, name,
                    tly_store_scheduler_name(s));
            rc = 1;
        } else {
            tly_podsched_explain(ps, (uint32_t)k, stdout);
        }
    } else if (!strcmp(what, "run")) {
        split(target, &ns, &name);
        int32_t k = tly_runsched_find_run(rs, ns, name);
        if (k < 0) {
            fprintf(stderr, "tally explain: no Run %s/%s in the input\n", ns, name);
            rc = 1;
        } else {
            tly_runsched_explain(rs, (uint32_t)k, stdout);
        }
    } else {
        int32_t k = tly_queues_find(tly_podsched_queues(ps), target);
        if (k < 0) {
            fprintf(stderr, "tally explain: no queue %s in the input\n", target);
            rc = 1;
        } else {
            tly_podsched_explain_queue(ps, (uint32_t)k, stdout);
        }
    }
    tly_cmd_engines_free(&e);
    return rc;
}
