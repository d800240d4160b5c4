/*
** lease.h: leader election on a coordination.k8s.io/v1 Lease (src/ctrl/lease.c),
** as client-go's leaderelection does it (contract section 9).
**
** Every replica runs one elector. Every --retry-period it reads the Lease:
**   - absent: it creates it with itself as holder;
**   - held by another whose record has changed within the last
**     --lease-duration (by this replica's own clock: no clocks are compared
**     across machines): it waits;
**   - otherwise (its own, released, or not renewed for a lease duration): it
**     writes itself as holder with a resourceVersion precondition, so of two
**     replicas that try at once exactly one succeeds (the other gets 409).
** A leader renews every retry period. It leads only while its last
** successful renewal is younger than --renew-deadline, which is shorter than
** the lease duration: a leader that cannot renew stops leading (and so
** writing) before any other replica may take over. On stop, a leader gives
** the Lease up (holderIdentity empty) so the next one need not wait.
**
** Controllers ask tly_lease_leading() right before every write, and compare
** tly_lease_term() across a cycle: a term that changed means leadership was
** lost and taken again in between, and what the cycle planned is dropped.
*/
#ifndef TALLY_LEASE_H
#define TALLY_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/kube.h"

typedef struct tly_lease tly_lease;

typedef struct {
    tly_kube *kube;               /* not owned */
    const char *ns, *name;        /* --lease-namespace, --lease-name */
    const char *identity;         /* this replica (NULL: hostname_pid_random) */
    long duration_ms;             /* --lease-duration (default 15 s) */
    long renew_deadline_ms;       /* --renew-deadline (default 10 s) */
    long retry_ms;                /* --retry-period (default 2 s) */
    void (*log)(void *ctx, int level, const char *event, const char *msg);
    void *log_ctx;
} tly_lease_options;

#define TLY_LEASE_DEFAULT_DURATION_MS 15000
#define TLY_LEASE_DEFAULT_RENEW_MS 10000
#define TLY_LEASE_DEFAULT_RETRY_MS 2000

/* Starts electing on a thread of its own. */
tly_lease *tly_lease_start(const tly_lease_options *o);
/* Stops; a leader releases the Lease first. */
void tly_lease_stop(tly_lease *l);

/* Whether this replica leads now (its last renewal is younger than the renew deadline). */
bool tly_lease_leading(const tly_lease *l);
/* Counts the times this replica became leader (0: never). */
uint64_t tly_lease_term(const tly_lease *l);
const char *tly_lease_identity(const tly_lease *l);
/* Transitions seen (tests). */
uint64_t tly_lease_acquisitions(const tly_lease *l);

#endif
