/*
** test_runtimed.c: runtimed's Pod-local admission cache, as a specification:
** what fits, what does not and why, idempotence, release, waiters, capacity
** changes, re-adoption; then a multi-threaded stress run that checks the
** invariants (usage == sum of held reservations; usage <= capacity) while
** eight threads reserve and release concurrently.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tally/error.h"
#include "tally/runtimed.h"

/* A resource list in a fixed buffer: enough for every test below. */
typedef struct {
    tly_rq v[8];
    tly_rlist l;
} rl;

/* Builds a list from (id, quantity text) pairs given in ascending id order. */
static const tly_rlist *mk(rl *b, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        b->v[i].id = va_arg(ap, uint32_t);
        assert_int_equal(tly_qty_parse_str(va_arg(ap, const char *), &b->v[i].q), TLY_OK);
    }
    va_end(ap);
    b->l.v = b->v;
    b->l.n = (uint32_t)n;
    return &b->l;
}

static tly_qty q(const char *s)
{
    tly_qty v;
    assert_int_equal(tly_qty_parse_str(s, &v), TLY_OK);
    return v;
}

/* usage[id] == s, exactly. */
static void assert_usage(const tly_runtimed *rd, uint32_t id, const char *s)
{
    tly_rvec u;
    tly_rvec_init(&u);
    tly_runtimed_usage(rd, &u);
    if (tly_qty_cmp(tly_rvec_get(&u, id), q(s)) != 0) {
        char buf[TLY_QTY_BUFSZ];
        tly_qty_format(tly_rvec_get(&u, id), buf, sizeof buf);
        tly_rvec_free(&u);
        fail_msg("usage[%u] is %s, expected %s", id, buf, s);
    }
    tly_rvec_free(&u);
}

static const uint32_t CPU = TLY_R_CPU, MEM = TLY_R_MEMORY, GPU = TLY_R_NVIDIA_GPU,
                      AMD = TLY_R_AMD_GPU, RUNS = TLY_R_RUNS;

static void test_a_request_that_fits_is_reserved(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 3, CPU, "4", MEM, "8Gi", RUNS, "2"));
    assert_int_equal(tly_runtimed_reserve(rd, "ns/a", mk(&r, 3, CPU, "1500m", MEM, "1Gi", RUNS, "1"), NULL),
                     TLY_OK);
    assert_true(tly_runtimed_holds(rd, "ns/a"));
    assert_false(tly_runtimed_holds(rd, "ns/b"));
    assert_int_equal(tly_runtimed_count(rd), 1);
    assert_usage(rd, CPU, "1500m");
    assert_usage(rd, MEM, "1Gi");
    assert_usage(rd, RUNS, "1");
    tly_runtimed_destroy(rd);
}

static void test_a_request_equal_to_the_free_room_fits(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 2, GPU, "2", RUNS, "3"));
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 2, GPU, "1", RUNS, "1"), NULL), TLY_OK);
    /* 1 + 1 == 2: equality fits. */
    assert_int_equal(tly_runtimed_reserve(rd, "b", mk(&r, 2, GPU, "1", RUNS, "1"), NULL), TLY_OK);
    assert_usage(rd, GPU, "2");
    /* Exact decimal arithmetic: 333m three times, then 1m, fills one core. */
    tly_runtimed *cpu = tly_runtimed_create(mk(&c, 1, CPU, "1"));
    assert_int_equal(tly_runtimed_reserve(cpu, "x", mk(&r, 1, CPU, "333m"), NULL), TLY_OK);
    assert_int_equal(tly_runtimed_reserve(cpu, "y", mk(&r, 1, CPU, "333m"), NULL), TLY_OK);
    assert_int_equal(tly_runtimed_reserve(cpu, "z", mk(&r, 1, CPU, "333m"), NULL), TLY_OK);
    assert_int_equal(tly_runtimed_reserve(cpu, "w", mk(&r, 1, CPU, "1m"), NULL), TLY_OK);
    assert_int_equal(tly_runtimed_reserve(cpu, "v", mk(&r, 1, CPU, "1n"), NULL), TLY_RUNTIMED_NO_FIT);
    assert_usage(cpu, CPU, "1");
    tly_runtimed_destroy(cpu);
    tly_runtimed_destroy(rd);
}

