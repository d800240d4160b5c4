/*
** runtimed.c: runtimed's Pod-local admission cache.
**
** Why an atomic check-and-reserve
** -------------------------------
** The kruntimes scheduler places a Run on a Runtime Pod from its own cache of
** what every Pod already runs. That cache can be stale (a watch event not yet
** delivered), two scheduler workers or an older scheduler version can assign
** concurrently, and an assignment can outlive the accounting it was made
** with. The seed therefore makes runtimed, the process inside the Pod, the
** execution-time guard: before claiming a Scheduled Run it checks the Run's
** complete request against the Pod's own usage and reserves it only if every
** resource fits.
**
** The guard only works if "check" and "reserve" are one step. With a check
** followed by a separate add, two Runs that each fit alone (say two 1-GPU
** Runs on a Pod with one free GPU) can both pass the check before either
** adds, and both start: exactly the overcommit the scheduler's stale view
** produced, now repeated locally. So tly_runtimed_reserve() takes the cache
** mutex, tests every resource, and adds the request to usage before it lets
** go; whichever Run comes second sees the first one's reservation. A refusal
** changes nothing, so a Run that does not fit leaves no partial reservation
** behind (the seed: it stays Scheduled, no Runtime Server call, no failure).
**
** Invariants (all under the mutex, at every unlock)
** -------------------------------------------------
**  I1  usage[id] == the sum over held reservations of their quantity for id,
**      exactly (tly_qty arithmetic is exact integer nano-units, so adding and
**      later subtracting the same list returns usage to the same value).
**  I2  every recorded quantity is positive, hence usage[id] >= 0.
**  I3  if every reservation was made by reserve() (no force(), no capacity
**      decrease since), usage[id] <= capacity[id] for every id: each reserve
**      proved usage + request <= capacity before adding, and a release only
**      lowers usage.
**  I4  a key holds at most one reservation; a release subtracts the stored
**      copy of what was added (never the caller's current idea of the
**      request), and removes it, so a second release finds nothing.
** force() and set_capacity() may break I3 on purpose (re-adopted Runs already
** run; a shrunk capacity does not evict); reserve() keeps refusing until
** usage is back under the new capacity.
**
** Structure: reservations live in an open-addressing hash table (linear
** probing, power-of-two size, load <= 1/2, backward-shift deletion so no
** tombstones accumulate under churn), keyed by a private copy of the Run key.
** Usage is a dense tly_rvec indexed by resource id. The wait list is a small
** array in arrival order with a linear duplicate check: it holds the Runs of
** one Pod that did not fit, a handful in practice.
*/
#include "tally/runtimed.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/error.h"

typedef struct {
    char *key;      /* NULL: empty slot */
    uint64_t hash;
    tly_rq *req;    /* positive entries only, sorted by id */
    uint32_t n;
} rd_slot;

struct tly_runtimed {
    pthread_mutex_t mu;
    tly_rq *cap;       /* capacity, sorted by id (owned copy) */
    uint32_t ncap;
    tly_rvec usage;
    rd_slot *slots;
    uint32_t nslots;   /* power of two */
    uint32_t count;
    char **waiters;
    uint32_t nwait, capwait;
};

/*
** The const accessors still need the lock; the mutex lives in heap memory
** that is never const, so casting the qualifier away is well defined.
*/
static void rd_lock(const tly_runtimed *rd)
{
    pthread_mutex_lock((pthread_mutex_t *)&rd->mu);
}

static void rd_unlock(const tly_runtimed *rd)
{
    pthread_mutex_unlock((pthread_mutex_t *)&rd->mu);
}

/* FNV-1a: Run keys are short strings; this spreads them well enough. */
static uint64_t rd_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static uint32_t rd_find(const tly_runtimed *rd, const char *key, uint64_t h)
{
    uint32_t mask = rd->nslots - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        const rd_slot *s = &rd->slots[i];
        if (!s->key)
            return UINT32_MAX;
        if (s->hash == h && strcmp(s->key, key) == 0)
            return i;
    }
}

