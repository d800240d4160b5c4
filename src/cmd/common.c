/*
** common.c: loading inputs for the subcommands (common.h).
*/
#include "common.h"

#include <stdio.h>
#include <string.h>

#include "tally/decode.h"
#include "tally/queues.h"
#include "tally/podsched.h"
#include "tally/runsched.h"

tly_store *tly_cmd_load(int npaths, char **paths, const char *scheduler_name, int *errors)
{
    tly_store *s = tly_store_create();
    if (scheduler_name)
        tly_store_set_scheduler_name(s, scheduler_name);
    int e = 0;
    for (int i = 0; i < npaths; i++)
        e += tly_store_load_path(s, paths[i]);
    tly_store_finish(s);
    *errors = e;
    return s;
}

int tly_cmd_gating_check(const char *cmd, const char *gating)
{
    if (gating && tly_gating_mode_parse(gating) == TLY_GATING_UNSET) {
        fprintf(stderr, "tally %s: --queue-admission-gating must be all, opt-in or off (got '%s')\n", cmd,
                gating);
        return 2;
    }
    return 0;
}

tly_store *tly_cmd_load_input(const char *cmd, const tly_cmd_input *in, const char *scheduler_name,
                              int *errors)
{
    tly_store *s = tly_store_create();
    if (scheduler_name)
        tly_store_set_scheduler_name(s, scheduler_name);
    if (in->gating)
        tly_store_set_gating_mode(s, tly_gating_mode_parse(in->gating));
    if (in->crds)
        tly_store_set_crds(s, in->crds);
    if (!in->live.set) {
        int e = 0;
        for (int i = 0; i < in->npaths; i++)
            e += tly_store_load_path(s, in->paths[i]);
        tly_store_finish(s);
        *errors = e;
        return s;
    }
    int64_t clock;
    if (tly_cmd_live_load(cmd, &in->live, s, &clock, errors)) {
        tly_store_destroy(s);
        return NULL;
    }
    if (clock != INT64_MIN)
        tly_store_set_clock(s, clock);
    tly_store_finish(s);
    return s;
}

void tly_cmd_print_sev(const tly_store *s, int sev)
{
    tly_diags *d = tly_store_diags((tly_store *)s);
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (g->sev == sev)
            tly_diag_print(stderr, g);
    }
}

int tly_cmd_run_engines(const char *cmd, const tly_cmd_input *in, const char *scheduler_name,
                        const char *now, tly_cmd_engines *out)
{
    out->now = 0;
    out->have_clock = true;
    if (tly_cmd_gating_check(cmd, in->gating))
        return 2;
    if (now && !tly_parse_time(now, &out->now)) {
        fprintf(stderr, "tally %s: --now must be an RFC 3339 time such as 2026-11-29T13:00:00Z "
                        "(got '%s')\n", cmd, now);
        return 2;
    }
    out->s = tly_cmd_load_input(cmd, in, scheduler_name, &out->errors);
    if (!out->s)
        return 1;
    if (!now) {
        out->now = tly_store_clock(out->s);
        if (out->now == TLY_NO_TIME)
            out->now = tly_store_newest_time(out->s);
        out->have_clock = out->now != TLY_NO_TIME;
    }
    /* Capacity annotation problems are warnings of the input itself. */
    out->rs = tly_runsched_create(out->s, out->now, out->have_clock, tly_store_diags(out->s));
    tly_runsched_run(out->rs);
    out->ps = tly_podsched_create(out->s);
    tly_podsched_run(out->ps);
    return 0;
}

void tly_cmd_engines_free(tly_cmd_engines *e)
{
    tly_podsched_destroy(e->ps);
    tly_runsched_destroy(e->rs);
    tly_store_destroy(e->s);
}

int tly_cmd_paths_start(int argc, char **argv, const char *cmd, void (*usage)(FILE *))
{
    if (argc < 2)
        return 1;
    const char *a = argv[1];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
        usage(stdout);
        return TLY_CMD_HELP;
    }
    if (!strcmp(a, "--"))
        return 2;
    if (a[0] == '-' && a[1]) {
        fprintf(stderr, "tally %s: unknown option '%s'\n", cmd, a);
        usage(stderr);
        return TLY_CMD_USAGE;
    }
    return 1;
}

bool tly_cmd_engine_option(int argc, char **argv, int *i, const char **now, const char **sched,
                           const char **gating)
{
    const char *a = argv[*i];
    if (gating && !strcmp(a, "--queue-admission-gating") && *i + 1 < argc) {
        *gating = argv[++*i];
        return true;
    }
    if (gating && !strncmp(a, "--queue-admission-gating=", 25)) {
        *gating = a + 25;
        return true;
    }
    if (!strcmp(a, "--now") && *i + 1 < argc) {
        *now = argv[++*i];
    } else if (!strncmp(a, "--now=", 6)) {
        *now = a + 6;
    } else if (!strcmp(a, "--scheduler-name") && *i + 1 < argc) {
        *sched = argv[++*i];
    } else if (!strncmp(a, "--scheduler-name=", 17)) {
        *sched = a + 17;
    } else {
        return false;
    }
    return true;
}