static void test_one_resource_over_reserves_nothing_and_names_it(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 3, CPU, "4", GPU, "1", RUNS, "4"));
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 2, GPU, "1", RUNS, "1"), NULL), TLY_OK);
    /* cpu and runs would fit; the gpu does not: nothing of b is reserved. */
    uint32_t bad = UINT32_MAX;
    assert_int_equal(tly_runtimed_reserve(rd, "b", mk(&r, 3, CPU, "1", GPU, "1", RUNS, "1"), &bad),
                     TLY_RUNTIMED_NO_FIT);
    assert_int_equal(bad, GPU);
    assert_false(tly_runtimed_holds(rd, "b"));
    assert_int_equal(tly_runtimed_count(rd), 1);
    assert_usage(rd, CPU, "0");
    assert_usage(rd, GPU, "1");
    assert_usage(rd, RUNS, "1");
    /* Several over: the lowest id is named. */
    assert_int_equal(tly_runtimed_reserve(rd, "c", mk(&r, 2, CPU, "5", GPU, "1"), &bad),
                     TLY_RUNTIMED_NO_FIT);
    assert_int_equal(bad, CPU);
    /* bad_id may be NULL. */
    assert_int_equal(tly_runtimed_reserve(rd, "c", mk(&r, 1, GPU, "1"), NULL), TLY_RUNTIMED_NO_FIT);
    tly_runtimed_destroy(rd);
}

static void test_an_unadvertised_resource_never_fits(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 2, CPU, "64", RUNS, "8"));
    uint32_t bad = UINT32_MAX;
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 2, AMD, "1", RUNS, "1"), &bad),
                     TLY_RUNTIMED_NO_FIT);
    assert_int_equal(bad, AMD);
    assert_int_equal(tly_runtimed_count(rd), 0);
    assert_usage(rd, RUNS, "0");
    /* A Pod with no capacity at all admits only empty requests. */
    tly_runtimed *none = tly_runtimed_create(NULL);
    assert_int_equal(tly_runtimed_reserve(none, "a", mk(&r, 1, RUNS, "1"), &bad), TLY_RUNTIMED_NO_FIT);
    assert_int_equal(bad, RUNS);
    assert_int_equal(tly_runtimed_reserve(none, "b", mk(&r, 0), NULL), TLY_OK);
    tly_runtimed_destroy(none);
    tly_runtimed_destroy(rd);
}

static void test_zero_entries_are_ignored_and_negative_rejected(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 1, RUNS, "1"));
    /* gpu 0 on a Pod without gpus: the zero entry is not a request. */
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 2, GPU, "0", RUNS, "1"), NULL), TLY_OK);
    assert_usage(rd, GPU, "0");
    assert_true(tly_runtimed_release(rd, "a"));
    /* A negative entry would lower usage and let others overcommit. */
    assert_int_equal(tly_runtimed_reserve(rd, "n", mk(&r, 2, GPU, "-1", RUNS, "1"), NULL), TLY_EINVAL);
    assert_int_equal(tly_runtimed_force(rd, "n", mk(&r, 1, RUNS, "-1")), TLY_EINVAL);
    assert_int_equal(tly_runtimed_reserve(rd, NULL, mk(&r, 1, RUNS, "1"), NULL), TLY_EINVAL);
    assert_int_equal(tly_runtimed_count(rd), 0);
    assert_usage(rd, RUNS, "0");
    tly_runtimed_destroy(rd);
}

static void test_reserving_a_held_key_again_changes_nothing(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 2, CPU, "4", RUNS, "2"));
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 2, CPU, "1", RUNS, "1"), NULL), TLY_OK);
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 2, CPU, "1", RUNS, "1"), NULL), TLY_OK);
    /* Already active: even a different (or oversized) request is not re-checked. */
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 1, CPU, "100"), NULL), TLY_OK);
    assert_int_equal(tly_runtimed_count(rd), 1);
    assert_usage(rd, CPU, "1");
    assert_usage(rd, RUNS, "1");
    /* One release undoes it; a second finds nothing and subtracts nothing. */
    assert_true(tly_runtimed_release(rd, "a"));
    assert_false(tly_runtimed_release(rd, "a"));
    assert_false(tly_runtimed_release(rd, "never"));
    assert_usage(rd, CPU, "0");
    assert_usage(rd, RUNS, "0");
    tly_runtimed_destroy(rd);
}