/* Places a slot known to be absent; the table has room. */
static void rd_place(rd_slot *slots, uint32_t nslots, rd_slot s)
{
    uint32_t mask = nslots - 1;
    uint32_t i = (uint32_t)s.hash & mask;
    while (slots[i].key)
        i = (i + 1) & mask;
    slots[i] = s;
}

static void rd_grow(tly_runtimed *rd)
{
    uint32_t n = rd->nslots * 2;
    if (n == 0 || n > (UINT32_MAX >> 1))
        tly_oom();
    rd_slot *slots = tly_xcalloc(n, sizeof *slots);
    for (uint32_t i = 0; i < rd->nslots; i++)
        if (rd->slots[i].key)
            rd_place(slots, n, rd->slots[i]);
    free(rd->slots);
    rd->slots = slots;
    rd->nslots = n;
}

static void rd_insert(tly_runtimed *rd, rd_slot s)
{
    /* Keep the load at most 1/2 so probe runs stay short. */
    if ((uint64_t)(rd->count + 1) * 2 > rd->nslots)
        rd_grow(rd);
    rd_place(rd->slots, rd->nslots, s);
    rd->count++;
}

/*
** Empties slot i and shifts later members of its probe run back, so every
** remaining key stays reachable from its home slot without tombstones.
*/
static void rd_remove_at(tly_runtimed *rd, uint32_t i)
{
    uint32_t mask = rd->nslots - 1;
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!rd->slots[j].key)
            break;
        uint32_t home = (uint32_t)rd->slots[j].hash & mask;
        /* j may move to i unless its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays)
            continue;
        rd->slots[i] = rd->slots[j];
        i = j;
    }
    memset(&rd->slots[i], 0, sizeof rd->slots[i]);
    rd->count--;
}

static tly_rq *rd_copy_rq(const tly_rlist *l, uint32_t *n_out)
{
    *n_out = 0;
    if (!l || l->n == 0)
        return NULL;
    tly_rq *v = tly_xmalloc((size_t)l->n * sizeof *v);
    memcpy(v, l->v, (size_t)l->n * sizeof *v);
    *n_out = l->n;
    return v;
}

/* A request may hold zero entries (ignored) but no negative one. */
static bool rd_request_ok(const tly_rlist *request)
{
    for (uint32_t i = 0; i < request->n; i++)
        if (tly_qty_sign(request->v[i].q) < 0)
            return false;
    return true;
}

/* A new slot owning copies of the key and of the positive entries. */
static rd_slot rd_make_slot(const char *key, uint64_t h, const tly_rlist *request)
{
    rd_slot s = {tly_xstrdup(key), h, NULL, 0};
    uint32_t pos = 0;
    for (uint32_t i = 0; i < request->n; i++)
        pos += tly_qty_sign(request->v[i].q) > 0;
    if (pos) {
        s.req = tly_xmalloc((size_t)pos * sizeof *s.req);
        for (uint32_t i = 0; i < request->n; i++)
            if (tly_qty_sign(request->v[i].q) > 0)
                s.req[s.n++] = request->v[i];
    }
    return s;
}

static void rd_free_slot(rd_slot *s)
{
    free(s->key);
    free(s->req);
}

static uint32_t rd_wait_index(const tly_runtimed *rd, const char *key)
{
    for (uint32_t i = 0; i < rd->nwait; i++)
        if (strcmp(rd->waiters[i], key) == 0)
            return i;
    return UINT32_MAX;
}

static void rd_wait_add(tly_runtimed *rd, const char *key)
{
    if (rd_wait_index(rd, key) != UINT32_MAX)
        return;
    if (rd->nwait == rd->capwait) {
        rd->capwait = rd->capwait ? rd->capwait * 2 : 8;
        rd->waiters = tly_xrealloc(rd->waiters, rd->capwait * sizeof *rd->waiters);
    }
    rd->waiters[rd->nwait++] = tly_xstrdup(key);
}

