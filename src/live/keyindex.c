/*
** keyindex.c: the writer's group -> member-set multimap (keyindex.h).
**
** Both levels are one kind of linear-probing table of (hash, string) with
** a power-of-two capacity, at most half full, that grows step by step
** (table below); a group's slot also holds its
** table of members. A removal shifts the entries after it back (no
** tombstones), so a table never fills with dead slots however long the
** event stream. A group whose last member leaves is removed, so
** nodes and PodGroups that went away cost nothing.
*/
#include "keyindex.h"

#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "tally/arena.h"

/* One slot of a table: a member key, or a group name with its members. */
typedef struct {
    uint64_t h;       /* 0: empty slot */
    char *key;
    struct table *members;   /* a group's; NULL in a member table */
} slot;

/*
** A table grows without a pause: on growth the full array becomes `old`,
** and every later put moves at least MOVE_PER_PUT of its slots (whole runs
** of occupied slots) into the new array, until none are left. A run is
** bounded by empty slots, so moving a whole run leaves every probe
** sequence in the old array intact, and a lookup tries the old array and
** then the new one. (A one-shot rehash of the groups table held the
** writer's lock 2.4 ms at 65,536 PodGroups and 4.2 ms at 131,072, doubling
** with each growth.)
*/
typedef struct table {
    slot *s;
    uint32_t n, cap;          /* n: entries in both arrays */
    slot *old;                /* NULL unless a growth is under way */
    uint32_t oldcap, cursor;  /* cursor: the next old slot to visit, always an empty one between puts */
    uint32_t left;            /* old slots not yet visited */
} table;

enum { MOVE_PER_PUT = 8 };

struct tly_keyindex {
    table groups;
    uint64_t members;
    void *junk;   /* arrays to free after the caller's lock (drop_array) */
};

/* FNV-1a, mixed (splitmix64's finaliser), never 0 (0 marks an empty slot). */
static uint64_t hash_of(const char *s)
{
    uint64_t h = tly_fnv1a(TLY_FNV_SEED, s, strlen(s));
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h ? h : 1;
}

/* ---- one table, for both levels ------------------------------------------------ */

/*
** Large arrays are not freed under the caller's lock: glibc maps them on
** their own, and unmapping cost 1.2 ms at 8,192 slots and 4.3 ms at 32,768
** on this machine's (paravirtualised) kernel. They are chained on *junk,
** which tly_keyindex_junk() hands to the caller to free after unlocking.
** junk NULL: free at once.
*/
enum { JUNK_MIN_SLOTS = 2048 };

static void drop_array(slot *a, uint32_t cap, void **junk)
{
    if (junk && a && cap >= JUNK_MIN_SLOTS) {
        *(void **)a = *junk;
        *junk = a;
    } else {
        free(a);
    }
}

/* The slot of key (h its hash) in array s of cap slots, or the empty slot where it would go. */
static uint32_t array_find(const slot *s, uint32_t cap, uint64_t h, const char *key)
{
    uint32_t mask = cap - 1, i = (uint32_t)h & mask;
    while (s[i].h && (s[i].h != h || strcmp(s[i].key, key)))
        i = (i + 1) & mask;
    return i;
}

/* Places a slot known to be absent into array s of cap slots. */
static void array_place(slot *s, uint32_t cap, const slot *e)
{
    uint32_t j = (uint32_t)e->h & (cap - 1);
    while (s[j].h)
        j = (j + 1) & (cap - 1);
    s[j] = *e;
}

/* The occupied slot holding key (h its hash), in either array, or NULL. */
static slot *table_lookup(const table *t, uint64_t h, const char *key)
{
    if (t->old) {
        slot *o = &t->old[array_find(t->old, t->oldcap, h, key)];
        if (o->h)
            return o;
    }
    if (!t->cap)
        return NULL;
    slot *s = &t->s[array_find(t->s, t->cap, h, key)];
    return s->h ? s : NULL;
}

/* The slot holding key, or NULL. */
static slot *table_get(const table *t, const char *key)
{
    return t->n ? table_lookup(t, hash_of(key), key) : NULL;
}

/* Moves the old array's runs into the new one: at least `budget` slots, every slot when 0. */
static void table_migrate(table *t, uint32_t budget, void **junk)
{
    uint32_t mask = t->oldcap - 1, seen = 0;
    while (t->old && (!budget || seen < budget || t->old[t->cursor].h)) {
        slot *o = &t->old[t->cursor];
        if (o->h) {
            array_place(t->s, t->cap, o);
            memset(o, 0, sizeof *o);
        }
        t->cursor = (t->cursor + 1) & mask;
        seen++;
        if (--t->left == 0) {
            drop_array(t->old, t->oldcap, junk);
            t->old = NULL;
        }
    }
}

/* Starts a growth: the array becomes old, the new one twice its size, moving begins at an empty slot. */
static void table_grow(table *t, void **junk)
{
    table_migrate(t, 0, junk);  /* a growth under way is finished first (not reached: see table_put) */
    uint32_t cap = t->cap ? t->cap * 2 : 4;
    if (t->cap) {
        uint32_t e = 0;
        while (t->s[e].h)
            e++;  /* at most half full: an empty slot exists */
        t->old = t->s;
        t->oldcap = t->cap;
        t->cursor = e;
        t->left = t->cap;
    }
    t->s = tly_xcalloc(cap, sizeof *t->s);
    t->cap = cap;
}

