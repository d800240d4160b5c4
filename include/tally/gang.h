/*
** gang.h: when a PodGroup's pods may run, with KAI's hierarchical PodGroups.
**
** A PodGroup without spec.subGroups is a gang of minMember pods. With
** subGroups (KAI's hierarchical-podgroup and min-subgroups designs) the
** PodGroup is the root of a tree:
**   - a pod belongs to the leaf subgroup its label kai.scheduler/subgroup-name
**     names; a pod whose label names no leaf belongs to the PodGroup itself;
**   - a leaf subgroup is satisfied when it has at least its minMember pods
**     (unset counts as 0: every pod of it is optional);
**   - a subgroup with children is satisfied when at least minSubGroup of its
**     children are (unset: all of them);
**   - the PodGroup is satisfied when at least its minSubGroup top-level
**     subgroups are; without minSubGroup, when all of them are and it has at
**     least minMember pods in all.
** A pod may run only where every subgroup on its path is satisfied and the
** PodGroup is: a subgroup below its minimum runs none of its pods, even when
** the PodGroup can do without it.
*/
#ifndef TALLY_GANG_H
#define TALLY_GANG_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/objects.h"

/* The label that puts a pod into a subgroup. */
#define TLY_SUBGROUP_LABEL "kai.scheduler/subgroup-name"

/* Whether subgroup i of pg has child subgroups (it is not a leaf). */
bool tly_gang_has_children(const tly_podgroup *pg, uint32_t i);

/* The leaf subgroup pod p belongs to in pg, or -1 (none, or pg has no subgroups). */
int32_t tly_gang_subgroup_of(const tly_podgroup *pg, const tly_pod *p);

/*
** Whether pg may run with count[i] pods (running or placed) in subgroup i
** and total pods in all. keep (pg->nsubgroups entries, may be NULL) is set to
** whether the pods of each subgroup may run. short_of (may be NULL) receives,
** when pg is not satisfied, the first leaf subgroup (spec order, from the
** first top-level subgroup that falls short) that is not, or -1 when every
** subgroup is satisfied and the PodGroup's own minMember is what falls short.
*/
bool tly_gang_satisfied(const tly_podgroup *pg, const uint32_t *count, uint32_t total, uint8_t *keep,
                        int32_t *short_of);

/*
** How many pods of leaf subgroup i are needed beyond those already running
** (`running`) for it to be satisfied.
*/
uint32_t tly_gang_subgroup_need(const tly_podgroup *pg, uint32_t i, uint32_t running);

#endif
