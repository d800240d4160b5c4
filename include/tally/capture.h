/*
** capture.h: every object tally reads, listed once from the API server
** (src/kube/capture.c): what the one-shot live commands run on and what
** `tally snapshot` writes (contract section 9).
*/
#ifndef TALLY_CAPTURE_H
#define TALLY_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/kube.h"
#include "tally/store.h"

typedef struct tly_kube_capture tly_kube_capture;

/* Discovery, then one paginated LIST of every served kind. */
int tly_kube_capture_run(tly_kube *k, tly_kube_capture **out, char *err, size_t errlen);
void tly_kube_capture_free(tly_kube_capture *c);

/* The Date of the first LIST answer (Unix seconds), or INT64_MIN. */
int64_t tly_kube_capture_now(const tly_kube_capture *c);
size_t tly_kube_capture_count(const tly_kube_capture *c);
/* Kinds the server does not serve ("kruntimes.io Run"), for one note each. */
size_t tly_kube_capture_nabsent(const tly_kube_capture *c);
const char *tly_kube_capture_absent(const tly_kube_capture *c, size_t i);
/*
** Why the CustomResourceDefinitions could not be read (RBAC refused their
** LIST), or NULL. They only feed validate's CRD checks, so the capture goes
** on without them and the caller says so.
*/
const char *tly_kube_capture_crds_skipped(const tly_kube_capture *c);

/*
** Decodes every object into s (not finished), each named by its API path
** with positions 1:1. Returns the number of errors recorded.
*/
int tly_kube_capture_load(const tly_kube_capture *c, tly_store *s);

/*
** Visits every object's tree in (apiVersion, kind, namespace, name) order.
** The tree lives until the callback returns.
*/
typedef void (*tly_capture_visit_fn)(void *ctx, tly_node *obj, tly_arena *a);
void tly_kube_capture_visit(const tly_kube_capture *c, tly_capture_visit_fn fn, void *ctx);

/*
** Writes the snapshot: {"apiVersion":"v1","kind":"List","now":...,"items":[...]},
** one item per line. rename, when non-NULL, may change each tree before it
** is written (the anonymizer).
*/
typedef tly_capture_visit_fn tly_capture_rename_fn;
void tly_kube_capture_write(const tly_kube_capture *c, FILE *out, tly_capture_rename_fn rename,
                            void *rctx);

/* RFC 3339 in UTC ("2026-12-01T20:10:25Z"); "" for INT64_MIN. */
void tly_kube_format_time(int64_t t, char buf[32]);

#endif
