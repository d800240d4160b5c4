/*
** decode.h: turning one object's node tree into a typed struct.
**
** The loader (load.h) finds each object, fills its tly_meta and calls the
** kind's decoder with a tly_dctx. A decoder reads the fields it needs with
** the tly_dx_* getters below, which do the type checking and report every
** problem as a diagnostic that names the file, line, column and field path
** (spec.containers[0].resources.requests.cpu). Decoders also apply the
** structural rules the API server would (required fields, enums, one-of):
** that is what `tally validate` prints. A decoder never stops at the first
** problem: it records it, keeps what it could read, and goes on.
**
** Field paths are built with push/pop:
**     size_t m = tly_dx_push(dx, "spec");
**     ... getters on the spec map report "spec.<key>" ...
**     tly_dx_pop(dx, m);
*/
#ifndef TALLY_DECODE_H
#define TALLY_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/arena.h"
#include "tally/diag.h"
#include "tally/node.h"
#include "tally/objects.h"
#include "tally/resource.h"

#define TLY_PATH_MAX 512

typedef struct {
    tly_arena *arena;        /* decoded objects live here (the store's arena) */
    tly_names *names;        /* resource-name interner */
    tly_diags *diags;
    const char *file;        /* owned by the store */
    const char *kind;        /* "Pod", for messages */
    const char *objname;     /* "ns/name" or "name", for messages */
    const tly_node *root;    /* the object's root map: where object-level problems point */
    struct tly_textcache *texts; /* shared copies of texts that repeat (textcache.h), or NULL */
    char path[TLY_PATH_MAX];
    size_t plen;
    uint32_t errors;         /* errors recorded for the current object */
} tly_dctx;

/*
** Where one object is decoded to: the arena that will own the typed struct
** and everything it points to, the resource-name interner, the diagnostics
** and what they call the input. The loader passes the store's; the live
** state one arena per object, so that a replaced object can be freed alone.
*/
typedef struct {
    tly_arena *arena;
    tly_names *names;
    tly_diags *diags;
    const char *file;        /* must outlive the object (src.file points to it) */
    /*
    ** A text cache over arena (a store's, whose objects all live as long as
    ** it), or NULL: every text its own copy (the live state frees objects
    ** one by one, so their texts cannot be shared).
    */
    struct tly_textcache *texts;
} tly_decode_env;

/*
** Decodes one object's tree (load.c): metadata and the kind's decoder,
** selected by API group and kind. NULL when the tree is not an object tally
** reads (a note for an unknown kind, an error for a malformed one); *errors
** counts the errors recorded. The object's errors field says whether the
** decoder found problems in it.
*/
tly_meta *tly_decode_object(const tly_decode_env *env, const tly_node *root, int *errors);

/* ---- field paths -------------------------------------------------------- */

/* Appends ".key" (or "key" at the root); returns the mark to pop back to. */
size_t tly_dx_push_key(tly_dctx *dx, tly_key key);
static inline size_t tly_dx_push(tly_dctx *dx, const char *key) { return tly_dx_push_key(dx, tly_key_of(key)); }
/* Appends "[i]". */
size_t tly_dx_push_idx(tly_dctx *dx, uint32_t i);
void tly_dx_pop(tly_dctx *dx, size_t mark);

/* ---- diagnostics -------------------------------------------------------- */

