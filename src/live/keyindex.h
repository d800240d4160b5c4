/*
** keyindex.h: a writer-only multimap from a group name to a set of member
** keys, for the live state's "which pods to charge again" indexes (pods by
** node, pods by PodGroup).
**
** No fork ever reads these, so they need no persistence: two levels of
** open-addressed hash tables (groups, then each group's members), changed
** in place. Adding or removing a member touches a few cache lines, where
** the persistent treap they replace walked and copied about 17 scattered
** nodes (the largest single cost of a pod event at 100,000 pods).
**
** Members come back sorted (tly_keyindex_members), so whatever the caller
** does with them happens in the same order whatever the events' order.
** Member keys are copied; the index owns its copies.
*/
#ifndef TALLY_LIVE_KEYINDEX_H
#define TALLY_LIVE_KEYINDEX_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tly_keyindex tly_keyindex;

tly_keyindex *tly_keyindex_new(void);
void tly_keyindex_free(tly_keyindex *ix);

/* Adds member to group (nothing when it is there already). */
void tly_keyindex_add(tly_keyindex *ix, const char *group, const char *member);
/* Removes member from group (nothing when it is not there). */
void tly_keyindex_del(tly_keyindex *ix, const char *group, const char *member);
/* Whether member is in group. */
bool tly_keyindex_has(const tly_keyindex *ix, const char *group, const char *member);

/*
** The members of group, sorted by strcmp, as a malloc'd array the caller
** frees (the strings are the index's, valid until its next change); the
** count is returned, 0 (and *out NULL) for a group with none.
*/
uint32_t tly_keyindex_members(const tly_keyindex *ix, const char *group, const char ***out);

/*
** Large arrays the index let go of (a grown table's old array, an emptied
** big group's), chained: taken under the caller's lock, freed with
** tly_keyindex_junk_free after it, so that unmapping them never holds the
** lock. Taking them is optional; the index frees what is left when freed.
*/
void *tly_keyindex_junk(tly_keyindex *ix);
void tly_keyindex_junk_free(void *junk);

/* Groups and members held (tests). */
uint32_t tly_keyindex_groups(const tly_keyindex *ix);
uint64_t tly_keyindex_size(const tly_keyindex *ix);

#endif