static void test_release_frees_room_and_enables_a_waiter(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 2, GPU, "1", RUNS, "4"));
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 2, GPU, "1", RUNS, "1"), NULL), TLY_OK);
    assert_false(tly_runtimed_has_waiters(rd));
    /* b does not fit: it goes on the wait list in the same step. */
    assert_int_equal(tly_runtimed_reserve_or_wait(rd, "b", mk(&r, 2, GPU, "1", RUNS, "1"), NULL),
                     TLY_RUNTIMED_NO_FIT);
    assert_true(tly_runtimed_has_waiters(rd));
    /* wait() adds no duplicates, and a held key does not wait. */
    tly_runtimed_wait(rd, "b");
    tly_runtimed_wait(rd, "a");
    tly_runtimed_wait(rd, "c");
    /* The event: a ends. */
    assert_true(tly_runtimed_release(rd, "a"));
    assert_true(tly_runtimed_has_waiters(rd));
    char **keys;
    uint32_t n = tly_runtimed_take_waiters(rd, &keys);
    assert_int_equal(n, 2);
    assert_string_equal(keys[0], "b");
    assert_string_equal(keys[1], "c");
    assert_false(tly_runtimed_has_waiters(rd));
    assert_int_equal(tly_runtimed_reserve_or_wait(rd, keys[0], mk(&r, 2, GPU, "1", RUNS, "1"), NULL),
                     TLY_OK);
    tly_runtimed_free_keys(keys, n);
    assert_true(tly_runtimed_holds(rd, "b"));
    assert_int_equal(tly_runtimed_take_waiters(rd, &keys), 0);
    assert_null(keys);
    /* A waiter that gets its reservation leaves the list on its own. */
    tly_runtimed_wait(rd, "d");
    assert_true(tly_runtimed_release(rd, "b"));
    assert_int_equal(tly_runtimed_reserve(rd, "d", mk(&r, 1, GPU, "1"), NULL), TLY_OK);
    assert_false(tly_runtimed_has_waiters(rd));
    tly_runtimed_destroy(rd);
}

static void test_capacity_change_applies_to_later_reservations(void **state)
{
    (void)state;
    rl c, r;
    tly_arena *a = tly_arena_create(4096);
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 1, RUNS, "1"));
    assert_int_equal(tly_runtimed_reserve(rd, "a", mk(&r, 1, RUNS, "1"), NULL), TLY_OK);
    assert_int_equal(tly_runtimed_reserve_or_wait(rd, "b", mk(&r, 1, RUNS, "1"), NULL), TLY_RUNTIMED_NO_FIT);
    /* The annotation grows: the waiter is rechecked and fits. */
    tly_runtimed_set_capacity(rd, mk(&c, 2, CPU, "2", RUNS, "2"));
    tly_rlist cap;
    tly_runtimed_capacity(rd, &cap, a);
    assert_int_equal(cap.n, 2);
    assert_int_equal(cap.v[1].id, RUNS);
    assert_int_equal(tly_qty_cmp(cap.v[1].q, q("2")), 0);
    assert_true(tly_runtimed_has_waiters(rd));
    assert_int_equal(tly_runtimed_reserve(rd, "b", mk(&r, 1, RUNS, "1"), NULL), TLY_OK);
    assert_false(tly_runtimed_has_waiters(rd));
    /* It shrinks: held reservations stay, new ones wait until usage is under it. */
    tly_runtimed_set_capacity(rd, mk(&c, 1, RUNS, "1"));
    assert_int_equal(tly_runtimed_count(rd), 2);
    assert_int_equal(tly_runtimed_reserve(rd, "c", mk(&r, 1, RUNS, "1"), NULL), TLY_RUNTIMED_NO_FIT);
    assert_true(tly_runtimed_release(rd, "a"));
    assert_int_equal(tly_runtimed_reserve(rd, "c", mk(&r, 1, RUNS, "1"), NULL), TLY_RUNTIMED_NO_FIT);
    assert_true(tly_runtimed_release(rd, "b"));
    assert_int_equal(tly_runtimed_reserve(rd, "c", mk(&r, 1, RUNS, "1"), NULL), TLY_OK);
    tly_runtimed_destroy(rd);
    tly_arena_destroy(a);
}