/*
** Records an error / warning at node `at` (its line and column; the object's
** start when at is NULL) for the current field path, extended by `key` when
** key is non-NULL.
*/
void tly_dx_error(tly_dctx *dx, const tly_node *at, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tly_dx_warn(tly_dctx *dx, const tly_node *at, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
** An error that `validate` and `admit` report but that does not make the
** object unreadable: the engine still uses the object and judges it (a Run
** whose request is not an integer is placed as Failed, InvalidResources).
** It does not count in dx->errors, so `simulate`'s exit status (1 only for
** input that could not be read or parsed) is not affected.
*/
void tly_dx_invalid(tly_dctx *dx, const tly_node *at, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- typed getters ------------------------------------------------------ */
/*
** Each looks up `key` in the map `map` (map may be NULL: nothing found).
** Absent or null: returns false, records nothing. Present with the wrong
** type or an invalid value: records an error at the value and returns false.
** Present and good: stores the value and returns true. Strings are copied
** into dx->arena.
**
** Each is an inline wrapper that makes the key's tly_key where it is called
** (a constant for a literal) around the _k function that does the work: a
** pod's decode reads about 90 fields, and hashing each key at run time, as
** a `const char *` handed down can only be, was 6% of a load's instructions.
*/
bool tly_dx_str_k(tly_dctx *dx, const tly_node *map, tly_key key, const char **out);
bool tly_dx_bool_k(tly_dctx *dx, const tly_node *map, tly_key key, bool *out);
bool tly_dx_int32_k(tly_dctx *dx, const tly_node *map, tly_key key, int32_t *out);
bool tly_dx_int64_k(tly_dctx *dx, const tly_node *map, tly_key key, int64_t *out);
bool tly_dx_qty_k(tly_dctx *dx, const tly_node *map, tly_key key, tly_qty *out);
bool tly_dx_time_k(tly_dctx *dx, const tly_node *map, tly_key key, int64_t *out);
const tly_node *tly_dx_map_k(tly_dctx *dx, const tly_node *map, tly_key key);
const tly_node *tly_dx_seq_k(tly_dctx *dx, const tly_node *map, tly_key key);
bool tly_dx_kvs_k(tly_dctx *dx, const tly_node *map, tly_key key, tly_kvs *out);
bool tly_dx_strlist_k(tly_dctx *dx, const tly_node *map, tly_key key, const char ***out, uint32_t *n);
bool tly_dx_rlist_k(tly_dctx *dx, const tly_node *map, tly_key key, tly_rlist *out);
bool tly_dx_conditions_k(tly_dctx *dx, const tly_node *map, tly_key key, tly_conditions *out);
bool tly_dx_req_str_k(tly_dctx *dx, const tly_node *map, tly_key key, const char **out);
bool tly_dx_enum_k(tly_dctx *dx, const tly_node *map, tly_key key, const char *const *allowed,
                   const char **out);

static inline bool tly_dx_str(tly_dctx *dx, const tly_node *map, const char *key, const char **out)
{
    return tly_dx_str_k(dx, map, tly_key_of(key), out);
}
static inline bool tly_dx_bool(tly_dctx *dx, const tly_node *map, const char *key, bool *out)
{
    return tly_dx_bool_k(dx, map, tly_key_of(key), out);
}
static inline bool tly_dx_int32(tly_dctx *dx, const tly_node *map, const char *key, int32_t *out)
{
    return tly_dx_int32_k(dx, map, tly_key_of(key), out);
}
static inline bool tly_dx_int64(tly_dctx *dx, const tly_node *map, const char *key, int64_t *out)
{
    return tly_dx_int64_k(dx, map, tly_key_of(key), out);
}
/* A quantity: a string or a number (int-or-string, as Kubernetes accepts). */
static inline bool tly_dx_qty(tly_dctx *dx, const tly_node *map, const char *key, tly_qty *out)
{
    return tly_dx_qty_k(dx, map, tly_key_of(key), out);
}
/* An RFC 3339 time, to Unix seconds (fractions dropped). */
static inline bool tly_dx_time(tly_dctx *dx, const tly_node *map, const char *key, int64_t *out)
{
    return tly_dx_time_k(dx, map, tly_key_of(key), out);
}
/* A map / a list; wrong type: error, NULL. */
static inline const tly_node *tly_dx_map(tly_dctx *dx, const tly_node *map, const char *key)
{
    return tly_dx_map_k(dx, map, tly_key_of(key));
}
static inline const tly_node *tly_dx_seq(tly_dctx *dx, const tly_node *map, const char *key)
{
    return tly_dx_seq_k(dx, map, tly_key_of(key));
}
/* A map of strings to strings (labels, annotations, nodeSelector). */
static inline bool tly_dx_kvs(tly_dctx *dx, const tly_node *map, const char *key, tly_kvs *out)
{
    return tly_dx_kvs_k(dx, map, tly_key_of(key), out);
}
/* A list of strings. */
static inline bool tly_dx_strlist(tly_dctx *dx, const tly_node *map, const char *key, const char ***out,
                                  uint32_t *n)
{
    return tly_dx_strlist_k(dx, map, tly_key_of(key), out, n);
}
/* A ResourceList: resource name -> quantity, names interned. */
static inline bool tly_dx_rlist(tly_dctx *dx, const tly_node *map, const char *key, tly_rlist *out)
{
    return tly_dx_rlist_k(dx, map, tly_key_of(key), out);
}
/* A list of conditions (type, status, reason, message, the three times). */
static inline bool tly_dx_conditions(tly_dctx *dx, const tly_node *map, const char *key,
                                     tly_conditions *out)
{
    return tly_dx_conditions_k(dx, map, tly_key_of(key), out);
}
/* A label selector (matchLabels, matchExpressions) at `node` itself. */
bool tly_dx_label_selector(tly_dctx *dx, const tly_node *node, tly_selector *out);
/* A node selector term (matchExpressions, matchFields) at `node` itself. */
bool tly_dx_node_selector_term(tly_dctx *dx, const tly_node *node, tly_selector *out);

/*
** A copy of s[0..len) for a decoded object: shared with an equal text
** decoded before when dx has a text cache (textcache.h), else its own.
*/
const char *tly_dx_text(tly_dctx *dx, const char *s, size_t len);
/* tly_dx_str for values that repeat across objects (node names, condition reasons): tly_dx_text's copy. */
bool tly_dx_shared_str_k(tly_dctx *dx, const tly_node *map, tly_key key, const char **out);
static inline bool tly_dx_shared_str(tly_dctx *dx, const tly_node *map, const char *key, const char **out)
{
    return tly_dx_shared_str_k(dx, map, tly_key_of(key), out);
}

/* Required variants: absent or null is an error "required field is missing". */
static inline bool tly_dx_req_str(tly_dctx *dx, const tly_node *map, const char *key, const char **out)
{
    return tly_dx_req_str_k(dx, map, tly_key_of(key), out);
}

/*
** An enum string: present and one of the NULL-terminated `allowed` values,
** else an error that lists them.
*/
static inline bool tly_dx_enum(tly_dctx *dx, const tly_node *map, const char *key, const char *const *allowed,
                               const char **out)
{
    return tly_dx_enum_k(dx, map, tly_key_of(key), allowed, out);
}

/*
** A DRA attribute value at `v` itself (the current path names it): a map
** that sets exactly one of string, int, bool, version (ResourceSlice device
** attributes and AccountedResource match.dra.deviceAttributes).
*/
bool tly_dx_attr_value(tly_dctx *dx, const tly_node *v, const char *name, tly_attr *out);

/* Parses an RFC 3339 time ("2026-11-29T13:29:33Z", "...+02:00", ".123Z"). */
bool tly_parse_time(const char *s, int64_t *out);
/* The inverse for whole seconds: t (Unix seconds) as "2026-11-29T13:29:33Z". */
void tly_format_time(int64_t t, char buf[32]);
/*
** t (Unix seconds) and ms (0-999) as "2026-11-29T13:29:33.511Z", by the civil calendar and no
** gmtime_r: glibc's gmtime_r takes the process-wide tzset lock, and the server stamps every log
** line with this from several threads. Outside years 0-9999, the seconds, as tly_format_time.
*/
void tly_format_time_ms(int64_t t, int ms, char buf[32]);

/* ---- the kinds' decoders (src/decode_<kind>.c) -------------------------- */
/*
** Called with the object's root map and the struct whose meta the loader has
** filled; the rest of the struct is zeroed.
*/
void tly_decode_node(tly_dctx *dx, const tly_node *obj, tly_k8s_node *out);
void tly_decode_pod(tly_dctx *dx, const tly_node *obj, tly_pod *out);
void tly_decode_namespace(tly_dctx *dx, const tly_node *obj, tly_namespace *out);
void tly_decode_priority_class(tly_dctx *dx, const tly_node *obj, tly_priority_class *out);
void tly_decode_podgroup(tly_dctx *dx, const tly_node *obj, tly_podgroup *out);
void tly_decode_config(tly_dctx *dx, const tly_node *obj, tly_config *out);
void tly_decode_queue(tly_dctx *dx, const tly_node *obj, tly_queue *out);
void tly_decode_accres(tly_dctx *dx, const tly_node *obj, tly_accres *out);
void tly_decode_runtime(tly_dctx *dx, const tly_node *obj, tly_runtime *out);
void tly_decode_run(tly_dctx *dx, const tly_node *obj, tly_run *out);
void tly_decode_resource_claim(tly_dctx *dx, const tly_node *obj, tly_resource_claim *out);
void tly_decode_claim_template(tly_dctx *dx, const tly_node *obj, tly_claim_template *out);
void tly_decode_resource_slice(tly_dctx *dx, const tly_node *obj, tly_resource_slice *out);
void tly_decode_device_class(tly_dctx *dx, const tly_node *obj, tly_device_class *out);

#endif
