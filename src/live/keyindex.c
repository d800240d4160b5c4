/*
** keyindex.c: the writer's group -> member-set multimap (keyindex.h).
**
** Both levels are one kind of linear-probing table of (hash, string) with
** a power-of-two capacity, at most half full; a group's slot also holds its
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

typedef struct table {
    slot *s;
    uint32_t n, cap;
} table;

struct tly_keyindex {
    table groups;
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

/* ---- one table, for both levels ------------------------------------------------ */

/* The slot of key (h its hash) or the empty slot where it would go (cap > 0). */
static uint32_t table_find(const table *t, uint64_t h, const char *key)
{
    uint32_t mask = t->cap - 1, i = (uint32_t)h & mask;
    while (t->s[i].h && (t->s[i].h != h || strcmp(t->s[i].key, key)))
        i = (i + 1) & mask;
    return i;
}

/* The slot holding key, or NULL. */
static slot *table_get(const table *t, const char *key)
{
    if (!t->n)
        return NULL;
    slot *s = &t->s[table_find(t, hash_of(key), key)];
    return s->h ? s : NULL;
}

static void table_grow(table *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 4;
    slot *s = tly_xcalloc(cap, sizeof *s);
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->s[i].h)
            continue;
        uint32_t j = (uint32_t)t->s[i].h & (cap - 1);
        while (s[j].h)
            j = (j + 1) & (cap - 1);
        s[j] = t->s[i];
    }
    free(t->s);
    t->s = s;
    t->cap = cap;
}

/* The slot for key, made (key copied, members NULL) when absent; *made says which. */
static slot *table_put(table *t, const char *key, bool *made)
{
    if (2 * (t->n + 1) > t->cap)
        table_grow(t);
    uint64_t h = hash_of(key);
    slot *s = &t->s[table_find(t, h, key)];
    *made = !s->h;
    if (*made) {
        s->h = h;
        s->key = tly_xstrdup(key);
        s->members = NULL;
        t->n++;
    }
    return s;
}

/* Whether slot j, whose home is k, may move back to the hole at i. */
static bool may_fill(uint32_t i, uint32_t j, uint32_t k)
{
    return i <= j ? (k <= i || k > j) : (k <= i && k > j);
}

/* Empties slot s (its key and members already freed), shifting the entries after it back. */
static void table_remove(table *t, slot *s)
{
    uint32_t mask = t->cap - 1, i = (uint32_t)(s - t->s);
    for (uint32_t j = (i + 1) & mask; t->s[j].h; j = (j + 1) & mask) {
        if (may_fill(i, j, (uint32_t)t->s[j].h & mask)) {
            t->s[i] = t->s[j];
            i = j;
        }
    }
    memset(&t->s[i], 0, sizeof t->s[i]);
    t->n--;
}

static void table_free(table *t)
{
    for (uint32_t i = 0; i < t->cap; i++) {
        free(t->s[i].key);
        if (t->s[i].members) {
            table_free(t->s[i].members);
            free(t->s[i].members);
        }
    }
    free(t->s);
}

/* ---- the index ------------------------------------------------------------------ */

tly_keyindex *tly_keyindex_new(void) { return tly_xcalloc(1, sizeof(tly_keyindex)); }

void tly_keyindex_free(tly_keyindex *ix)
{
    if (!ix)
        return;
    table_free(&ix->groups);
    free(ix);
}

void tly_keyindex_add(tly_keyindex *ix, const char *group, const char *member)
{
    bool made;
    slot *g = table_put(&ix->groups, group, &made);
    if (made)
        g->members = tly_xcalloc(1, sizeof *g->members);
    table_put(g->members, member, &made);
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
        table_free(g->members);
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
    qsort(v, n, sizeof *v, by_str);
    *out = v;
    return n;
}

uint32_t tly_keyindex_groups(const tly_keyindex *ix) { return ix->groups.n; }
uint64_t tly_keyindex_size(const tly_keyindex *ix) { return ix->members; }