/* A Run that got its reservation no longer waits; keep arrival order. */
static void rd_wait_drop(tly_runtimed *rd, const char *key)
{
    uint32_t i = rd_wait_index(rd, key);
    if (i == UINT32_MAX)
        return;
    free(rd->waiters[i]);
    memmove(&rd->waiters[i], &rd->waiters[i + 1],
            (rd->nwait - i - 1) * sizeof *rd->waiters);
    rd->nwait--;
}

tly_runtimed *tly_runtimed_create(const tly_rlist *capacity)
{
    tly_runtimed *rd = tly_xcalloc(1, sizeof *rd);
    if (pthread_mutex_init(&rd->mu, NULL) != 0)
        tly_oom();
    rd->cap = rd_copy_rq(capacity, &rd->ncap);
    tly_rvec_init(&rd->usage);
    rd->nslots = 16;
    rd->slots = tly_xcalloc(rd->nslots, sizeof *rd->slots);
    return rd;
}

void tly_runtimed_destroy(tly_runtimed *rd)
{
    if (!rd)
        return;
    for (uint32_t i = 0; i < rd->nslots; i++)
        if (rd->slots[i].key)
            rd_free_slot(&rd->slots[i]);
    free(rd->slots);
    for (uint32_t i = 0; i < rd->nwait; i++)
        free(rd->waiters[i]);
    free(rd->waiters);
    tly_rvec_free(&rd->usage);
    free(rd->cap);
    pthread_mutex_destroy(&rd->mu);
    free(rd);
}

static int rd_reserve(tly_runtimed *rd, const char *run_key,
                      const tly_rlist *request, uint32_t *bad_id, bool enlist)
{
    if (!rd || !run_key || !request || !rd_request_ok(request))
        return TLY_EINVAL;
    /* Hash and validate outside the lock: they touch only caller data. */
    uint64_t h = rd_hash(run_key);
    int rc = TLY_OK;
    rd_lock(rd);
    if (rd_find(rd, run_key, h) != UINT32_MAX)
        goto out; /* already active: idempotent, like upstream */
    tly_rlist cap = {rd->cap, rd->ncap};
    uint32_t bad = 0;
    if (!tly_rvec_fits(&rd->usage, request, &cap, &bad)) {
        if (bad_id)
            *bad_id = bad;
        if (enlist)
            rd_wait_add(rd, run_key);
        rc = TLY_RUNTIMED_NO_FIT;
        goto out;
    }
    rd_slot s = rd_make_slot(run_key, h, request);
    tly_rlist stored = {s.req, s.n};
    /*
    ** Cannot overflow: fits() computed every usage + request and found it
    ** <= capacity. Checked anyway, and the slot is added only after usage,
    ** so a failure leaves the cache as it was.
    */
    rc = tly_rvec_add_list(&rd->usage, &stored);
    if (rc != TLY_OK) {
        rd_free_slot(&s);
        goto out;
    }
    rd_insert(rd, s);
    if (rd->nwait)
        rd_wait_drop(rd, run_key);
out:
    rd_unlock(rd);
    return rc;
}

int tly_runtimed_reserve(tly_runtimed *rd, const char *run_key,
                         const tly_rlist *request, uint32_t *bad_id)
{
    return rd_reserve(rd, run_key, request, bad_id, false);
}

int tly_runtimed_reserve_or_wait(tly_runtimed *rd, const char *run_key,
                                 const tly_rlist *request, uint32_t *bad_id)
{
    return rd_reserve(rd, run_key, request, bad_id, true);
}

int tly_runtimed_force(tly_runtimed *rd, const char *run_key,
                       const tly_rlist *request)
{
    if (!rd || !run_key || !request || !rd_request_ok(request))
        return TLY_EINVAL;
    uint64_t h = rd_hash(run_key);
    int rc = TLY_OK;
    rd_lock(rd);
    if (rd_find(rd, run_key, h) == UINT32_MAX) {
        rd_slot s = rd_make_slot(run_key, h, request);
        tly_rlist stored = {s.req, s.n};
        /* No capacity bound here, so overflow is possible in principle. */
        rc = tly_rvec_add_list(&rd->usage, &stored);
        if (rc == TLY_OK) {
            rd_insert(rd, s);
            if (rd->nwait)
                rd_wait_drop(rd, run_key);
        } else {
            rd_free_slot(&s);
        }
    }
    rd_unlock(rd);
    return rc;
}

