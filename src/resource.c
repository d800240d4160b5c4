/*
** resource.c: the resource-name interner and resource lists (resource.h).
**
** The interner is an open-addressing hash table (FNV-1a, linear probing)
** over an array of names; an id is the name's index in that array, so ids
** are dense and stable for the life of the table. Clusters name few
** resources (tens, not thousands), so the table stays tiny and hot.
*/
#include "tally/resource.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"

/*
** Thread safety: the live state's writer interns names while webhook threads
** read them from forks (src/live/). Ids map to names through chunks that
** never move, so tly_names_str() needs no lock: a chunk and its entry are
** written before the count that publishes the id. Lookups and interning take
** the mutex; they are rare outside decoding.
**
** Chunk k holds NAME_BASE << k entries, so a table starts at a few hundred
** bytes and 17 chunks reach 8 M ids. (A fixed array of 4,096 chunk pointers
** was 32 KB to clear for every table, and every admission review makes
** several small tables: 12% of a resize decision on the live state.)
*/
#define NAME_BASE 64u
#define NAME_SEGS 17
#define NAME_MAX_IDS (4u << 20)  /* at most 4 M distinct names */

typedef struct {
    char *str;
    uint32_t len;
} name_entry;

struct tly_names {
    pthread_mutex_t mu;
    bool private;         /* one thread's (tly_names_create_private): mu is not taken */
    name_entry *chunks[NAME_SEGS];  /* id -> chunk seg_of(id) */
    uint32_t n;           /* published ids (atomic) */
    uint32_t *slots;      /* hash slot -> id + 1 (0 = empty), under mu */
    uint32_t nslots;      /* power of two */
};

