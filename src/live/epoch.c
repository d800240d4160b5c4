/*
** epoch.c: fork epochs and deferred freeing (epoch.h).
*/
#include "epoch.h"

#include <stdlib.h>
#include <string.h>

#include "tally/arena.h"

void tly_epochs_init(tly_epochs *e)
{
    memset(e, 0, sizeof *e);
    pthread_mutex_init(&e->mu, NULL);
    e->cur = 1;
}

void tly_epochs_destroy(tly_epochs *e)
{
    for (tly_retblock *b = e->rhead, *next; b; b = next) {
        for (uint32_t i = b->first; i < b->n; i++)
            b->r[i].free_fn(b->r[i].p, b->r[i].ctx);
        next = b->next;
        free(b);
    }
    free(e->rspare);
    /* After the retired: their free functions may have kept nodes. */
    for (int c = 0; c < TLY_EPOCH_SPARE_CLASSES; c++) {
        for (uint32_t i = 0; i < e->spare[c].n; i++)
            free(e->spare[c].v[i]);
        free(e->spare[c].v);
    }
    free(e->fork_epoch);
    free(e->fork_count);
    pthread_mutex_destroy(&e->mu);
}

uint64_t tly_epochs_fork(tly_epochs *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t f = e->cur;
    if (e->nforks > e->first && e->fork_epoch[e->nforks - 1] == f) {
        e->fork_count[e->nforks - 1]++;
    } else {
        if (e->first > 0 && e->first == e->nforks) {
            e->first = e->nforks = 0;
        }
        if (e->nforks == e->capforks) {
            /* Compact the released front before growing. */
            if (e->first > 0) {
                memmove(e->fork_epoch, e->fork_epoch + e->first,
                        (e->nforks - e->first) * sizeof *e->fork_epoch);
                memmove(e->fork_count, e->fork_count + e->first,
                        (e->nforks - e->first) * sizeof *e->fork_count);
                e->nforks -= e->first;
                e->first = 0;
            }
            if (e->nforks == e->capforks) {
                e->capforks = e->capforks ? e->capforks * 2 : 16;
                e->fork_epoch = tly_xrealloc(e->fork_epoch, e->capforks * sizeof *e->fork_epoch);
                e->fork_count = tly_xrealloc(e->fork_count, e->capforks * sizeof *e->fork_count);
            }
        }
        e->fork_epoch[e->nforks] = f;
        e->fork_count[e->nforks] = 1;
        e->nforks++;
    }
    /* The writer moves on: what the fork sees is no longer changed in place. */
    __atomic_store_n(&e->cur, f + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&e->mu);
    return f;
}

void tly_epochs_release(tly_epochs *e, uint64_t f)
{
    pthread_mutex_lock(&e->mu);
    uint32_t lo = e->first, hi = e->nforks;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e->fork_epoch[mid] < f)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < e->nforks && e->fork_epoch[lo] == f && e->fork_count[lo] > 0)
        e->fork_count[lo]--;
    while (e->first < e->nforks && e->fork_count[e->first] == 0)
        e->first++;
    pthread_mutex_unlock(&e->mu);
}

void tly_epochs_retire(tly_epochs *e, void *p, uint64_t born, void (*free_fn)(void *, void *),
                       void *ctx)
{
    if (!p)
        return;
    if (born >= tly_epochs_cur(e)) {
        free_fn(p, ctx);
        e->freed++;
        return;
    }
    tly_retblock *b = e->rtail;
    if (!b || b->n == TLY_EPOCH_RET_BLOCK) {
        tly_retblock *nb = e->rspare ? e->rspare : tly_xmalloc(sizeof *nb);
        e->rspare = NULL;
        nb->next = NULL;
        nb->first = nb->n = 0;
        if (b)
            b->next = nb;
        else
            e->rhead = nb;
        e->rtail = b = nb;
    }
    b->r[b->n++] = (tly_retired){p, free_fn, ctx, tly_epochs_cur(e)};
    e->pending++;
}

void tly_epochs_reclaim(tly_epochs *e)
{
    pthread_mutex_lock(&e->mu);
    bool any = e->first < e->nforks;
    uint64_t oldest = any ? e->fork_epoch[e->first] : UINT64_MAX;
    pthread_mutex_unlock(&e->mu);
    /* Retired in R: seen only by forks with F < R. */
    tly_retblock *b;
    while ((b = e->rhead) && b->first < b->n && b->r[b->first].epoch <= oldest) {
        tly_retired *r = &b->r[b->first++];
        r->free_fn(r->p, r->ctx);
        e->freed++;
        e->pending--;
        if (b->first == b->n) {
            /* Done with the block (full, or the tail): keep one for the next retire, free the rest. */
            e->rhead = b->next;
            if (!e->rhead)
                e->rtail = NULL;
            if (e->rspare)
                free(b);
            else
                e->rspare = b;
        }
    }
}

size_t tly_epochs_pending(const tly_epochs *e) { return e->pending; }