bool tly_runtimed_release(tly_runtimed *rd, const char *run_key)
{
    if (!rd || !run_key)
        return false;
    uint64_t h = rd_hash(run_key);
    rd_lock(rd);
    uint32_t i = rd_find(rd, run_key, h);
    if (i == UINT32_MAX) {
        rd_unlock(rd);
        return false;
    }
    rd_slot s = rd->slots[i];
    tly_rlist stored = {s.req, s.n};
    /*
    ** By I1 and I2 usage >= this reservation, so the subtraction cannot
    ** overflow. If it ever did, the ledger would be corrupt and continuing
    ** would admit Runs against wrong numbers: stop loudly instead.
    */
    if (tly_rvec_sub_list(&rd->usage, &stored) != TLY_OK) {
        fprintf(stderr, "tally: runtimed usage corrupt releasing '%s'\n", run_key);
        abort();
    }
    rd_remove_at(rd, i);
    rd_unlock(rd);
    rd_free_slot(&s);
    return true;
}

void tly_runtimed_set_capacity(tly_runtimed *rd, const tly_rlist *capacity)
{
    uint32_t n;
    tly_rq *fresh = rd_copy_rq(capacity, &n);
    rd_lock(rd);
    tly_rq *old = rd->cap;
    rd->cap = fresh;
    rd->ncap = n;
    rd_unlock(rd);
    free(old);
}

bool tly_runtimed_holds(const tly_runtimed *rd, const char *run_key)
{
    if (!rd || !run_key)
        return false;
    uint64_t h = rd_hash(run_key);
    rd_lock(rd);
    bool held = rd_find(rd, run_key, h) != UINT32_MAX;
    rd_unlock(rd);
    return held;
}

uint32_t tly_runtimed_count(const tly_runtimed *rd)
{
    rd_lock(rd);
    uint32_t n = rd->count;
    rd_unlock(rd);
    return n;
}

void tly_runtimed_usage(const tly_runtimed *rd, tly_rvec *out)
{
    tly_rvec_clear(out);
    rd_lock(rd);
    for (uint32_t id = rd->usage.n; id-- > 0;)
        tly_rvec_set(out, id, rd->usage.v[id]); /* highest first: one grow */
    rd_unlock(rd);
}

void tly_runtimed_capacity(const tly_runtimed *rd, tly_rlist *out, tly_arena *a)
{
    rd_lock(rd);
    out->n = rd->ncap;
    out->v = NULL;
    if (rd->ncap) {
        out->v = tly_arena_alloc(a, (size_t)rd->ncap * sizeof *out->v);
        memcpy(out->v, rd->cap, (size_t)rd->ncap * sizeof *out->v);
    }
    rd_unlock(rd);
}

void tly_runtimed_wait(tly_runtimed *rd, const char *run_key)
{
    if (!rd || !run_key)
        return;
    uint64_t h = rd_hash(run_key);
    rd_lock(rd);
    /* A Run that holds a reservation is admitted; it has nothing to wait for. */
    if (rd_find(rd, run_key, h) == UINT32_MAX)
        rd_wait_add(rd, run_key);
    rd_unlock(rd);
}

bool tly_runtimed_has_waiters(const tly_runtimed *rd)
{
    rd_lock(rd);
    bool any = rd->nwait > 0;
    rd_unlock(rd);
    return any;
}

uint32_t tly_runtimed_take_waiters(tly_runtimed *rd, char ***keys_out)
{
    rd_lock(rd);
    uint32_t n = rd->nwait;
    char **keys = n ? rd->waiters : NULL;
    if (n) {
        rd->waiters = NULL;
        rd->nwait = rd->capwait = 0;
    }
    rd_unlock(rd);
    *keys_out = keys;
    return n;
}

void tly_runtimed_free_keys(char **keys, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}