static uint32_t hash_bytes(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

/* The chunk of id, and its place there: chunk k starts at NAME_BASE * (2^k - 1). */
static uint32_t seg_of(uint32_t id, uint32_t *at)
{
    uint32_t q = id / NAME_BASE + 1, k = 31u - (uint32_t)__builtin_clz(q);
    *at = id - NAME_BASE * ((1u << k) - 1);
    return k;
}

static const char *name_at(const tly_names *t, uint32_t id, uint32_t *len)
{
    uint32_t at, k = seg_of(id, &at);
    const name_entry *e = &t->chunks[k][at];
    if (len)
        *len = e->len;
    return e->str;
}

static void names_rehash(tly_names *t, uint32_t nslots)
{
    free(t->slots);
    t->slots = tly_xcalloc(nslots, sizeof *t->slots);
    t->nslots = nslots;
    for (uint32_t id = 0; id < t->n; id++) {
        uint32_t len;
        const char *str = name_at(t, id, &len);
        uint32_t h = hash_bytes(str, len) & (nslots - 1);
        while (t->slots[h])
            h = (h + 1) & (nslots - 1);
        t->slots[h] = id + 1;
    }
}

tly_names *tly_names_create(void)
{
    static const char *const fixed[TLY_R_FIXED_COUNT] = {
        [TLY_R_CPU] = "cpu",
        [TLY_R_MEMORY] = "memory",
        [TLY_R_PODS] = "pods",
        [TLY_R_EPHEMERAL_STORAGE] = "ephemeral-storage",
        [TLY_R_NVIDIA_GPU] = "nvidia.com/gpu",
        [TLY_R_AMD_GPU] = "amd.com/gpu",
        [TLY_R_RUNS] = "runs",
    };
    tly_names *t = tly_xcalloc(1, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    names_rehash(t, 64);
    for (int i = 0; i < TLY_R_FIXED_COUNT; i++)
        tly_names_intern(t, fixed[i], strlen(fixed[i]));
    return t;
}

tly_names *tly_names_create_private(void)
{
    tly_names *t = tly_names_create();
    t->private = true;
    return t;
}

/* The table's lock, unless one thread owns it. */
static void names_lock(tly_names *t)
{
    if (!t->private)
        pthread_mutex_lock(&t->mu);
}

static void names_unlock(tly_names *t)
{
    if (!t->private)
        pthread_mutex_unlock(&t->mu);
}

void tly_names_destroy(tly_names *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n; i++)
        free((char *)name_at(t, i, NULL));
    for (uint32_t c = 0; c < NAME_SEGS; c++)
        free(t->chunks[c]);
    free(t->slots);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void tly_names_reset(tly_names *t)
{
    names_lock(t);
    for (uint32_t i = TLY_R_FIXED_COUNT; i < t->n; i++)
        free((char *)name_at(t, i, NULL));
    /* Chunk 0 holds the fixed names; later chunks only names now gone. */
    for (uint32_t c = 1; c < NAME_SEGS; c++) {
        free(t->chunks[c]);
        t->chunks[c] = NULL;
    }
    __atomic_store_n(&t->n, TLY_R_FIXED_COUNT, __ATOMIC_RELEASE);
    /* The fixed names again, in a table of the first size (a big review's does not stay). */
    if (t->nslots == 64) {
        memset(t->slots, 0, 64 * sizeof *t->slots);
        for (uint32_t id = 0; id < TLY_R_FIXED_COUNT; id++) {
            uint32_t len;
            const char *str = name_at(t, id, &len);
            uint32_t h = hash_bytes(str, len) & 63;
            while (t->slots[h])
                h = (h + 1) & 63;
            t->slots[h] = id + 1;
        }
    } else {
        names_rehash(t, 64);
    }
    names_unlock(t);
}

static uint32_t find_locked(const tly_names *t, const char *s, size_t len)
{
    uint32_t h = hash_bytes(s, len) & (t->nslots - 1);
    while (t->slots[h]) {
        uint32_t id = t->slots[h] - 1, l;
        const char *str = name_at(t, id, &l);
        if (l == len && memcmp(str, s, len) == 0)
            return id;
        h = (h + 1) & (t->nslots - 1);
    }
    return TLY_NAME_NONE;
}

/*
** The fixed names' ids without the table or its lock: nearly every
** resource list names only these, and a decoded pod interns 6 to 7 names.
*/
static uint32_t fixed_id(const char *s, size_t len)
{
    switch (len) {
    case 3: return memcmp(s, "cpu", 3) ? TLY_NAME_NONE : TLY_R_CPU;
    case 4: return !memcmp(s, "pods", 4) ? TLY_R_PODS : !memcmp(s, "runs", 4) ? TLY_R_RUNS : TLY_NAME_NONE;
    case 6: return memcmp(s, "memory", 6) ? TLY_NAME_NONE : TLY_R_MEMORY;
    case 11: return memcmp(s, "amd.com/gpu", 11) ? TLY_NAME_NONE : TLY_R_AMD_GPU;
    case 14: return memcmp(s, "nvidia.com/gpu", 14) ? TLY_NAME_NONE : TLY_R_NVIDIA_GPU;
    case 17: return memcmp(s, "ephemeral-storage", 17) ? TLY_NAME_NONE : TLY_R_EPHEMERAL_STORAGE;
    default: return TLY_NAME_NONE;
    }
}

uint32_t tly_names_find(const tly_names *t, const char *s, size_t len)
{
    uint32_t fixed = fixed_id(s, len);
    if (fixed != TLY_NAME_NONE)
        return fixed;
    tly_names *w = (tly_names *)t;
    names_lock(w);
    uint32_t id = find_locked(t, s, len);
    names_unlock(w);
    return id;
}

uint32_t tly_names_intern(tly_names *t, const char *s, size_t len)
{
    /* Not while tly_names_create() puts the fixed names in. */
    uint32_t fixed = __atomic_load_n(&t->n, __ATOMIC_RELAXED) >= TLY_R_FIXED_COUNT ? fixed_id(s, len) : TLY_NAME_NONE;
    if (fixed != TLY_NAME_NONE)
        return fixed;
    names_lock(t);
    uint32_t id = find_locked(t, s, len);
    if (id != TLY_NAME_NONE || t->n >= NAME_MAX_IDS) {
        names_unlock(t);
        if (id == TLY_NAME_NONE)
            tly_oom();  /* 4 M distinct resource names: not a cluster */
        return id;
    }
    id = t->n;
    uint32_t at, k = seg_of(id, &at);
    if (!t->chunks[k])
        t->chunks[k] = tly_xmalloc(((size_t)NAME_BASE << k) * sizeof *t->chunks[k]);
    char *copy = tly_xmalloc(len + 1);
    memcpy(copy, s, len);
    copy[len] = '\0';
    t->chunks[k][at] = (name_entry){copy, (uint32_t)len};
    __atomic_store_n(&t->n, id + 1, __ATOMIC_RELEASE);
    if (t->n * 2 > t->nslots) {
        names_rehash(t, t->nslots * 2);
    } else {
        uint32_t h = hash_bytes(s, len) & (t->nslots - 1);
        while (t->slots[h])
            h = (h + 1) & (t->nslots - 1);
        t->slots[h] = id + 1;
    }
    names_unlock(t);
    return id;
}

const char *tly_names_str(const tly_names *t, uint32_t id)
{
    return id < __atomic_load_n(&t->n, __ATOMIC_ACQUIRE) ? name_at(t, id, NULL) : NULL;
}

uint32_t tly_names_count(const tly_names *t) { return __atomic_load_n(&t->n, __ATOMIC_ACQUIRE); }

/* ---- sparse lists -------------------------------------------------------- */

tly_qty tly_rlist_get(const tly_rlist *l, uint32_t id, bool *found)
{
    uint32_t lo = 0, hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < l->n && l->v[lo].id == id) {
        if (found)
            *found = true;
        return l->v[lo].q;
    }
    if (found)
        *found = false;
    return (tly_qty){0, TLY_QFMT_DECIMAL_SI};
}

void tly_rlist_set(tly_rlist *l, tly_arena *a, uint32_t id, tly_qty q)
{
    uint32_t i = 0;
    while (i < l->n && l->v[i].id < id)
        i++;
    if (i < l->n && l->v[i].id == id) {
        l->v[i].q = q;
        return;
    }
    /* Lists are small and built once; copying keeps arena use simple. */
    tly_rq *nv = tly_arena_alloc(a, (l->n + 1) * sizeof *nv);
    if (i)
        memcpy(nv, l->v, i * sizeof *nv);
    nv[i].id = id;
    nv[i].q = q;
    if (l->n > i)
        memcpy(nv + i + 1, l->v + i, (l->n - i) * sizeof *nv);
    l->v = nv;
    l->n++;
}

/* Merges a and b id by id into v (room for a->n + b->n); op 0 add, 1 sub, 2 max. */
static int rlist_merge_into(const tly_rlist *a, const tly_rlist *b, tly_rq *v, tly_rlist *out, int op)
{
    uint32_t i = 0, j = 0, n = 0;
    const tly_qty zero = {0, TLY_QFMT_DECIMAL_SI};
    while (i < a->n || j < b->n) {
        uint32_t id;
        tly_qty x = zero, y = zero;
        if (j >= b->n || (i < a->n && a->v[i].id < b->v[j].id)) {
            id = a->v[i].id;
            x = a->v[i++].q;
        } else if (i >= a->n || b->v[j].id < a->v[i].id) {
            id = b->v[j].id;
            y = b->v[j++].q;
        } else {
            id = a->v[i].id;
            x = a->v[i++].q;
            y = b->v[j++].q;
        }
        tly_qty r;
        if (op == 0) {
            if (tly_qty_add(x, y, &r) != TLY_OK)
                return TLY_ERANGE;
        } else if (op == 1) {
            if (tly_qty_sub(x, y, &r) != TLY_OK)
                return TLY_ERANGE;
        } else {
            r = tly_qty_cmp(x, y) >= 0 ? x : y;
        }
        v[n].id = id;
        v[n].q = r;
        n++;
    }
    out->v = v;
    out->n = n;
    return TLY_OK;
}

static int rlist_merge(const tly_rlist *a, const tly_rlist *b, tly_arena *ar, tly_rlist *out, int op)
{
    tly_rq *v = tly_arena_alloc(ar, (a->n + b->n) * sizeof *v + 1);
    return rlist_merge_into(a, b, v, out, op);
}

int tly_rlist_add(const tly_rlist *a, const tly_rlist *b, tly_arena *ar, tly_rlist *out)
{
    return rlist_merge(a, b, ar, out, 0);
}

int tly_rlist_add_into(const tly_rlist *a, const tly_rlist *b, tly_rq *v, tly_rlist *out)
{
    return rlist_merge_into(a, b, v, out, 0);
}

void tly_rlist_max_into(const tly_rlist *a, const tly_rlist *b, tly_rq *v, tly_rlist *out)
{
    (void)rlist_merge_into(a, b, v, out, 2);
}

int tly_rlist_sub(const tly_rlist *a, const tly_rlist *b, tly_arena *ar, tly_rlist *out)
{
    return rlist_merge(a, b, ar, out, 1);
}

void tly_rlist_max(const tly_rlist *a, const tly_rlist *b, tly_arena *ar, tly_rlist *out)
{
    (void)rlist_merge(a, b, ar, out, 2);
}

void tly_rlist_compact(tly_rlist *l)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < l->n; i++)
        if (!tly_qty_is_zero(l->v[i].q))
            l->v[n++] = l->v[i];
    l->n = n;
}

