/*
** store.c: the cluster state store's bookkeeping (store.h): adding decoded
** objects, resolving duplicates, sorting, and the indexes the engines use.
**
** Objects are appended per kind while loading. A (kind, namespace, name)
** seen before replaces the earlier object in place (the later definition
** wins, as with kubectl apply) and leaves a warning. tly_store_finish()
** sorts each kind by (namespace, name), which is the order every output
** uses, and builds sorted indexes (pods by node, Runs by runtime, Runtime
** Pods by runtime, tally's pods by queue) looked up by binary search.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "tally/crd.h"
#include "tally/error.h"
#include "tally/textcache.h"

#define DEFAULT_SCHEDULER "kai-scheduler"
#define DEFAULT_QUEUE_LABEL "kai.scheduler/queue"
#define DEFAULT_QUEUE "default-queue"

/* A store with arena blocks of `block` bytes and names (NULL: a table of its own). */
static tly_store *store_create(size_t block, tly_names *names)
{
    tly_store *s = tly_xcalloc(1, sizeof *s);
    s->arena = tly_arena_create(block);
    s->names = names ? names : tly_names_create();
    s->diags = tly_diags_create();
    tly_strmap_init(&s->byname);
    pthread_mutex_init(&s->derived_mu, NULL);
    pthread_mutex_init(&s->list_mu, NULL);
    s->clock = TLY_NO_TIME;
    s->own_names = !names;
    return s;
}

tly_store *tly_store_create(void)
{
    tly_store *s = store_create(1 << 20, NULL);
    s->texts = tly_textcache_create(s->arena);
    return s;
}

/* 16 KiB: a 4 KB pod and its strings in one or two blocks, all under the mmap threshold. */
tly_store *tly_store_create_one(tly_names *names) { return store_create(16 * 1024, names); }

tly_store *tly_store_create_view(const tly_store_backend *b, void *ctx, tly_names *names,
                                 const tly_config *config, const char *scheduler_name)
{
    tly_store *s = tly_xcalloc(1, sizeof *s);
    s->arena = tly_arena_create(64 * 1024);
    s->names = names;
    s->diags = tly_diags_create();
    tly_strmap_init(&s->byname);
    tly_strmap_init(&s->rt_cache);
    pthread_mutex_init(&s->derived_mu, NULL);
    pthread_mutex_init(&s->list_mu, NULL);
    s->clock = TLY_NO_TIME;
    s->backend = b;
    s->backend_ctx = ctx;
    s->config = config;
    s->scheduler_name = scheduler_name ? tly_arena_strdup(s->arena, scheduler_name) : NULL;
    s->queue_label_key = config && config->queue_label_key && *config->queue_label_key
                             ? config->queue_label_key
                             : DEFAULT_QUEUE_LABEL;
    s->finished = true;
    return s;
}

void *tly_store_view_ctx(const tly_store *s) { return s->backend ? s->backend_ctx : NULL; }

uint64_t tly_store_seen_rv(const tly_store *s, int kind)
{
    return s->backend && s->backend->seen_rv ? s->backend->seen_rv(s->backend_ctx, kind) : 0;
}

uint64_t tly_rv_number(const char *rv)
{
    uint64_t v = 0;
    if (!rv || !*rv || strlen(rv) > 19)
        return 0;
    for (const char *c = rv; *c; c++) {
        if (*c < '0' || *c > '9')
            return 0;
        v = v * 10 + (uint64_t)(*c - '0');
    }
    return v;
}