static void test_force_readopts_runs_beyond_capacity(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 2, GPU, "1", RUNS, "2"));
    /* After a restart runtimed finds two running Runs; together they exceed the Pod. */
    assert_int_equal(tly_runtimed_force(rd, "old1", mk(&r, 2, GPU, "1", RUNS, "1")), TLY_OK);
    assert_int_equal(tly_runtimed_force(rd, "old2", mk(&r, 2, GPU, "1", RUNS, "1")), TLY_OK);
    assert_int_equal(tly_runtimed_force(rd, "old2", mk(&r, 2, GPU, "1", RUNS, "1")), TLY_OK);
    assert_int_equal(tly_runtimed_count(rd), 2);
    assert_usage(rd, GPU, "2");
    /* Re-adoption does not open room that is not there. */
    uint32_t bad = 0;
    assert_int_equal(tly_runtimed_reserve(rd, "new", mk(&r, 1, GPU, "1"), &bad), TLY_RUNTIMED_NO_FIT);
    assert_int_equal(bad, GPU);
    assert_true(tly_runtimed_release(rd, "old1"));
    assert_int_equal(tly_runtimed_reserve(rd, "new", mk(&r, 1, GPU, "1"), NULL), TLY_RUNTIMED_NO_FIT);
    assert_true(tly_runtimed_release(rd, "old2"));
    assert_int_equal(tly_runtimed_reserve(rd, "new", mk(&r, 1, GPU, "1"), NULL), TLY_OK);
    tly_runtimed_destroy(rd);
}

/* Many keys in and out: the hash table's growth and deletion keep every key findable. */
static void test_many_keys_churn(void **state)
{
    (void)state;
    rl c, r;
    tly_runtimed *rd = tly_runtimed_create(mk(&c, 1, RUNS, "100000"));
    char key[32];
    enum { N = 5000 };
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "ns/run-%d", i);
        assert_int_equal(tly_runtimed_reserve(rd, key, mk(&r, 1, RUNS, "1"), NULL), TLY_OK);
    }
    for (int i = 0; i < N; i += 3) {
        snprintf(key, sizeof key, "ns/run-%d", i);
        assert_true(tly_runtimed_release(rd, key));
    }
    uint32_t held = 0;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "ns/run-%d", i);
        assert_int_equal(tly_runtimed_holds(rd, key), i % 3 != 0);
        held += i % 3 != 0;
    }
    assert_int_equal(tly_runtimed_count(rd), held);
    char want[16];
    snprintf(want, sizeof want, "%u", held);
    assert_usage(rd, RUNS, want);
    tly_runtimed_destroy(rd); /* frees the rest */
}

/* ---- Concurrency stress ------------------------------------------------ */

enum {
    ST_THREADS = 8,
    ST_OPS = 20000,
    ST_NRES = 4,
    ST_MAXHELD = 12
};
static const uint32_t st_ids[ST_NRES] = {TLY_R_CPU, TLY_R_MEMORY, TLY_R_NVIDIA_GPU, TLY_R_RUNS};
static const int64_t st_cap[ST_NRES] = {6, 6, 3, 8};

typedef struct {
    uint32_t key;             /* the n-th key this thread made */
    int64_t amt[ST_NRES];
} st_held;

typedef struct {
    tly_runtimed *rd;
    unsigned idx;
    uint64_t rng;
    st_held held[ST_MAXHELD];
    uint32_t nheld;
    uint64_t fits, nofits, releases, rereserves;
} st_thread;

static atomic_int st_fail;
static atomic_bool st_done;
/* Workers and monitor start together, so the threads really overlap. */
static pthread_barrier_t st_start;
static char st_why[256];

static void st_failf(const char *fmt, ...)
{
    if (atomic_fetch_add(&st_fail, 1) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st_why, sizeof st_why, fmt, ap);
        va_end(ap);
    }
}

