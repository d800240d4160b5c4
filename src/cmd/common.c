/*
** common.c: loading inputs for the subcommands (common.h).
*/
#include "common.h"

#include <stdio.h>

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

void tly_cmd_print_sev(const tly_store *s, int sev)
{
    tly_diags *d = tly_store_diags((tly_store *)s);
    for (size_t i = 0; i < tly_diags_count(d); i++) {
        const tly_diag *g = tly_diags_get(d, i);
        if (g->sev == sev)
            tly_diag_print(stderr, g);
    }
}