/* A view's objects of one kind as an array, listed from the backend on first use. */
static void view_list(const tly_store *cs, int kind)
{
    tly_store *s = (tly_store *)cs;
    if (__atomic_load_n(&s->listed[kind], __ATOMIC_ACQUIRE))
        return;
    pthread_mutex_lock(&s->list_mu);
    if (!s->listed[kind]) {
        tly_objvec *v = &s->kinds[kind];
        v->n = s->backend->count(s->backend_ctx, kind);
        v->cap = v->n;
        v->v = tly_xmalloc((v->n + 1) * sizeof *v->v);
        s->backend->list(s->backend_ctx, kind, v->v);
        __atomic_store_n(&s->listed[kind], 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&s->list_mu);
}

static void free_rt_cache(tly_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            free(m->slots[i].val);
    tly_strmap_free(m);
}

void tly_store_set_clock(tly_store *s, int64_t t) { s->clock = t; }
int64_t tly_store_clock(const tly_store *s) { return s->clock; }

static void index_free(tly_index *ix)
{
    free(ix->v);
    free(ix->keys);
    memset(ix, 0, sizeof *ix);
}

void tly_store_destroy(tly_store *s)
{
    if (!s)
        return;
    for (int i = 0; i < TLY_STORE_DERIVED_SLOTS; i++)
        if (s->derived[i] && s->derived_free[i])
            s->derived_free[i](s->derived[i]);
    pthread_mutex_destroy(&s->derived_mu);
    pthread_mutex_destroy(&s->list_mu);
    if (s->backend) {
        free_rt_cache(&s->rt_cache);
        s->backend->release(s->backend_ctx);
    }
    for (int k = 0; k < TLY_K_COUNT; k++)
        free(s->kinds[k].v);
    if (s->crds_owned)
        tly_crdset_destroy(s->crds);
    tly_strmap_free(&s->byname);
    tly_textcache_destroy(s->texts);
    index_free(&s->pods_by_node);
    index_free(&s->runs_by_runtime);
    index_free(&s->runtime_pods);
    index_free(&s->pods_by_queue);
    if (s->own_names)
        tly_names_destroy(s->names);
    tly_diags_destroy(s->diags);
    tly_arena_destroy(s->arena);
    free(s);
}

tly_names *tly_store_names(tly_store *s) { return s->names; }
tly_diags *tly_store_diags(tly_store *s) { return s->diags; }
tly_arena *tly_store_arena(tly_store *s) { return s->arena; }

static int object_key_buf(char *buf, size_t cap, int kind, const char *ns, const char *name);

/*
** A byname value: the object's kind in the high half and its index + 1 in
** its kind's vector in the low half, so that tly_store_finish() can renumber
** every entry after sorting by walking the map's slots, without hashing a
** key again.
*/
_Static_assert(sizeof(uintptr_t) >= 8, "byname values pack a kind and an index into a pointer");
static void *byname_val(int kind, uint32_t i) { return (void *)(((uintptr_t)kind << 32) | ((uintptr_t)i + 1)); }
static uint32_t byname_index(void *v) { return (uint32_t)(uintptr_t)v; }  /* index + 1; 0: none */
static int byname_kind(void *v) { return (int)((uintptr_t)v >> 32); }

/* object_key_buf's text in the arena (printf only for a key too long for the stack). */
static char *object_key(tly_arena *a, int kind, const char *ns, const char *name)
{
    char buf[512];
    int n = object_key_buf(buf, sizeof buf, kind, ns, name);
    if (n < 0)
        return tly_arena_printf(a, "%d\x1f%s\x1f%s", kind, ns ? ns : "", name);
    return tly_arena_strndup(a, buf, (size_t)n);
}

/*
** object_key's text ("<kind>\x1f<ns>\x1f<name>") into buf, without printf:
** every lookup by name builds one (the pod engine does for each pod's
** PriorityClass and PodGroup). Its length, or -1 when it does not fit.
*/
static int object_key_buf(char *buf, size_t cap, int kind, const char *ns, const char *name)
{
    char digits[12];
    int nd = 0;
    unsigned k = (unsigned)kind;
    do {
        digits[nd++] = (char)('0' + k % 10);
        k /= 10;
    } while (k);
    size_t lns = ns ? strlen(ns) : 0, lname = strlen(name), len = (size_t)nd + 2 + lns + lname;
    if (len >= cap)
        return -1;
    char *w = buf;
    while (nd)
        *w++ = digits[--nd];
    *w++ = '\x1f';
    memcpy(w, ns ? ns : "", lns);
    w += lns;
    *w++ = '\x1f';
    memcpy(w, name, lname + 1);
    return (int)len;
}

void tly_store_add(tly_store *s, int kind, tly_meta *obj)
{
    tly_objvec *v = &s->kinds[kind];
    char *key = object_key(s->arena, kind, obj->ns, obj->name);
    uint32_t prev = byname_index(tly_strmap_add(&s->byname, key, strlen(key), byname_val(kind, v->n)));
    if (prev) {
        tly_meta *old = v->v[prev - 1];
        tly_diags_add(s->diags, TLY_SEV_WARNING, obj->src.file, obj->src.line, obj->src.col,
                      tly_kind_name(kind),
                      obj->ns ? tly_arena_printf(s->arena, "%s/%s", obj->ns, obj->name) : obj->name,
                      NULL, "defined twice; this definition replaces the one at %s:%u",
                      old->src.file, old->src.line);
        v->v[prev - 1] = obj;
        return;
    }
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->v = tly_xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = obj;
    if (kind == TLY_K_CONFIG)
        s->config = (const tly_config *)obj;
}

static int cmp_meta(const void *pa, const void *pb)
{
    const tly_meta *a = *(tly_meta *const *)pa, *b = *(tly_meta *const *)pb;
    int c = strcmp(a->ns ? a->ns : "", b->ns ? b->ns : "");
    return c ? c : strcmp(a->name, b->name);
}

typedef struct {
    const char *key;
    void *obj;
} entry;

/* Index entries sort by key, then by (namespace, name) of the object. */
static int cmp_entry(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    return c ? c : cmp_meta(&a->obj, &b->obj);
}

/* qsort_r order of distinct strings, given by number. */
static int cmp_string_at(const void *pa, const void *pb, void *strings)
{
    const char *const *k = strings;
    return strcmp(k[*(const uint32_t *)pa], k[*(const uint32_t *)pb]);
}

/*
** rank[i] = the place of s[i] among the distinct strings of s[0..n) in
** strcmp order; returns how many there are. Each string is hashed once and
** only the distinct ones are sorted: a kind's namespaces, an index's keys
** (node names, queues) are few next to the objects.
*/
static uint32_t rank_strings(const char *const *s, uint32_t n, uint32_t *rank)
{
    tly_strmap seen;
    tly_strmap_init(&seen);
    const char **distinct = tly_xmalloc((n ? n : 1) * sizeof *distinct);
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t d = (uintptr_t)tly_strmap_add(&seen, s[i], strlen(s[i]), (void *)(uintptr_t)(nd + 1));
        if (!d) {
            distinct[nd] = s[i];
            d = ++nd;
        }
        rank[i] = (uint32_t)d - 1;
    }
    uint32_t *order = tly_xmalloc((nd ? nd : 1) * sizeof *order), *place = tly_xmalloc((nd ? nd : 1) * sizeof *place);
    for (uint32_t d = 0; d < nd; d++)
        order[d] = d;
    qsort_r(order, nd, sizeof *order, cmp_string_at, distinct);
    for (uint32_t r = 0; r < nd; r++)
        place[order[r]] = r;
    for (uint32_t i = 0; i < n; i++)
        rank[i] = place[rank[i]];
    free(place);
    free(order);
    free(distinct);
    tly_strmap_free(&seen);
    return nd;
}