static uint64_t st_rand(uint64_t *s)
{
    /* xorshift64*: seeded per thread, so every run does the same per-thread work. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void st_key(char *buf, size_t n, unsigned t, uint32_t k)
{
    snprintf(buf, n, "ns/t%u-run%u", t, k);
}

static tly_rlist st_list(tly_rq *v, const int64_t *amt)
{
    tly_rlist l = {v, 0};
    for (int i = 0; i < ST_NRES; i++)
        v[l.n++] = (tly_rq){st_ids[i], tly_qty_from_int(amt[i], TLY_QFMT_DECIMAL_SI)};
    return l;
}

static atomic_ulong st_snapshots;

/* The global invariant I3 on one consistent snapshot: 0 <= usage <= capacity. */
static void st_check_usage(tly_runtimed *rd, tly_rvec *u, const char *who)
{
    tly_runtimed_usage(rd, u);
    atomic_fetch_add(&st_snapshots, 1);
    for (int r = 0; r < ST_NRES; r++) {
        tly_qty got = tly_rvec_get(u, st_ids[r]);
        if (tly_qty_sign(got) < 0 ||
            tly_qty_cmp(got, tly_qty_from_int(st_cap[r], TLY_QFMT_DECIMAL_SI)) > 0) {
            int64_t val = 0;
            tly_qty_value(got, &val);
            st_failf("%s saw usage of id %u = %lld, capacity %lld", who, st_ids[r],
                     (long long)val, (long long)st_cap[r]);
        }
    }
}

static void *st_worker(void *arg)
{
    st_thread *t = arg;
    uint32_t next = 0;
    char key[48];
    tly_rq v[ST_NRES];
    tly_rvec u;
    tly_rvec_init(&u);
    pthread_barrier_wait(&st_start);
    for (int op = 0; op < ST_OPS && !atomic_load(&st_fail); op++) {
        /* Workers sample too, so the check runs however the monitor is scheduled. */
        if (op % 32 == 0)
            st_check_usage(t->rd, &u, "worker");
        uint64_t x = st_rand(&t->rng);
        if (t->nheld && (x % 2 == 0 || t->nheld == ST_MAXHELD)) {
            uint32_t i = (uint32_t)(st_rand(&t->rng) % t->nheld);
            st_key(key, sizeof key, t->idx, t->held[i].key);
            if (!tly_runtimed_release(t->rd, key))
                st_failf("release of held %s returned false", key);
            t->held[i] = t->held[--t->nheld];
            t->releases++;
        } else if (t->nheld && x % 7 == 1) {
            /* Re-reserving a held key must not count it twice. */
            uint32_t i = (uint32_t)(st_rand(&t->rng) % t->nheld);
            st_key(key, sizeof key, t->idx, t->held[i].key);
            tly_rlist l = st_list(v, t->held[i].amt);
            if (tly_runtimed_reserve(t->rd, key, &l, NULL) != TLY_OK)
                st_failf("re-reserve of held %s not OK", key);
            t->rereserves++;
        } else {
            st_held h = {next++, {0}};
            for (int r = 0; r < ST_NRES - 1; r++)
                h.amt[r] = (int64_t)(st_rand(&t->rng) % 3); /* 0, 1 or 2 */
            h.amt[ST_NRES - 1] = 1;                         /* runs */
            st_key(key, sizeof key, t->idx, h.key);
            tly_rlist l = st_list(v, h.amt);
            uint32_t bad = UINT32_MAX;
            int rc = tly_runtimed_reserve(t->rd, key, &l, &bad);
            if (rc == TLY_OK) {
                if (!tly_runtimed_holds(t->rd, key))
                    st_failf("%s reserved but not held", key);
                t->held[t->nheld++] = h;
                t->fits++;
            } else if (rc == TLY_RUNTIMED_NO_FIT) {
                int r = 0;
                while (r < ST_NRES && st_ids[r] != bad)
                    r++;
                if (r == ST_NRES || h.amt[r] <= 0)
                    st_failf("%s: no fit names id %u, not a requested resource", key, bad);
                if (tly_runtimed_holds(t->rd, key))
                    st_failf("%s refused but held", key);
                t->nofits++;
            } else {
                st_failf("%s: reserve returned %d", key, rc);
            }
        }
    }
    tly_rvec_free(&u);
    return NULL;
}

typedef struct {
    tly_runtimed *rd;
    uint64_t snapshots;
} st_monitor;

static void *st_watch(void *arg)
{
    st_monitor *m = arg;
    tly_rvec u;
    tly_rvec_init(&u);
    pthread_barrier_wait(&st_start);
    while (!atomic_load(&st_done) && !atomic_load(&st_fail)) {
        st_check_usage(m->rd, &u, "monitor");
        m->snapshots++;
        sched_yield(); /* observe often without starving the workers */
    }
    tly_rvec_free(&u);
    return NULL;
}

static double st_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_concurrent_reserve_and_release_keep_the_invariants(void **state)
{
    (void)state;
    tly_rq cv[ST_NRES];
    tly_rlist cap = st_list(cv, st_cap);
    tly_runtimed *rd = tly_runtimed_create(&cap);
    static st_thread th[ST_THREADS];
    pthread_t tid[ST_THREADS], mon;
    st_monitor m = {rd, 0};
    atomic_store(&st_fail, 0);
    atomic_store(&st_done, false);
    atomic_store(&st_snapshots, 0);

    assert_int_equal(pthread_barrier_init(&st_start, NULL, ST_THREADS + 1), 0);
    double t0 = st_now();
    assert_int_equal(pthread_create(&mon, NULL, st_watch, &m), 0);
    for (unsigned i = 0; i < ST_THREADS; i++) {
        memset(&th[i], 0, sizeof th[i]);
        th[i].rd = rd;
        th[i].idx = i;
        th[i].rng = 0x9E3779B97F4A7C15ULL * (i + 1);
        assert_int_equal(pthread_create(&tid[i], NULL, st_worker, &th[i]), 0);
    }
    for (unsigned i = 0; i < ST_THREADS; i++)
        assert_int_equal(pthread_join(tid[i], NULL), 0);
    atomic_store(&st_done, true);
    assert_int_equal(pthread_join(mon, NULL), 0);
    double secs = st_now() - t0;
    pthread_barrier_destroy(&st_start);

    if (atomic_load(&st_fail))
        fail_msg("%d violation(s); first: %s", atomic_load(&st_fail), st_why);

    /* I1: usage equals the sum of what the threads still hold; count matches. */
    int64_t sum[ST_NRES] = {0};
    uint32_t held = 0;
    uint64_t fits = 0, nofits = 0, rel = 0, rer = 0;
    for (unsigned i = 0; i < ST_THREADS; i++) {
        for (uint32_t k = 0; k < th[i].nheld; k++)
            for (int r = 0; r < ST_NRES; r++)
                sum[r] += th[i].held[k].amt[r];
        held += th[i].nheld;
        fits += th[i].fits;
        nofits += th[i].nofits;
        rel += th[i].releases;
        rer += th[i].rereserves;
    }
    assert_int_equal(tly_runtimed_count(rd), held);
    tly_rvec u;
    tly_rvec_init(&u);
    tly_runtimed_usage(rd, &u);
    for (int r = 0; r < ST_NRES; r++) {
        int64_t got;
        assert_int_equal(tly_qty_value(tly_rvec_get(&u, st_ids[r]), &got), TLY_OK);
        assert_int_equal(got, sum[r]);
        assert_true(got <= st_cap[r]);
    }
    /* Both outcomes must have happened often, or the test proved little. */
    assert_true(fits > 1000);
    assert_true(nofits > 1000);
    assert_true(atomic_load(&st_snapshots) >= (unsigned long)ST_THREADS * ST_OPS / 32);

    /* Releasing everything returns usage to exactly zero. */
    char key[48];
    for (unsigned i = 0; i < ST_THREADS; i++)
        for (uint32_t k = 0; k < th[i].nheld; k++) {
            st_key(key, sizeof key, i, th[i].held[k].key);
            assert_true(tly_runtimed_release(rd, key));
        }
    tly_runtimed_usage(rd, &u);
    for (uint32_t id = 0; id < u.n; id++)
        assert_true(tly_qty_is_zero(u.v[id]));
    assert_int_equal(tly_runtimed_count(rd), 0);
    tly_rvec_free(&u);
    tly_runtimed_destroy(rd);

    printf("runtimed stress: %d threads x %d ops = %d ops in %.3f s "
           "(%llu fit, %llu no-fit, %llu released, %llu re-reserved; "
           "%lu usage snapshots checked, %llu by the monitor)\n",
           ST_THREADS, ST_OPS, ST_THREADS * ST_OPS, secs, (unsigned long long)fits,
           (unsigned long long)nofits, (unsigned long long)rel, (unsigned long long)rer,
           atomic_load(&st_snapshots), (unsigned long long)m.snapshots);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_request_that_fits_is_reserved),
        cmocka_unit_test(test_a_request_equal_to_the_free_room_fits),
        cmocka_unit_test(test_one_resource_over_reserves_nothing_and_names_it),
        cmocka_unit_test(test_an_unadvertised_resource_never_fits),
        cmocka_unit_test(test_zero_entries_are_ignored_and_negative_rejected),
        cmocka_unit_test(test_reserving_a_held_key_again_changes_nothing),
        cmocka_unit_test(test_release_frees_room_and_enables_a_waiter),
        cmocka_unit_test(test_capacity_change_applies_to_later_reservations),
        cmocka_unit_test(test_force_readopts_runs_beyond_capacity),
        cmocka_unit_test(test_many_keys_churn),
        cmocka_unit_test(test_concurrent_reserve_and_release_keep_the_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