bool tly_rlist_equal(const tly_rlist *a, const tly_rlist *b)
{
    for (uint32_t i = 0; i < a->n; i++)
        if (tly_qty_cmp(a->v[i].q, tly_rlist_get(b, a->v[i].id, NULL)) != 0)
            return false;
    for (uint32_t i = 0; i < b->n; i++)
        if (tly_qty_cmp(b->v[i].q, tly_rlist_get(a, b->v[i].id, NULL)) != 0)
            return false;
    return true;
}

/* ---- dense vectors ------------------------------------------------------- */

void tly_rvec_init(tly_rvec *v) { memset(v, 0, sizeof *v); }

void tly_rvec_free(tly_rvec *v)
{
    free(v->v);
    memset(v, 0, sizeof *v);
}

void tly_rvec_clear(tly_rvec *v)
{
    if (v->n)
        memset(v->v, 0, v->n * sizeof *v->v);
    v->n = 0;
}

static void rvec_grow(tly_rvec *v, uint32_t need)
{
    if (need <= v->n)
        return;
    if (need > v->cap) {
        uint32_t cap = v->cap ? v->cap : 8;
        while (cap < need)
            cap *= 2;
        v->v = tly_xrealloc(v->v, cap * sizeof *v->v);
        v->cap = cap;
    }
    memset(v->v + v->n, 0, (need - v->n) * sizeof *v->v);
    v->n = need;
}