/* Sorts e[0..n) (one key's entries) by (namespace, name) unless they are in that order already. */
static void sort_group(entry *e, uint32_t n)
{
    for (uint32_t j = 1; j < n; j++)
        if (cmp_meta(&e[j - 1].obj, &e[j].obj) > 0) {
            qsort(e, n, sizeof *e, cmp_entry);
            return;
        }
}

/*
** Sorts the entries by key, then by (namespace, name), into ix. The entries
** come in (namespace, name) order nearly always (a kind's vector after
** sorting), so this is a stable grouping by key: each distinct key is
** hashed once per entry and only the distinct keys are sorted, instead of
** comparing strings n log n times (the pods-by-node and pods-by-queue
** indexes of a 100,000-pod store cost more than the parse of its pods). A
** group that is not in (namespace, name) order is sorted on its own.
*/
static void index_build(tly_index *ix, entry *e, uint32_t n)
{
    ix->v = tly_xmalloc((n + 1) * sizeof *ix->v);
    ix->keys = tly_xmalloc((n + 1) * sizeof *ix->keys);
    ix->n = n;
    if (n == 0)
        return;
    const char **keys = tly_xmalloc(n * sizeof *keys);
    uint32_t *rank = tly_xmalloc(n * sizeof *rank);
    for (uint32_t i = 0; i < n; i++)
        keys[i] = e[i].key;
    uint32_t nr = rank_strings(keys, n, rank);
    /* Counting sort by rank, stable: at[r] is where the next entry of rank r goes. */
    uint32_t *at = tly_xcalloc((size_t)nr + 1, sizeof *at);
    for (uint32_t i = 0; i < n; i++)
        at[rank[i] + 1]++;
    for (uint32_t r = 0; r < nr; r++)
        at[r + 1] += at[r];
    entry *out = tly_xmalloc(n * sizeof *out);
    for (uint32_t i = 0; i < n; i++)
        out[at[rank[i]]++] = e[i];
    /* at[r] is now the end of rank r's entries, at[r - 1] (0 for r = 0) their start. */
    for (uint32_t r = 0, from = 0; r < nr; from = at[r++])
        sort_group(out + from, at[r] - from);
    for (uint32_t i = 0; i < n; i++) {
        ix->v[i] = out[i].obj;
        ix->keys[i] = out[i].key;
    }
    free(out);
    free(at);
    free(rank);
    free(keys);
}