/* The slot for key, made (key copied, members NULL) when absent; *made says which. */
static slot *table_put(table *t, const char *key, bool *made, void **junk)
{
    if (t->old)
        table_migrate(t, MOVE_PER_PUT, junk);
    uint64_t h = hash_of(key);
    slot *s = t->n ? table_lookup(t, h, key) : NULL;
    *made = !s;
    if (s)
        return s;
    if (2 * (t->n + 1) > t->cap)
        table_grow(t, junk);
    s = &t->s[array_find(t->s, t->cap, h, key)];
    s->h = h;
    s->key = tly_xstrdup(key);
    s->members = NULL;
    t->n++;
    return s;
}

/* Whether slot j, whose home is k, may move back to the hole at i. */
static bool may_fill(uint32_t i, uint32_t j, uint32_t k)
{
    return i <= j ? (k <= i || k > j) : (k <= i && k > j);
}

/* Empties slot s of array a (cap slots), shifting the entries of its run after it back. */
static void array_remove(slot *a, uint32_t cap, slot *s)
{
    uint32_t mask = cap - 1, i = (uint32_t)(s - a);
    for (uint32_t j = (i + 1) & mask; a[j].h; j = (j + 1) & mask) {
        if (may_fill(i, j, (uint32_t)a[j].h & mask)) {
            a[i] = a[j];
            i = j;
        }
    }
    memset(&a[i], 0, sizeof a[i]);
}

/*
** Empties slot s (its key and members already freed). In the old array the
** shift stays inside s's run, which lies wholly ahead of the cursor (runs
** are moved whole), so the moving is not disturbed.
*/
static void table_remove(table *t, slot *s)
{
    bool in_old = t->old && s >= t->old && s < t->old + t->oldcap;
    if (in_old)
        array_remove(t->old, t->oldcap, s);
    else
        array_remove(t->s, t->cap, s);
    t->n--;
}

static void array_free(slot *a, uint32_t cap, void **junk);

static void table_free(table *t, void **junk)
{
    array_free(t->s, t->cap, junk);
    array_free(t->old, t->old ? t->oldcap : 0, junk);
}

/* Frees an array's keys and member tables, and the array (through junk when large). */
static void array_free(slot *a, uint32_t cap, void **junk)
{
    for (uint32_t i = 0; i < cap; i++) {
        free(a[i].key);
        if (a[i].members) {
            table_free(a[i].members, junk);
            free(a[i].members);
        }
    }
    drop_array(a, cap, junk);
}

/* ---- the index ------------------------------------------------------------------ */

tly_keyindex *tly_keyindex_new(void) { return tly_xcalloc(1, sizeof(tly_keyindex)); }

void tly_keyindex_free(tly_keyindex *ix)
{
    if (!ix)
        return;
    table_free(&ix->groups, NULL);
    tly_keyindex_junk_free(ix->junk);
    free(ix);
}

void tly_keyindex_add(tly_keyindex *ix, const char *group, const char *member)
{
    bool made;
    slot *g = table_put(&ix->groups, group, &made, &ix->junk);
    if (made)
        g->members = tly_xcalloc(1, sizeof *g->members);
    table_put(g->members, member, &made, &ix->junk);
    ix->members += made;
}

void tly_keyindex_del(tly_keyindex *ix, const char *group, const char *member)
{
    slot *g = table_get(&ix->groups, group);
    slot *m = g ? table_get(g->members, member) : NULL;
    if (!m)
        return;
    free(m->key);
    table_remove(g->members, m);
    ix->members--;
    if (!g->members->n) {
        /* The group's last member left: the group goes too. */
        free(g->key);
        table_free(g->members, &ix->junk);
        free(g->members);
        table_remove(&ix->groups, g);
    }
}

bool tly_keyindex_has(const tly_keyindex *ix, const char *group, const char *member)
{
    const slot *g = table_get(&ix->groups, group);
    return g && table_get(g->members, member);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

uint32_t tly_keyindex_members(const tly_keyindex *ix, const char *group, const char ***out)
{
    const slot *g = table_get(&ix->groups, group);
    *out = NULL;
    if (!g)
        return 0;
    const table *t = g->members;
    const char **v = tly_xmalloc(t->n * sizeof *v);
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->s[i].h)
            v[n++] = t->s[i].key;
    for (uint32_t i = 0; t->old && i < t->oldcap; i++)
        if (t->old[i].h)
            v[n++] = t->old[i].key;
    qsort(v, n, sizeof *v, by_str);
    *out = v;
    return n;
}

uint32_t tly_keyindex_groups(const tly_keyindex *ix) { return ix->groups.n; }
uint64_t tly_keyindex_size(const tly_keyindex *ix) { return ix->members; }

void *tly_keyindex_junk(tly_keyindex *ix)
{
    void *j = ix->junk;
    ix->junk = NULL;
    return j;
}

void tly_keyindex_junk_free(void *junk)
{
    while (junk) {
        void *next = *(void **)junk;
        free(junk);
        junk = next;
    }
}
