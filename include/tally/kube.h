/*
** kube.h: tally's Kubernetes API client (src/kube/).
**
** The layers, bottom up:
**
**   kubeconfig.c   where to connect and as whom: a kubeconfig (kubectl's
**                  and client-go's rules: --kubeconfig, $KUBECONFIG merged
**                  first-wins, ~/.kube/config; current-context or
**                  --context) or the Pod's service account (--in-cluster);
**   cred.c         the credential of one request: a static or file token
**                  (re-read when the file changes: bound tokens rotate
**                  hourly), an exec plugin's ExecCredential cached until
**                  its expirationTimestamp, client certificates;
**   client.c       HTTPS over libcurl: a pool of connections, the
**                  client-side rate limit (--kube-api-qps/--kube-api-burst,
**                  a token bucket as client-go's), User-Agent tally/<version>,
**                  one retry after a 401 with a refreshed credential, and
**                  messages that say what to fix;
**   discovery.c    which group versions the server serves, so that a kind
**                  whose CRD is not installed is "absent", not an error, and
**                  DRA is read at resource.k8s.io/v1, else v1beta2, v1beta1;
**   list.c         paginated LIST (limit/continue; a 410 on an expired
**                  continue token restarts the list);
**   watch.c        a WATCH stream cut into events as the bytes arrive, one
**                  JSON value at a time, never the whole response;
**   reflector.c    list, then watch from the list's resourceVersion with
**                  bookmarks; ERROR/410 relists (objects that vanished in
**                  between become deletions); reconnects with exponential
**                  backoff and jitter; a silent watch is restarted.
**
** Handles are opaque and own their memory; every function that can fail
** returns a tly_status code (error.h) and writes a sentence into the
** caller's err buffer that names the file, field or API path and what to do.
** A client is safe to use from several threads at once (each request takes
** a connection from the pool); a reflector runs on a thread of its own.
*/
#ifndef TALLY_KUBE_H
#define TALLY_KUBE_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/node.h"

/* ---- connection settings ------------------------------------------------ */

typedef struct tly_kube_config tly_kube_config;

/* How to find the configuration (contract section 9). */
typedef struct {
    const char *kubeconfig;  /* --kubeconfig FILE, or NULL: $KUBECONFIG, then ~/.kube/config */
    const char *context;     /* --context NAME, or NULL: the current-context */
    bool in_cluster;         /* --in-cluster: the Pod's service account */
} tly_kube_source;

/*
** Resolves the settings of src into *out (free with tly_kube_config_free).
** Every misconfiguration is an error naming the file and field, e.g.
** `kubeconfig /root/.kube/config: users[name=admin].user.client-key: no such
** file "/x/admin.key" (paths are relative to the kubeconfig's directory)`.
*/
int tly_kube_config_load(const tly_kube_source *src, tly_kube_config **out, char *err,
                         size_t errlen);
void tly_kube_config_free(tly_kube_config *c);
/* The API server URL, and a phrase naming where the settings came from. */
const char *tly_kube_config_server(const tly_kube_config *c);
const char *tly_kube_config_origin(const tly_kube_config *c);
/* The context's namespace (in-cluster: the Pod's), or NULL. */
const char *tly_kube_config_namespace(const tly_kube_config *c);

/* ---- the client ------------------------------------------------------------ */

typedef struct tly_kube tly_kube;

typedef struct {
    double qps;              /* --kube-api-qps; <= 0: no limit */
    int burst;               /* --kube-api-burst */
    const char *user_agent;  /* NULL: tally/<version> */
    long timeout_ms;         /* per ordinary request; 0: 60 s */
} tly_kube_options;

#define TLY_KUBE_DEFAULT_QPS 50.0
#define TLY_KUBE_DEFAULT_BURST 100

/* Takes ownership of cfg (also on failure). */
int tly_kube_create(tly_kube_config *cfg, const tly_kube_options *o, tly_kube **out, char *err,
                    size_t errlen);
void tly_kube_destroy(tly_kube *k);
const tly_kube_config *tly_kube_config_of(const tly_kube *k);

/* One HTTP response. */
typedef struct {
    long status;             /* HTTP status */
    char *body;              /* malloc'd, NUL-terminated (may hold NULs of its own) */
    size_t len;
    int64_t date;            /* the Date header, Unix seconds, or INT64_MIN */
    int retry_after;         /* seconds from Retry-After, or -1 */
    char *warning;           /* the Warning headers, "; "-joined, or NULL */
} tly_kube_resp;

void tly_kube_resp_free(tly_kube_resp *r);

/*
** One request. path includes the query ("/api/v1/pods?limit=500"). A body
** is sent with its content type when body is non-NULL. TLY_OK when the
** server answered, whatever the status; an error when it could not be
** reached (err names the server and what failed).
*/
int tly_kube_request(tly_kube *k, const char *method, const char *path, const char *ctype,
                     const char *body, size_t blen, tly_kube_resp *r, char *err, size_t errlen);

/*
** Turns an answer that is not 2xx into a sentence for a person: the server's
** own Status message, plus what to fix for 401 (the credential) and 403 (the
** RBAC rule that is missing: verb, resource, group). `verb` is the API verb
** tally used (list, watch, get, patch, ...), `what` the resource ("pods",
** "queues.scheduling.run.ai").
*/
void tly_kube_explain_status(const tly_kube *k, const tly_kube_resp *r, const char *verb,
                             const char *what, char *err, size_t errlen);

