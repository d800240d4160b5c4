/*
** gang.c: whether a PodGroup's pods may run (gang.h).
**
** The subgroup tree is small (a few to a few dozen entries), so the
** evaluation is a memoised walk from the root over the parent links that the
** decoder checked (no cycles, every parent known).
*/
#include "tally/gang.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"

bool tly_gang_has_children(const tly_podgroup *pg, uint32_t i)
{
    for (uint32_t j = 0; j < pg->nsubgroups; j++)
        if (pg->subgroups[j].parent_idx == (int32_t)i)
            return true;
    return false;
}

int32_t tly_gang_subgroup_of(const tly_podgroup *pg, const tly_pod *p)
{
    if (!pg || pg->nsubgroups == 0)
        return -1;
    const char *name = tly_kvs_get(&p->meta.labels, TLY_SUBGROUP_LABEL);
    if (!name)
        return -1;
    for (uint32_t i = 0; i < pg->nsubgroups; i++)
        if (pg->subgroups[i].name && strcmp(pg->subgroups[i].name, name) == 0)
            return tly_gang_has_children(pg, i) ? -1 : (int32_t)i;
    return -1;
}

uint32_t tly_gang_subgroup_need(const tly_podgroup *pg, uint32_t i, uint32_t running)
{
    int32_t m = pg->subgroups[i].min_member;
    return m > 0 && (uint32_t)m > running ? (uint32_t)m - running : 0;
}

/* sat[i]: 0 unknown, 1 satisfied, 2 not. */
static bool satisfied(const tly_podgroup *pg, const uint32_t *count, uint32_t i, uint8_t *sat)
{
    if (sat[i])
        return sat[i] == 1;
    const tly_subgroup *g = &pg->subgroups[i];
    uint32_t children = 0, ready = 0;
    for (uint32_t j = 0; j < pg->nsubgroups; j++) {
        if (pg->subgroups[j].parent_idx != (int32_t)i)
            continue;
        children++;
        ready += satisfied(pg, count, j, sat);
    }
    bool ok;
    if (children == 0)
        ok = count[i] >= (uint32_t)(g->min_member > 0 ? g->min_member : 0);
    else
        ok = ready >= (g->min_subgroup >= 0 ? (uint32_t)g->min_subgroup : children);
    sat[i] = ok ? 1 : 2;
    return ok;
}

/* The PodGroup's own condition over its top-level subgroups. */
static bool root_satisfied(const tly_podgroup *pg, const uint32_t *count, uint32_t total, uint8_t *sat,
                           int32_t *short_of)
{
    uint32_t top = 0, ready = 0;
    int32_t first_short = -1;
    for (uint32_t i = 0; i < pg->nsubgroups; i++) {
        if (pg->subgroups[i].parent_idx >= 0)
            continue;
        top++;
        if (satisfied(pg, count, i, sat))
            ready++;
        else if (first_short < 0)
            first_short = (int32_t)i;
    }
    bool ok;
    if (pg->min_subgroup >= 0) {
        ok = ready >= (uint32_t)pg->min_subgroup;
    } else {
        ok = ready == top && total >= (uint32_t)(pg->min_member > 0 ? pg->min_member : 0);
        if (ready == top)
            first_short = -1;
    }
    /* Down to the first leaf that falls short: the message names what to change. */
    for (bool deeper = first_short >= 0; deeper;) {
        deeper = false;
        for (uint32_t j = 0; j < pg->nsubgroups; j++)
            if (pg->subgroups[j].parent_idx == first_short && !satisfied(pg, count, j, sat)) {
                first_short = (int32_t)j;
                deeper = true;
                break;
            }
    }
    if (!ok && short_of)
        *short_of = first_short;
    return ok;
}

bool tly_gang_satisfied(const tly_podgroup *pg, const uint32_t *count, uint32_t total, uint8_t *keep,
                        int32_t *short_of)
{
    uint8_t *sat = tly_xcalloc(pg->nsubgroups + 1, 1);
    bool ok = root_satisfied(pg, count, total, sat, short_of);
    for (uint32_t i = 0; keep && i < pg->nsubgroups; i++) {
        bool k = ok;
        for (int32_t at = (int32_t)i; k && at >= 0; at = pg->subgroups[at].parent_idx)
            k = satisfied(pg, count, (uint32_t)at, sat);
        keep[i] = k;
    }
    free(sat);
    return ok;
}