tly_qty tly_rvec_get(const tly_rvec *v, uint32_t id)
{
    if (id < v->n)
        return v->v[id];
    return (tly_qty){0, TLY_QFMT_DECIMAL_SI};
}

void tly_rvec_set(tly_rvec *v, uint32_t id, tly_qty q)
{
    rvec_grow(v, id + 1);
    v->v[id] = q;
}

static int rvec_apply(tly_rvec *v, const tly_rlist *l, bool sub)
{
    /* Check every entry first so a failure leaves v unchanged. */
    for (uint32_t i = 0; i < l->n; i++) {
        tly_qty r;
        int rc = sub ? tly_qty_sub(tly_rvec_get(v, l->v[i].id), l->v[i].q, &r)
                     : tly_qty_add(tly_rvec_get(v, l->v[i].id), l->v[i].q, &r);
        if (rc != TLY_OK)
            return TLY_ERANGE;
    }
    for (uint32_t i = 0; i < l->n; i++) {
        tly_qty r = {0, TLY_QFMT_DECIMAL_SI};  /* set below: the first loop saw every sum fit */
        uint32_t id = l->v[i].id;
        if (sub)
            tly_qty_sub(tly_rvec_get(v, id), l->v[i].q, &r);
        else
            tly_qty_add(tly_rvec_get(v, id), l->v[i].q, &r);
        tly_rvec_set(v, id, r);
    }
    return TLY_OK;
}

int tly_rvec_add_list(tly_rvec *v, const tly_rlist *l) { return rvec_apply(v, l, false); }
int tly_rvec_sub_list(tly_rvec *v, const tly_rlist *l) { return rvec_apply(v, l, true); }

bool tly_rvec_fits(const tly_rvec *usage, const tly_rlist *request,
                   const tly_rlist *capacity, uint32_t *bad)
{
    for (uint32_t i = 0; i < request->n; i++) {
        const tly_rq *r = &request->v[i];
        if (tly_qty_sign(r->q) <= 0)
            continue;
        tly_qty total;
        if (tly_qty_add(tly_rvec_get(usage, r->id), r->q, &total) != TLY_OK ||
            tly_qty_cmp(total, tly_rlist_get(capacity, r->id, NULL)) > 0) {
            if (bad)
                *bad = r->id;
            return false;
        }
    }
    return true;
}