/*
** A streaming GET (a watch): fn is called with the body's bytes as they
** arrive; a non-zero return stops the stream. *stop, when non-NULL, is
** polled at least once a second and stops it too. The stream also stops
** after idle_ms without a byte (0: never) and returns TLY_ETIMEOUT. The
** response's status and headers are in *r; the body only when the status
** is not 200 (a Status to explain). Returns TLY_OK when the server closed
** the stream or fn/stop ended it.
*/
typedef int (*tly_kube_chunk_fn)(void *ctx, const char *data, size_t len);
int tly_kube_stream(tly_kube *k, const char *path, tly_kube_chunk_fn fn, void *ctx,
                    const atomic_int *stop, long idle_ms, tly_kube_resp *r, char *err,
                    size_t errlen);

/* Requests sent so far (for metrics and tests). */
uint64_t tly_kube_requests(const tly_kube *k);

/* ---- what tally reads ------------------------------------------------------- */

/*
** The kinds of contract section 2, with where the API serves them. A kind
** whose group is not served (a CRD that is not installed) is absent: one
** note, never an error; discovery is re-checked by the reflectors.
*/
typedef struct {
    int kind;                /* a tly_kind, or -1 (CustomResourceDefinitions: `name`) */
    const char *name;        /* the kind's name when `kind` is -1, else NULL */
    const char *group;       /* "" for core */
    const char *version;     /* the version in use ("v1", "v1beta2", ...), or NULL if absent */
    const char *resource;    /* plural ("pods"), from discovery */
    bool namespaced;
    bool served;
} tly_kube_kind;

typedef struct tly_kube_discovery tly_kube_discovery;

/* Asks the server which of tally's kinds it serves. */
int tly_kube_discover(tly_kube *k, tly_kube_discovery **out, char *err, size_t errlen);
void tly_kube_discovery_free(tly_kube_discovery *d);
uint32_t tly_kube_discovery_count(const tly_kube_discovery *d);
const tly_kube_kind *tly_kube_discovery_at(const tly_kube_discovery *d, uint32_t i);
/*
** Where the server serves CustomResourceDefinitions (apiextensions.k8s.io/v1;
** `served` false when it does not). Contract section 2 reads them to check
** objects of tally's kinds; they are no tly_kind, so they are not among
** tly_kube_discovery_at's.
*/
const tly_kube_kind *tly_kube_discovery_crds(const tly_kube_discovery *d);
/*
** Whether group is the group of one of tally's kinds (not core): the only
** CRDs that say anything about objects tally reads; a cluster may hold
** hundreds of others.
*/
bool tly_kube_tally_group(const tly_kube_discovery *d, const char *group);
/* The server's gitVersion from /version, or NULL. */
const char *tly_kube_discovery_server_version(const tly_kube_discovery *d);

/* "/api/v1/pods", "/apis/scheduling.run.ai/v2/queues" (all namespaces). */
char *tly_kube_kind_path(const tly_kube_kind *kk);
/* The API path of one object ("/api/v1/namespaces/NS/pods/NAME"). */
char *tly_kube_object_path(const tly_kube_kind *kk, const char *ns, const char *name);
/* "pods", "queues.scheduling.run.ai": the name kubectl and RBAC messages use. */
char *tly_kube_kind_resource_name(const tly_kube_kind *kk);

/*
** A paginated LIST of one kind: fn is called once per item with its tree
** (apiVersion and kind filled in, as a LIST leaves them out of core items),
** in the order the server returns them. *rv receives the list's
** resourceVersion (malloc'd) and *date the first page's Date header. A 410
** on an expired continue token restarts the list from the start: fn is
** first called with item NULL, meaning "forget the items so far". page:
** items per page (0: 500). fn returns TLY_OK to go on. TLY_ENOENT when the
** server answers 404 (the kind is no longer served), TLY_EAUTH for 401/403.
*/
typedef int (*tly_kube_item_fn)(void *ctx, const tly_node *item);
int tly_kube_list(tly_kube *k, const tly_kube_kind *kk, uint32_t page, tly_kube_item_fn fn,
                  void *ctx, char **rv, int64_t *date, char *err, size_t errlen);
/*
** tly_kube_list() of the CustomResourceDefinitions where d found them
** (tly_kube_discovery_crds: served), with fn called only for the CRDs of
** tally's groups (tly_kube_tally_group) and for a restart (item NULL).
*/
int tly_kube_list_crds(tly_kube *k, const tly_kube_discovery *d, uint32_t page, tly_kube_item_fn fn,
                       void *ctx, char **rv, int64_t *date, char *err, size_t errlen);

/* ---- watch streams -------------------------------------------------------- */

/*
** Cuts a stream of JSON values (a watch body) into whole values as bytes
** arrive in pieces of any size: only the value being read is buffered. The
** framer tracks strings and nesting, so it needs no newline between values.
*/
typedef struct tly_jframer tly_jframer;
tly_jframer *tly_jframer_create(size_t max_value);
void tly_jframer_destroy(tly_jframer *f);
/*
** Feeds bytes; fn(ctx, value, len) for every complete value. Returns 0, the
** first non-zero fn result, or TLY_ETOOBIG when one value exceeds max_value,
** or TLY_EINVAL for bytes that cannot start a JSON value.
*/
int tly_jframer_feed(tly_jframer *f, const char *data, size_t len,
                     int (*fn)(void *ctx, const char *value, size_t len), void *ctx);
/* Bytes of an unfinished value held. */
size_t tly_jframer_pending(const tly_jframer *f);

#endif