static void *const *index_range(const tly_index *ix, const char *key, uint32_t *n)
{
    uint32_t lo = 0, hi = ix->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (strcmp(ix->keys[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t end = lo;
    while (end < ix->n && strcmp(ix->keys[end], key) == 0)
        end++;
    *n = end - lo;
    return ix->v ? ix->v + lo : NULL;
}

static void build_indexes(tly_store *s);

/* A kind's object while it is sorted: a key that compares as (namespace, name) mostly without a string. */
typedef struct {
    uint64_t prefix[2]; /* the name's first 16 bytes, big-endian, zero-padded */
    uint32_t nsrank;    /* the namespace's place among the kind's namespaces */
    uint32_t old;       /* index before sorting */
    tly_meta *m;
} sortrec;

static int cmp_sortrec(const void *pa, const void *pb)
{
    const sortrec *a = pa, *b = pb;
    if (a->nsrank != b->nsrank)
        return a->nsrank < b->nsrank ? -1 : 1;
    for (int w = 0; w < 2; w++)
        if (a->prefix[w] != b->prefix[w])
            return a->prefix[w] < b->prefix[w] ? -1 : 1;
    /* Equal first 16 bytes: equal names if those held the NUL, else the rest decides. */
    return (a->prefix[1] & 0xff) ? strcmp(a->m->name + 16, b->m->name + 16) : 0;
}

/* 8 bytes of name from *i on, big-endian, zeros after its end; *i moves past them. */
static uint64_t name_word(const char *name, size_t *i)
{
    uint64_t p = 0;
    size_t k = 0;
    for (; k < 8 && name[*i]; k++)
        p = p << 8 | (unsigned char)name[(*i)++];
    return k ? p << (8 * (8 - k)) : 0;
}

/* Bits to hold the largest of rank[0..n). */
static unsigned rank_bits(const uint32_t *rank, uint32_t n)
{
    uint32_t most = 0;
    for (uint32_t i = 0; i < n; i++)
        most = rank[i] > most ? rank[i] : most;
    return most ? 32u - (unsigned)__builtin_clz(most) : 0u;
}

typedef struct {
    uint64_t key;
    uint32_t i;
} keyed;

/* LSD radix sort of a[0..n) by key, a byte a pass, skipping bytes every key shares; returns a or tmp, whichever holds the result. */
static keyed *radix_sort(keyed *a, keyed *tmp, uint32_t n)
{
    for (unsigned shift = 0; shift < 64; shift += 8) {
        uint32_t count[257] = {0};
        for (uint32_t i = 0; i < n; i++)
            count[((a[i].key >> shift) & 0xff) + 1]++;
        if (count[((a[0].key >> shift) & 0xff) + 1] == n)
            continue;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (uint32_t i = 0; i < n; i++)
            tmp[count[(a[i].key >> shift) & 0xff]++] = a[i];
        keyed *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

/*
** Sorts r[0..n) as cmp_sortrec orders them: a radix sort on one 64-bit key
** (the namespace rank above the name's first bytes, rbits of rank), then
** each run of equal keys by cmp_sortrec. The key never orders two records
** against cmp_sortrec (it is their rank and name prefix, cut short), so
** only runs of equal keys need the comparison: the pods of one DaemonSet,
** names equal in their first 7 or 8 bytes. qsort of the whole spent 3.5%
** of a realistic cluster's load moving 40-byte records.
*/
static void sort_records(sortrec *r, uint32_t n, unsigned rbits)
{
    keyed *k = tly_xmalloc(n * sizeof *k), *tmp = tly_xmalloc(n * sizeof *tmp);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t name = rbits ? r[i].prefix[0] >> rbits : r[i].prefix[0];
        k[i] = (keyed){rbits ? (uint64_t)r[i].nsrank << (64 - rbits) | name : name, i};
    }
    keyed *sorted = radix_sort(k, tmp, n);
    sortrec *out = tly_xmalloc(n * sizeof *out);
    for (uint32_t i = 0; i < n; i++)
        out[i] = r[sorted[i].i];
    for (uint32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && sorted[j].key == sorted[i].key; j++)
            ;
        if (j - i > 1)
            qsort(out + i, j - i, sizeof *out, cmp_sortrec);
    }
    memcpy(r, out, n * sizeof *r);
    free(out);
    free(tmp);
    free(k);
}

/*
** Sorts a kind's objects by (namespace, name). Returns where each one went
** (new index by old; the caller frees it), or NULL when nothing moved: a
** dump from the API server or kubectl comes nearly sorted, so the order is
** checked first. Otherwise the sort compares a namespace rank and the
** name's first 16 bytes as integers, held next to each other (sort_records):
** comparing the strings themselves read two objects' names from all over
** the store at every step (a 100,000-pod store spent an eighth of its load
** there).
*/
static uint32_t *sort_objects(tly_objvec *v)
{
    uint32_t n = v->n, i = 1;
    while (i < n && cmp_meta(&v->v[i - 1], &v->v[i]) <= 0)
        i++;
    if (i >= n)
        return NULL;
    sortrec *r = tly_xmalloc(n * sizeof *r);
    uint32_t *rank = tly_xmalloc(n * sizeof *rank);
    const char **ns = tly_xmalloc(n * sizeof *ns);
    for (i = 0; i < n; i++) {
        const tly_meta *m = v->v[i];
        ns[i] = m->ns ? m->ns : "";
    }
    rank_strings(ns, n, rank);
    free(ns);
    for (i = 0; i < n; i++) {
        tly_meta *m = v->v[i];
        size_t at = 0;
        uint64_t w0 = name_word(m->name, &at), w1 = at == 8 ? name_word(m->name, &at) : 0;
        r[i] = (sortrec){{w0, w1}, rank[i], i, m};
    }
    sort_records(r, n, rank_bits(rank, n));
    uint32_t *to = rank;  /* reused: rank is not needed any more */
    for (i = 0; i < n; i++) {
        v->v[i] = r[i].m;
        to[r[i].old] = i;
    }
    free(r);
    return to;
}

void tly_store_finish(tly_store *s)
{
    uint32_t *moved[TLY_K_COUNT] = {0};
    bool any = false;
    for (int k = 0; k < TLY_K_COUNT; k++)
        any |= (moved[k] = sort_objects(&s->kinds[k])) != NULL;
    /* The name map holds positions: renumber the entries of the kinds that moved. */
    for (size_t i = 0; any && i < s->byname.cap; i++) {
        tly_strmap_slot *sl = &s->byname.slots[i];
        uint32_t *to = sl->key ? moved[byname_kind(sl->val)] : NULL;
        if (to)
            sl->val = byname_val(byname_kind(sl->val), to[byname_index(sl->val) - 1]);
    }
    for (int k = 0; k < TLY_K_COUNT; k++)
        free(moved[k]);
    if (s->kinds[TLY_K_CONFIG].n)
        s->config = s->kinds[TLY_K_CONFIG].v[0];
    s->queue_label_key = (s->config && s->config->queue_label_key && *s->config->queue_label_key)
                             ? s->config->queue_label_key
                         : s->snap_queue_label_key ? s->snap_queue_label_key
                                                   : DEFAULT_QUEUE_LABEL;

    build_indexes(s);
}

/* The pods-by-node, Runs-by-runtime, Runtime Pod and pods-by-queue indexes. */
static void build_indexes(tly_store *s)
{
    uint32_t npods = s->kinds[TLY_K_POD].n, nruns = s->kinds[TLY_K_RUN].n;
    entry *e = tly_xmalloc((npods + nruns + 1) * sizeof *e);
    uint32_t n = 0;

    for (uint32_t i = 0; i < npods; i++) {
        tly_pod *p = s->kinds[TLY_K_POD].v[i];
        if (p->node_name)
            e[n++] = (entry){p->node_name, p};
    }
    index_build(&s->pods_by_node, e, n);

    n = 0;
    for (uint32_t i = 0; i < nruns; i++) {
        tly_run *r = s->kinds[TLY_K_RUN].v[i];
        if (r->runtime)
            e[n++] = (entry){tly_arena_printf(s->arena, "%s\x1f%s", r->meta.ns, r->runtime), r};
    }
    index_build(&s->runs_by_runtime, e, n);

    n = 0;
    for (uint32_t i = 0; i < npods; i++) {
        tly_pod *p = s->kinds[TLY_K_POD].v[i];
        const char *rt = tly_kvs_get(&p->meta.labels, "runtime");
        if (rt)
            e[n++] = (entry){tly_arena_printf(s->arena, "%s\x1f%s", p->meta.ns, rt), p};
    }
    index_build(&s->runtime_pods, e, n);

    s->finished = true;
    s->indexed = true;
    n = 0;
    for (uint32_t i = 0; i < npods; i++) {
        tly_pod *p = s->kinds[TLY_K_POD].v[i];
        if (tly_store_is_tally_pod(s, p))
            e[n++] = (entry){tly_store_pod_queue(s, p, NULL), p};
    }
    index_build(&s->pods_by_queue, e, n);
    free(e);
}

uint32_t tly_store_count(const tly_store *s, int kind)
{
    if (kind < 0 || kind >= TLY_K_COUNT)
        return 0;
    if (s->backend && !__atomic_load_n(&s->listed[kind], __ATOMIC_ACQUIRE))
        return s->backend->count(s->backend_ctx, kind);
    return s->kinds[kind].n;
}

void *tly_store_at(const tly_store *s, int kind, uint32_t i)
{
    if (kind < 0 || kind >= TLY_K_COUNT)
        return NULL;
    if (s->backend)
        view_list(s, kind);
    return i < s->kinds[kind].n ? s->kinds[kind].v[i] : NULL;
}

void *tly_store_find(const tly_store *s, int kind, const char *ns, const char *name)
{
    if (kind < 0 || kind >= TLY_K_COUNT || !name)
        return NULL;
    if (!tly_kind_namespaced(kind))
        ns = NULL;
    if (s->backend)
        return s->backend->find(s->backend_ctx, kind, ns, name);
    char buf[512];
    int len = object_key_buf(buf, sizeof buf, kind, ns, name);
    if (len < 0)
        return NULL;
    uint32_t idx = byname_index(tly_strmap_get(&s->byname, buf, (size_t)len));
    return idx ? s->kinds[kind].v[idx - 1] : NULL;
}

/* A view builds the indexes over every pod and Run the first time one is asked for. */
static void view_indexes(const tly_store *cs)
{
    tly_store *s = (tly_store *)cs;
    if (!s->backend || __atomic_load_n(&s->indexed, __ATOMIC_ACQUIRE))
        return;
    view_list(s, TLY_K_POD);
    view_list(s, TLY_K_RUN);
    view_list(s, TLY_K_PODGROUP);
    pthread_mutex_lock(&s->list_mu);
    if (!s->indexed)
        build_indexes(s);
    pthread_mutex_unlock(&s->list_mu);
}

tly_pod *const *tly_store_pods_on_node(const tly_store *s, const char *node, uint32_t *n)
{
    view_indexes(s);
    return (tly_pod *const *)index_range(&s->pods_by_node, node, n);
}

static void *const *ns_range(const tly_index *ix, const char *ns, const char *name, uint32_t *n)
{
    char buf[512];
    int len = snprintf(buf, sizeof buf, "%s\x1f%s", ns ? ns : "", name);
    if (len < 0 || (size_t)len >= sizeof buf) {
        *n = 0;
        return NULL;
    }
    return index_range(ix, buf, n);
}

tly_run *const *tly_store_runs_of_runtime(const tly_store *s, const char *ns,
                                          const char *runtime, uint32_t *n)
{
    view_indexes(s);
    return (tly_run *const *)ns_range(&s->runs_by_runtime, ns, runtime, n);
}

/* A view asks its backend once per (namespace, runtime) and keeps the answer. */
typedef struct {
    uint32_t n;
    tly_pod *v[];
} rt_list;

static tly_pod *const *view_runtime_pods(const tly_store *cs, const char *ns, const char *runtime,
                                         uint32_t *n)
{
    tly_store *s = (tly_store *)cs;
    char *key = tly_arena_printf(s->arena, "%s\x1f%s", ns ? ns : "", runtime);
    pthread_mutex_lock(&s->list_mu);
    rt_list *hit = tly_strmap_get(&s->rt_cache, key, strlen(key));
    if (!hit) {
        tly_pod **pods = NULL;
        uint32_t cnt = s->backend->runtime_pods(s->backend_ctx, ns, runtime, &pods);
        hit = tly_xmalloc(sizeof *hit + (cnt + 1) * sizeof *pods);
        hit->n = cnt;
        if (cnt)
            memcpy(hit->v, pods, cnt * sizeof *pods);
        free(pods);
        tly_strmap_put(&s->rt_cache, key, strlen(key), hit);
    }
    pthread_mutex_unlock(&s->list_mu);
    *n = hit->n;
    return hit->v;
}

tly_pod *const *tly_store_runtime_pods(const tly_store *s, const char *ns,
                                       const char *runtime, uint32_t *n)
{
    if (s->backend)
        return view_runtime_pods(s, ns, runtime, n);
    return (tly_pod *const *)ns_range(&s->runtime_pods, ns, runtime, n);
}

const tly_config *tly_store_config(const tly_store *s) { return s->config; }

const char *tly_store_scheduler_name(const tly_store *s)
{
    if (s->scheduler_name)
        return s->scheduler_name;
    if (s->config && s->config->scheduler_name && *s->config->scheduler_name)
        return s->config->scheduler_name;
    if (s->snap_scheduler_name)
        return s->snap_scheduler_name;
    return DEFAULT_SCHEDULER;
}

void tly_store_set_crds(tly_store *s, struct tly_crdset *crds)
{
    s->crds = crds;
    s->crds_keep = true;
}

const struct tly_crdset *tly_store_crds(const tly_store *s) { return s->crds; }

void tly_store_use_crds(tly_store *s, const struct tly_crdset *crds)
{
    s->crds = (struct tly_crdset *)crds;  /* only read: admit checks, never adds */
    s->crds_owned = false;
}

void tly_store_set_snapshot_params(tly_store *s, const char *scheduler_name, const char *queue_label_key)
{
    if (scheduler_name)
        s->snap_scheduler_name = tly_arena_strdup(s->arena, scheduler_name);
    if (queue_label_key)
        s->snap_queue_label_key = tly_arena_strdup(s->arena, queue_label_key);
}

void tly_store_set_gating_mode(tly_store *s, int mode) { s->gating_mode = mode; }
int tly_store_gating_mode(const tly_store *s) { return s->gating_mode; }

void tly_store_set_scheduler_name(tly_store *s, const char *name)
{
    s->scheduler_name = name ? tly_arena_strdup(s->arena, name) : NULL;
}

const char *tly_store_queue_label_key(const tly_store *s)
{
    return s->queue_label_key ? s->queue_label_key : DEFAULT_QUEUE_LABEL;
}

bool tly_pod_is_gpu_reservation(const tly_pod *p)
{
    const char *app = tly_kvs_get(&p->meta.labels, "app");
    return app && (strcmp(app, "kai-resource-reservation") == 0 || strcmp(app, "runai-reservation") == 0);
}

bool tly_store_is_tally_pod(const tly_store *s, const tly_pod *p)
{
    return p->scheduler_name && strcmp(p->scheduler_name, tly_store_scheduler_name(s)) == 0 &&
           !tly_pod_is_gpu_reservation(p);
}

const char *tly_store_pod_queue(const tly_store *s, const tly_pod *p, const tly_podgroup **pg)
{
    const char *pgname = tly_kvs_get(&p->meta.annotations, "pod-group-name");
    const tly_podgroup *g = pgname ? tly_store_find(s, TLY_K_PODGROUP, p->meta.ns, pgname) : NULL;
    if (pg)
        *pg = g;
    if (g && g->queue && *g->queue)
        return g->queue;
    const char *label = tly_kvs_get(&p->meta.labels, tly_store_queue_label_key(s));
    if (label && *label)
        return label;
    return DEFAULT_QUEUE;
}

tly_pod *const *tly_store_pods_in_queue(const tly_store *s, const char *queue, uint32_t *n)
{
    view_indexes(s);
    return (tly_pod *const *)index_range(&s->pods_by_queue, queue, n);
}

static void newer(int64_t *best, int64_t t)
{
    if (t != TLY_NO_TIME && (*best == TLY_NO_TIME || t > *best))
        *best = t;
}

static void newer_conditions(int64_t *best, const tly_conditions *c)
{
    for (uint32_t i = 0; i < c->n; i++) {
        newer(best, c->v[i].last_probe);
        newer(best, c->v[i].last_transition);
        newer(best, c->v[i].last_heartbeat);
    }
}

int64_t tly_store_newest_time(const tly_store *s)
{
    int64_t best = TLY_NO_TIME;
    for (int k = 0; s->backend && k < TLY_K_COUNT; k++)
        view_list(s, k);
    for (int k = 0; k < TLY_K_COUNT; k++)
        for (uint32_t i = 0; i < s->kinds[k].n; i++) {
            const tly_meta *m = s->kinds[k].v[i];
            newer(&best, m->created);
            newer(&best, m->deleted);
        }
    for (uint32_t i = 0; i < s->kinds[TLY_K_POD].n; i++) {
        const tly_pod *p = s->kinds[TLY_K_POD].v[i];
        newer(&best, p->start_time);
        newer_conditions(&best, &p->conditions);
    }
    for (uint32_t i = 0; i < s->kinds[TLY_K_NODE].n; i++)
        newer_conditions(&best, &((const tly_k8s_node *)s->kinds[TLY_K_NODE].v[i])->conditions);
    for (uint32_t i = 0; i < s->kinds[TLY_K_RUN].n; i++)
        newer_conditions(&best, &((const tly_run *)s->kinds[TLY_K_RUN].v[i])->conditions);
    return best;
}

void *tly_store_derived(tly_store *s, int slot, void *(*build)(tly_store *s),
                        void (*destroy)(void *))
{
    if (slot < 0 || slot >= TLY_STORE_DERIVED_SLOTS)
        return NULL;
    pthread_mutex_lock(&s->derived_mu);
    if (!s->derived[slot] && s->backend && s->backend->derived) {
        void (*free_fn)(void *) = NULL;
        s->derived[slot] = s->backend->derived(s->backend_ctx, s, slot, &free_fn);
        s->derived_free[slot] = free_fn;
    }
    if (!s->derived[slot]) {
        s->derived[slot] = build(s);
        s->derived_free[slot] = destroy;
    }
    void *d = s->derived[slot];
    pthread_mutex_unlock(&s->derived_mu);
    return d;
}
