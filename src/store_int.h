/*
** store_int.h: the state store's internals, shared by load.c (reading
** objects in) and store.c (indexing and lookups). Nothing outside those two
** files includes it.
*/
#ifndef TALLY_STORE_INT_H
#define TALLY_STORE_INT_H

#include <pthread.h>

#include "strmap.h"
#include "tally/store.h"

#define TLY_STORE_DERIVED_SLOTS 4

typedef struct {
    void **v;
    uint32_t n, cap;
} tly_objvec;

/* A sorted index: objects ordered by a key, looked up by binary search. */
typedef struct {
    void **v;
    const char **keys;   /* keys[i] is v[i]'s key */
    uint32_t n;
} tly_index;

struct tly_store {
    tly_arena *arena;             /* every decoded object and string */
    struct tly_textcache *texts;  /* shared copies of repeated texts in arena (NULL: none) */
    tly_names *names;
    tly_diags *diags;
    tly_objvec kinds[TLY_K_COUNT];
    tly_strmap byname;            /* "kind\x1fns\x1fname" -> index + 1 in kinds[kind] */
    const char *scheduler_name;   /* flag override, or NULL */
    int gating_mode;              /* --queue-admission-gating, or 0 */
    const char *queue_label_key;
    /* A KAI snapshot's schedulerParams (kaisnap.h): used where a Config would be, below it. */
    const char *snap_scheduler_name, *snap_queue_label_key;
    const tly_config *config;
    /*
    ** The CustomResourceDefinitions read: tly_store_set_crds()'s set (which
    ** also keeps the objects, for validate), else one the store makes at the
    ** first CRD and owns (admit and serve decide against it).
    */
    struct tly_crdset *crds;
    bool crds_owned, crds_keep;
    uint64_t crds_read;           /* CustomResourceDefinitions read into crds */
    int64_t clock;                /* tly_store_set_clock(), or TLY_NO_TIME */
    bool finished;
    uint8_t indexed;              /* the indexes below are built (atomic for views) */
    tly_index pods_by_node;
    tly_index runs_by_runtime;    /* key "ns\x1fruntime" */
    tly_index runtime_pods;       /* key "ns\x1fruntime" */
    tly_index pods_by_queue;
    /* A view over a backend (tly_store_create_view): kinds[] fill in on first use. */
    const tly_store_backend *backend;
    void *backend_ctx;
    bool own_names;               /* names is the store's (not a backend's) */
    uint8_t listed[TLY_K_COUNT];  /* kinds[k] filled from the backend (atomic) */
    tly_strmap rt_cache;          /* view: "ns\x1fruntime" -> Runtime Pod list */
    pthread_mutex_t list_mu;      /* a view's lazy arrays, indexes and Runtime Pod lists */
    pthread_mutex_t derived_mu;   /* guards derived[] */
    void *derived[TLY_STORE_DERIVED_SLOTS];
    void (*derived_free[TLY_STORE_DERIVED_SLOTS])(void *);
};

/* Adds a decoded object (load.c calls it); handles duplicates. */
void tly_store_add(tly_store *s, int kind, tly_meta *obj);

/*
** A KAI snapshot's schedulerParams (scheduler name, queue label key; NULL:
** not given), which apply as a Config's would: a Config in the input and the
** flags win over them. Set while loading, before tly_store_finish().
*/
void tly_store_set_snapshot_params(tly_store *s, const char *scheduler_name, const char *queue_label_key);

#endif
