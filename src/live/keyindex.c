/*
** keyindex.c: the writer's group -> member-set multimap (keyindex.h).
**
** Both levels are linear-probing tables of (hash, string) with a power-of-
** two capacity, at most half full. A removal shifts the entries after it
** back (no tombstones), so a table never fills with dead slots however
** long the event stream. A group whose last member leaves is removed, so
** nodes and PodGroups that went away cost nothing.
*/
#include "keyindex.h"

#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "tally/arena.h"

typedef struct {
    uint64_t h;       /* 0: empty slot */
    char *key;
} slot;

/* One open-addressed set of strings. */
typedef struct {
    slot *s;
    uint32_t n, cap;
} sset;

typedef struct {
    uint64_t h;
    char *name;
    sset members;
} group;

struct tly_keyindex {
    group *g;
    uint32_t n, cap;
    uint64_t members;
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

/* Whether slot j, whose home is k, may move back to the hole at i. */
static bool may_fill(uint32_t i, uint32_t j, uint32_t k)
{
    return i <= j ? (k <= i || k > j) : (k <= i && k > j);
}

/* ---- one set of strings ------------------------------------------------------- */

/* The slot of key (h its hash) or the empty slot where it would go. */
static uint32_t sset_find(const sset *s, uint64_t h, const char *key)
{
    uint32_t mask = s->cap - 1, i = (uint32_t)h & mask;
    while (s->s[i].h && (s->s[i].h != h || strcmp(s->s[i].key, key)))
        i = (i + 1) & mask;
    return i;
}

static void sset_grow(sset *s)
{
    sset bigger = {tly_xcalloc(s->cap ? s->cap * 2 : 4, sizeof(slot)), s->n, s->cap ? s->cap * 2 : 4};
    for (uint32_t i = 0; i < s->cap; i++) {
        if (!s->s[i].h)
            continue;
        uint32_t j = (uint32_t)s->s[i].h & (bigger.cap - 1);
        while (bigger.s[j].h)
            j = (j + 1) & (bigger.cap - 1);
        bigger.s[j] = s->s[i];
    }
    free(s->s);
    *s = bigger;
}

/* Adds key; false when it was there already. */
static bool sset_add(sset *s, const char *key)
{
    if (2 * (s->n + 1) > s->cap)
        sset_grow(s);
    uint64_t h = hash_of(key);
    uint32_t i = sset_find(s, h, key);
    if (s->s[i].h)
        return false;
    s->s[i].h = h;
    s->s[i].key = tly_xstrdup(key);
    s->n++;
    return true;
}

/* Removes key; false when it was not there. */
static bool sset_del(sset *s, const char *key)
{
    if (!s->n)
        return false;
    uint32_t mask = s->cap - 1, i = sset_find(s, hash_of(key), key);
    if (!s->s[i].h)
        return false;
    free(s->s[i].key);
    for (uint32_t j = (i + 1) & mask; s->s[j].h; j = (j + 1) & mask) {
        if (may_fill(i, j, (uint32_t)s->s[j].h & mask)) {
            s->s[i] = s->s[j];
            i = j;
        }
    }
    s->s[i].h = 0;
    s->s[i].key = NULL;
    s->n--;
    return true;
}

static void sset_free(sset *s)
{
    for (uint32_t i = 0; i < s->cap; i++)
        free(s->s[i].key);
    free(s->s);
}

/* ---- the groups ----------------------------------------------------------------- */

tly_keyindex *tly_keyindex_new(void) { return tly_xcalloc(1, sizeof(tly_keyindex)); }

void tly_keyindex_free(tly_keyindex *ix)
{
    if (!ix)
        return;
    for (uint32_t i = 0; i < ix->cap; i++) {
        if (ix->g[i].h) {
            free(ix->g[i].name);
            sset_free(&ix->g[i].members);
        }
    }
    free(ix->g);
    free(ix);
}

static uint32_t group_find(const tly_keyindex *ix, uint64_t h, const char *name)
{
    uint32_t mask = ix->cap - 1, i = (uint32_t)h & mask;
    while (ix->g[i].h && (ix->g[i].h != h || strcmp(ix->g[i].name, name)))
        i = (i + 1) & mask;
    return i;
}

static void groups_grow(tly_keyindex *ix)
{
    uint32_t cap = ix->cap ? ix->cap * 2 : 16;
    group *g = tly_xcalloc(cap, sizeof *g);
    for (uint32_t i = 0; i < ix->cap; i++) {
        if (!ix->g[i].h)
            continue;
        uint32_t j = (uint32_t)ix->g[i].h & (cap - 1);
        while (g[j].h)
            j = (j + 1) & (cap - 1);
        g[j] = ix->g[i];
    }
    free(ix->g);
    ix->g = g;
    ix->cap = cap;
}

/* The group named name, or NULL. */
static group *group_get(const tly_keyindex *ix, const char *name)
{
    if (!ix->n)
        return NULL;
    group *g = &ix->g[group_find(ix, hash_of(name), name)];
    return g->h ? g : NULL;
}

void tly_keyindex_add(tly_keyindex *ix, const char *group_name, const char *member)
{
    if (2 * (ix->n + 1) > ix->cap)
        groups_grow(ix);
    uint64_t h = hash_of(group_name);
    group *g = &ix->g[group_find(ix, h, group_name)];
    if (!g->h) {
        g->h = h;
        g->name = tly_xstrdup(group_name);
        memset(&g->members, 0, sizeof g->members);
        ix->n++;
    }
    if (sset_add(&g->members, member))
        ix->members++;
}

/* Removes the (now empty) group at slot i, shifting the ones after it back. */
static void group_drop(tly_keyindex *ix, uint32_t i)
{
    uint32_t mask = ix->cap - 1;
    free(ix->g[i].name);
    sset_free(&ix->g[i].members);
    for (uint32_t j = (i + 1) & mask; ix->g[j].h; j = (j + 1) & mask) {
        if (may_fill(i, j, (uint32_t)ix->g[j].h & mask)) {
            ix->g[i] = ix->g[j];
            i = j;
        }
    }
    memset(&ix->g[i], 0, sizeof ix->g[i]);
    ix->n--;
}

void tly_keyindex_del(tly_keyindex *ix, const char *group_name, const char *member)
{
    group *g = group_get(ix, group_name);
    if (!g || !sset_del(&g->members, member))
        return;
    ix->members--;
    if (!g->members.n)
        group_drop(ix, (uint32_t)(g - ix->g));
}

bool tly_keyindex_has(const tly_keyindex *ix, const char *group_name, const char *member)
{
    const group *g = group_get(ix, group_name);
    return g && g->members.n && g->members.s[sset_find(&g->members, hash_of(member), member)].h;
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

uint32_t tly_keyindex_members(const tly_keyindex *ix, const char *group_name, const char ***out)
{
    const group *g = group_get(ix, group_name);
    *out = NULL;
    if (!g)
        return 0;
    const char **v = tly_xmalloc(g->members.n * sizeof *v);
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->members.cap; i++)
        if (g->members.s[i].h)
            v[n++] = g->members.s[i].key;
    qsort(v, n, sizeof *v, by_str);
    *out = v;
    return n;
}

uint32_t tly_keyindex_groups(const tly_keyindex *ix) { return ix->n; }
uint64_t tly_keyindex_size(const tly_keyindex *ix) { return ix->members; }
