/*
** load.c: reading Kubernetes objects from YAML and JSON into the store.
**
** Files are mapped into memory (pipes read into an anonymous mapping) and
** checked to be UTF-8. JSON (a *.json name, or text that is JSON from end
** to end under a name that says neither JSON nor YAML, and
** tly_store_load_json()) goes to the native streaming reader (jsonparse.c,
** jsonread.h); YAML to libfyaml's event API. Either way the loader builds
** a small tly_node tree (node.h) of one object at a time:
**
**   - a document that is one object becomes one tree;
**   - a document that is a List (kubectl get -o yaml|json) has its `items`
**     streamed: each item is built, decoded into its typed struct and its
**     tree freed before the next item is read, so memory holds the typed
**     store plus one object's tree, never the whole list.
**
** Objects then go to their kind's decoder (decode_<kind>.c), selected by
** API group and kind. Problems become diagnostics with file:line:col; a YAML
** syntax error ends its document, and parsing resumes at the next `---`
** document marker so the rest of a multi-document file still loads; a JSON
** syntax error ends the input (what came before it stays loaded). The
** input's pages are given back to the kernel as the reader passes them.
**
** YAML aliases are rejected (kubectl never prints them, and resolving them
** is how "billion laughs" inputs blow up memory).
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "jsonread.h"
#include "store_int.h"
#include "strmap.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/crd.h"
#include "tally/kaisnap.h"

/* ---- the kind table ------------------------------------------------------ */

typedef void (*decode_fn)(tly_dctx *dx, const tly_node *obj, void *out);

#define WRAP(fn, T)                                                    \
    static void w_##fn(tly_dctx *dx, const tly_node *obj, void *out)   \
    {                                                                  \
        fn(dx, obj, (T *)out);                                         \
    }
WRAP(tly_decode_node, tly_k8s_node)
WRAP(tly_decode_pod, tly_pod)
WRAP(tly_decode_namespace, tly_namespace)
WRAP(tly_decode_queue, tly_queue)
WRAP(tly_decode_accres, tly_accres)
WRAP(tly_decode_podgroup, tly_podgroup)
WRAP(tly_decode_priority_class, tly_priority_class)
WRAP(tly_decode_resource_claim, tly_resource_claim)
WRAP(tly_decode_claim_template, tly_claim_template)
WRAP(tly_decode_resource_slice, tly_resource_slice)
WRAP(tly_decode_device_class, tly_device_class)
WRAP(tly_decode_runtime, tly_runtime)
WRAP(tly_decode_run, tly_run)
WRAP(tly_decode_config, tly_config)

/* The kinds tally decodes; each one's group and versions are objects.c's. */
static const struct kind_entry {
    int k;
    size_t size;
    decode_fn decode;
} kind_table[] = {
    {TLY_K_NODE, sizeof(tly_k8s_node), w_tly_decode_node},
    {TLY_K_POD, sizeof(tly_pod), w_tly_decode_pod},
    {TLY_K_NAMESPACE, sizeof(tly_namespace), w_tly_decode_namespace},
    {TLY_K_QUEUE, sizeof(tly_queue), w_tly_decode_queue},
    {TLY_K_ACCOUNTED_RESOURCE, sizeof(tly_accres), w_tly_decode_accres},
    {TLY_K_PODGROUP, sizeof(tly_podgroup), w_tly_decode_podgroup},
    {TLY_K_PRIORITY_CLASS, sizeof(tly_priority_class), w_tly_decode_priority_class},
    {TLY_K_RESOURCE_CLAIM, sizeof(tly_resource_claim), w_tly_decode_resource_claim},
    {TLY_K_RESOURCE_CLAIM_TEMPLATE, sizeof(tly_claim_template), w_tly_decode_claim_template},
    {TLY_K_RESOURCE_SLICE, sizeof(tly_resource_slice), w_tly_decode_resource_slice},
    {TLY_K_DEVICE_CLASS, sizeof(tly_device_class), w_tly_decode_device_class},
    {TLY_K_RUNTIME, sizeof(tly_runtime), w_tly_decode_runtime},
    {TLY_K_RUN, sizeof(tly_run), w_tly_decode_run},
    {TLY_K_CONFIG, sizeof(tly_config), w_tly_decode_config},
};

/*
** The entry for kind in api_version's group, whatever the version (NULL for
** a kind tally does not read); *version receives the part after the group.
*/
static const struct kind_entry *find_kind(const char *api_version, const char *kind,
                                          const char **version)
{
    const char *slash = strchr(api_version, '/');
    size_t glen = slash ? (size_t)(slash - api_version) : 0;
    *version = slash ? slash + 1 : api_version;
    for (size_t i = 0; i < sizeof kind_table / sizeof kind_table[0]; i++) {
        const struct kind_entry *e = &kind_table[i];
        const char *group = tly_kind_group(e->k);
        if (strcmp(tly_kind_name(e->k), kind) == 0 && strlen(group) == glen &&
            strncmp(group, api_version, glen) == 0)
            return e;
    }
    return NULL;
}

/* "scheduling.run.ai/v2 or scheduling.run.ai/v1alpha1": the apiVersions read for kind k. */
static const char *versions_read(int k, tly_arena *a)
{
    const char *group = tly_kind_group(k), *out = "";
    const char *const *v = tly_kind_versions(k);
    for (size_t i = 0; v[i]; i++)
        out = tly_arena_printf(a, "%s%s%s%s%s", out, i == 0 ? "" : v[i + 1] ? ", " : " or ", group,
                               *group ? "/" : "", v[i]);
    return out;
}

/* ---- the loader ---------------------------------------------------------- */

typedef struct {
    tly_store *s;
    struct fy_parser *fyp;
    struct fy_diag *fyd;
    const char *file;       /* in the store's arena */
    uint32_t line_off;      /* lines before the current parse window */
    tly_arena *doc;         /* the document's top level */
    tly_arena *obj;         /* one object's tree */
    uint32_t nodes;         /* nodes built for the current object */
    bool skipping;          /* over a limit: consume events, build nothing */
    bool broken;            /* the parser reported an error */
    uint32_t doc_line;      /* window-relative line where the current document began */
    const char *map;        /* the file's mapping (NULL for strings) */
    size_t map_len;
    size_t window;          /* offset of the current parse window in the input */
    size_t released;        /* bytes at the start of the mapping already given back */
    size_t last_pos;        /* window-relative input offset of the newest event */
    int errors;             /* errors recorded by this load */
    /*
    ** JSON input with carriage returns: libfyaml's JSON mode counts a CRLF
    ** as two line breaks, so its line numbers are mapped back to the file's
    ** (a cursor over the text: marks arrive nearly in order).
    */
    const char *crlf_text;  /* the window's text, or NULL when no mapping is needed */
    size_t crlf_len, crlf_pos;
    uint32_t crlf_fy, crlf_real;  /* libfyaml's and the real 0-based line at crlf_pos */
} loader;

/* The file's 0-based line for libfyaml's 0-based line fyline (see crlf_text). */
static uint32_t real_line(loader *L, uint32_t fyline)
{
    if (!L->crlf_text)
        return fyline;
    if (fyline < L->crlf_fy) {
        L->crlf_pos = 0;
        L->crlf_fy = 0;
        L->crlf_real = 0;
    }
    while (L->crlf_fy < fyline && L->crlf_pos < L->crlf_len) {
        char c = L->crlf_text[L->crlf_pos++];
        if (c == '\r' || c == '\n')
            L->crlf_fy++;
        if (c == '\n' || (c == '\r' && (L->crlf_pos >= L->crlf_len || L->crlf_text[L->crlf_pos] != '\n')))
            L->crlf_real++;
    }
    return L->crlf_real;
}

static void load_error(loader *L, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void load_verror(void *ctx, uint32_t line, uint32_t col, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* An error of the input (also the native JSON reader's sink). */
static void load_verror(void *ctx, uint32_t line, uint32_t col, const char *fmt, va_list ap)
{
    loader *L = ctx;
    L->errors++;
    if (!L->s)
        return;  /* tly_parse_value_fy: the caller only needs to know it failed */
    tly_diags_vadd(L->s->diags, TLY_SEV_ERROR, L->file, line, col, NULL, NULL, NULL, fmt, ap);
}

static void load_error(loader *L, uint32_t line, uint32_t col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    load_verror(L, line, col, fmt, ap);
    va_end(ap);
}

static struct fy_event *next_event(loader *L)
{
    if (L->broken)
        return NULL;
    struct fy_event *ev = fy_parser_parse(L->fyp);
    if (!ev) {
        L->broken = true;
        return NULL;
    }
    const struct fy_mark *m = fy_event_start_mark(ev);
    if (m)
        L->last_pos = m->input_pos;
    return ev;
}

static void mark_of(loader *L, struct fy_event *ev, uint32_t *line, uint32_t *col)
{
    const struct fy_mark *m = fy_event_start_mark(ev);
    *line = m ? real_line(L, (uint32_t)m->line) + 1 + L->line_off : 0;
    *col = m ? (uint32_t)m->column + 1 : 0;
}

/*
** libfyaml's mark for a quoted scalar is just inside the quote; people (and
** editors) expect the quote's own column, so step back one.
*/
static void scalar_mark(loader *L, struct fy_event *ev, uint32_t *line, uint32_t *col)
{
    mark_of(L, ev, line, col);
    struct fy_token *tok = ev->type == FYET_SCALAR ? fy_event_get_token(ev) : NULL;
    if (tok && *col > 1) {
        enum fy_scalar_style st = fy_token_scalar_style(tok);
        if (st == FYSS_SINGLE_QUOTED || st == FYSS_DOUBLE_QUOTED)
            (*col)--;
    }
}

static tly_node *new_node(loader *L, tly_arena *a, struct fy_event *ev, int type)
{
    tly_node *n = tly_arena_zalloc(a, sizeof *n);
    n->type = (uint8_t)type;
    scalar_mark(L, ev, &n->line, &n->col);
    L->nodes++;
    return n;
}

/*
** The next event inside a collection: 1 with it in *ev, 0 at the
** collection's end event end_type (freed here), -1 when the parser broke.
*/
static int next_in(loader *L, int end_type, struct fy_event **ev)
{
    *ev = next_event(L);
    if (!*ev)
        return -1;
    if ((*ev)->type != (enum fy_event_type)end_type)
        return 1;
    fy_parser_event_free(L->fyp, *ev);
    return 0;
}

/* Consumes the rest of a collection whose start event was already read. */
static void skip_collection(loader *L)
{
    int depth = 1;
    while (depth > 0) {
        struct fy_event *ev = next_event(L);
        if (!ev)
            return;
        switch (ev->type) {
        case FYET_MAPPING_START:
        case FYET_SEQUENCE_START: depth++; break;
        case FYET_MAPPING_END:
        case FYET_SEQUENCE_END: depth--; break;
        default: break;
        }
        fy_parser_event_free(L->fyp, ev);
    }
}

/*
** Builds the value that starts with event ev (which this function frees).
** Returns NULL only when the parser broke; over a limit it returns a null
** node and has already reported the problem.
*/
static tly_node *build(loader *L, tly_arena *a, struct fy_event *ev, int depth);

/*
** The key of a map member from event kev (freed here), in arena a; NULL
** when it is not a scalar (an error: its value is built at depth and
** dropped). *ok is false when the parser broke.
*/
static const char *read_key(loader *L, tly_arena *a, struct fy_event *kev, int depth,
                            uint32_t *kline, uint32_t *kcol, bool *ok)
{
    scalar_mark(L, kev, kline, kcol);
    *ok = true;
    if (kev->type != FYET_SCALAR) {
        load_error(L, *kline, *kcol, "map keys must be strings");
        *ok = build(L, a, kev, depth) != NULL;
        return NULL;
    }
    struct fy_token *tok = fy_event_get_token(kev);
    size_t klen = 0;
    const char *kt = tok ? fy_token_get_text(tok, &klen) : NULL;
    if (!kt)
        kt = "", klen = 0;
    const char *key = tly_arena_strndup(a, kt, klen);
    if (memchr(kt, '\0', klen))
        load_error(L, *kline, *kcol, "key contains a NUL character");
    fy_parser_event_free(L->fyp, kev);
    return key;
}

/*
** Appends member v with its key to map n (*tail: the end of its list); a
** repeated key is an error. Returns whether the key was checked and new
** (a map whose keys all were is TLY_NF_UNIQUE).
*/
static bool add_member(loader *L, tly_node *n, tly_node ***tail, tly_keyset *ks, tly_node *v,
                       const char *key, uint32_t kline, uint32_t kcol)
{
    size_t klen = strlen(key);
    tly_node_set_key(v, key, klen);
    v->kline = kline;
    v->kcol = kcol;
    bool unique = !L->skipping;
    if (unique) {
        const tly_node *first = tly_keyset_add(ks, key, klen, v);
        if (first) {
            unique = false;
            load_error(L, kline, kcol, "duplicate key \"%s\" (first at line %u)", key,
                       first->kline);
        }
    }
    **tail = v;
    *tail = &v->next;
    n->nkids++;
    return unique;
}

static tly_node *build(loader *L, tly_arena *a, struct fy_event *ev, int depth)
{
    if (L->skipping || depth > TLY_MAX_DEPTH || L->nodes >= TLY_MAX_OBJECT_NODES) {
        uint32_t line, col;
        scalar_mark(L, ev, &line, &col);
        if (!L->skipping) {
            if (depth > TLY_MAX_DEPTH)
                load_error(L, line, col, "nesting is deeper than %d levels", TLY_MAX_DEPTH);
            else
                load_error(L, line, col, "object has more than %u values", TLY_MAX_OBJECT_NODES);
            L->skipping = true;
        }
        int t = ev->type;
        fy_parser_event_free(L->fyp, ev);
        if (t == FYET_MAPPING_START || t == FYET_SEQUENCE_START)
            skip_collection(L);
        tly_node *n = tly_arena_zalloc(a, sizeof *n);
        n->type = TLY_N_NULL;
        n->line = line;  /* decoders' messages about it point here */
        n->col = col;
        return L->broken ? NULL : n;
    }

    switch (ev->type) {
    case FYET_SCALAR: {
        struct fy_token *tok = fy_event_get_token(ev);
        size_t len = 0;
        const char *text = tok ? fy_token_get_text(tok, &len) : "";
        if (!text)
            text = "";
        tly_node *n = new_node(L, a, ev, TLY_N_STRING);
        if (len > TLY_MAX_SCALAR) {
            load_error(L, n->line, n->col, "value is longer than %u bytes", TLY_MAX_SCALAR);
            len = 0;
            n->type = TLY_N_NULL;
        } else if (tok && fy_token_scalar_style(tok) == FYSS_PLAIN) {
            n->type = (uint8_t)tly_plain_scalar_type(text, len, &n->bval);
        } else if (len == 0 && (!tok || (fy_token_scalar_style(tok) != FYSS_SINGLE_QUOTED &&
                                         fy_token_scalar_style(tok) != FYSS_DOUBLE_QUOTED))) {
            /* An empty value (`requests:` with nothing after it, an empty
               document) is null, not the empty string. */
            n->type = TLY_N_NULL;
        }
        n->str = tly_arena_strndup(a, text, len);
        n->len = (uint32_t)len;
        if (memchr(text, '\0', len)) {
            /* Names and keys are C strings; an embedded NUL cannot be one. */
            load_error(L, n->line, n->col, "value contains a NUL character");
            n->len = (uint32_t)strlen(n->str);
        }
        fy_parser_event_free(L->fyp, ev);
        return n;
    }
    case FYET_ALIAS: {
        tly_node *n = new_node(L, a, ev, TLY_N_NULL);
        load_error(L, n->line, n->col, "YAML aliases are not supported; write the value out");
        fy_parser_event_free(L->fyp, ev);
        return n;
    }
    case FYET_MAPPING_START: {
        tly_node *n = new_node(L, a, ev, TLY_N_MAP);
        fy_parser_event_free(L->fyp, ev);
        tly_node **tail = &n->kids;
        tly_keyset ks;
        tly_keyset_init(&ks);
        tly_node *out = n;
        struct fy_event *kev;
        int more;
        bool unique = true;
        while ((more = next_in(L, FYET_MAPPING_END, &kev)) != 0) {
            if (more < 0) {
                out = NULL;
                break;
            }
            uint32_t kline, kcol;
            bool ok;
            const char *key = read_key(L, a, kev, depth + 1, &kline, &kcol, &ok);
            struct fy_event *vev = ok ? next_event(L) : NULL;
            tly_node *v = vev ? build(L, a, vev, depth + 1) : NULL;
            if (!v) {
                out = NULL;
                break;
            }
            if (key)
                unique &= add_member(L, n, &tail, &ks, v, key, kline, kcol);
        }
        tly_keyset_free(&ks);
        if (unique)
            n->flags |= TLY_NF_UNIQUE;
        return out;
    }
    case FYET_SEQUENCE_START: {
        tly_node *n = new_node(L, a, ev, TLY_N_SEQ);
        fy_parser_event_free(L->fyp, ev);
        tly_node **tail = &n->kids;
        struct fy_event *e;
        int more;
        while ((more = next_in(L, FYET_SEQUENCE_END, &e)) != 0) {
            tly_node *v = more > 0 ? build(L, a, e, depth + 1) : NULL;
            if (!v)
                return NULL;
            *tail = v;
            tail = &v->next;
            n->nkids++;
        }
        return n;
    }
    default: {
        tly_node *n = new_node(L, a, ev, TLY_N_NULL);
        fy_parser_event_free(L->fyp, ev);
        return n;
    }
    }
}

/* ---- objects ------------------------------------------------------------- */

static const char *scalar_member(const tly_node *map, const char *key)
{
    const tly_node *n = tly_node_get(map, key);
    return (n && n->type == TLY_N_STRING) ? n->str : NULL;
}

static void decode_meta(tly_dctx *dx, const tly_node *md, tly_meta *m)
{
    size_t mark = tly_dx_push(dx, "metadata");
    tly_dx_str(dx, md, "uid", &m->uid);
    /* Opaque: kept as text whatever its YAML type, never an error (live writes use it). */
    const tly_node *rv = tly_node_get(md, "resourceVersion");
    if (rv && tly_node_is_scalar(rv))
        m->resource_version = tly_arena_strdup(dx->arena, rv->str);
    tly_dx_kvs(dx, md, "labels", &m->labels);
    tly_dx_kvs(dx, md, "annotations", &m->annotations);
    tly_dx_time(dx, md, "creationTimestamp", &m->created);
    tly_dx_time(dx, md, "deletionTimestamp", &m->deleted);
    tly_dx_pop(dx, mark);
}

/* ns + '/' + name in buf, or in the arena when it does not fit. */
static const char *ns_slash_name(char *buf, size_t cap, const char *ns, const char *name, tly_arena *a)
{
    size_t ln = strlen(ns), lm = strlen(name);
    if (ln + lm + 2 > cap)
        return tly_arena_join(a, ns, '/', name);
    memcpy(buf, ns, ln);
    buf[ln] = '/';
    memcpy(buf + ln + 1, name, lm + 1);
    return buf;
}

/*
** Decodes one object's tree into a typed struct allocated in env->arena
** (strings, lists and the struct itself), interning resource names in
** env->names and recording problems in env->diags under env->file. Returns
** NULL when the tree is not an object tally reads (an unknown kind gets a
** note, a malformed object an error); *errors counts the errors recorded.
** The live state decodes each watched object this way into an arena of its
** own; the loader into the store's arena.
*/
tly_meta *tly_decode_object(const tly_decode_env *env, const tly_node *root, int *errors)
{
    tly_arena *arena = env->arena;
    *errors = 0;
    if (root->type == TLY_N_NULL)
        return NULL;
    if (root->type != TLY_N_MAP) {
        (*errors)++;
        tly_diags_add(env->diags, TLY_SEV_ERROR, env->file, root->line, root->col, NULL, NULL, NULL,
                      "expected a Kubernetes object (a map with apiVersion and kind), got %s",
                      tly_ntype_name(root->type));
        return NULL;
    }
    const char *api = scalar_member(root, "apiVersion");
    const char *kind = scalar_member(root, "kind");
    if (!kind || !api) {
        (*errors)++;
        tly_diags_add(env->diags, TLY_SEV_ERROR, env->file, root->line, root->col, NULL, NULL, NULL,
                      "object has no %s", !kind ? "kind" : "apiVersion");
        return NULL;
    }
    const char *version;
    const struct kind_entry *ke = find_kind(api, kind, &version);
    const tly_node *md = tly_node_get(root, "metadata");
    const char *name = md ? scalar_member(md, "name") : NULL;
    if (!ke) {
        tly_diags_add(env->diags, TLY_SEV_NOTE, env->file, root->line, root->col, kind, name, NULL,
                      "kind %s %s is not one tally reads; skipped", api, kind);
        return NULL;
    }
    tly_dctx dx = {
        .arena = arena, .names = env->names, .diags = env->diags, .file = env->file,
        .kind = tly_kind_name(ke->k), .objname = name, .root = root, .texts = env->texts,
    };
    if (!md || md->type != TLY_N_MAP || !name || !*name) {
        tly_dx_error(&dx, md ? md : root, md ? "metadata.name" : "metadata",
                     "required field is missing; the object is skipped");
        (*errors)++;
        return NULL;
    }
    bool namespaced = tly_kind_namespaced(ke->k);
    const char *ns = NULL;
    if (namespaced) {
        ns = scalar_member(md, "namespace");
        if (!ns || !*ns)
            ns = "default";  /* what kubectl apply uses without a context namespace */
    }
    /*
    ** "ns/name" for messages, on the stack: a diagnostic copies it, and most
    ** objects have none, so it costs the store nothing (the arena for a
    ** name too long for the buffer).
    */
    char objbuf[384];
    if (ns)
        dx.objname = ns_slash_name(objbuf, sizeof objbuf, ns, name, arena);
    if (!tly_kind_reads_version(ke->k, version)) {
        /* Another version's fields may mean something else (a Config at an
           unserved version must not rename the scheduler): not applied. */
        tly_dx_error(&dx, tly_node_get(root, "apiVersion"), "apiVersion",
                     "%s is not a version of %s that tally reads (it reads %s); the object is "
                     "skipped",
                     api, tly_kind_name(ke->k), versions_read(ke->k, arena));
        (*errors)++;
        return NULL;
    }
    tly_meta *m = tly_arena_zalloc(arena, ke->size);
    m->kind = (uint8_t)ke->k;
    m->api_version = tly_dx_text(&dx, api, strlen(api));
    m->name = tly_arena_strdup(arena, name);
    m->ns = ns ? tly_dx_text(&dx, ns, strlen(ns)) : NULL;
    m->created = m->deleted = TLY_NO_TIME;
    m->src.file = env->file;
    m->src.line = root->line;
    m->src.col = root->col;
    if (!ns)
        dx.objname = m->name;
    decode_meta(&dx, md, m);
    ke->decode(&dx, root, m);
    m->errors = dx.errors;
    *errors += (int)dx.errors;
    return m;
}

static void handle_object(loader *L, const tly_node *root);

/* One object of a KAI snapshot's rawObjects.<key>: typed by its list, then decoded. */
static void handle_raw_object(loader *L, const char *key, const tly_node *obj)
{
    const char *api_version, *kind;
    tly_node room[3];
    if (tly_kaisnap_kind(key, obj, &api_version, &kind))
        handle_object(L, tly_kaisnap_typed(room, obj, api_version, kind));
}

/*
** A KAI snapshot read as one tree (one that is not a document's top level,
** whose rawObjects both readers stream): schedulerParams, then every
** rawObjects list.
*/
static void handle_snapshot(loader *L, const tly_node *top)
{
    const char *sched, *qlk;
    tly_kaisnap_params(top, &sched, &qlk);
    tly_store_set_snapshot_params(L->s, sched, qlk);
    const tly_node *raw = tly_node_get(top, "rawObjects");
    for (const tly_node *list = raw->kids; list; list = list->next)
        if (list->type == TLY_N_SEQ)
            for (const tly_node *it = list->kids; it; it = it->next)
                handle_raw_object(L, list->key, it);
}

/* Decodes one object's tree and adds it to the store. */
static void handle_object(loader *L, const tly_node *root)
{
    if (tly_kaisnap_is_snapshot(root)) {
        handle_snapshot(L, root);
        return;
    }
    tly_store *s = L->s;
    if (tly_crd_is_crd(root)) {
        if (!s->crds) {
            s->crds = tly_crdset_create();
            s->crds_owned = true;
        }
        tly_crdset_add(s->crds, root, L->file, s->diags);
        s->crds_read++;
        return;
    }
    if (s->crds_keep)
        tly_crdset_keep(s->crds, root, L->file);
    tly_decode_env env = {.arena = s->arena, .names = s->names, .diags = s->diags, .file = L->file,
                          .texts = s->texts};
    int errors = 0;
    tly_meta *m = tly_decode_object(&env, root, &errors);
    L->errors += errors;
    if (m)
        tly_store_add(s, m->kind, m);
}

/* ---- documents and files ------------------------------------------------- */

/* Pages are given back in steps of this many bytes. */
#define RELEASE_STEP (1u << 20)

/*
** Gives the pages of the input that the parser has moved past back to the
** kernel. A private read-only mapping re-reads them from the file if they
** were ever touched again, so this is always safe for files; a pipe's
** anonymous buffer is only given back by the JSON reader, which never
** reads behind itself. It keeps the resident size of a big dump near the
** size of the decoded store instead of store + file.
*/
static void release_consumed(loader *L)
{
    if (!L->map)
        return;
    size_t pos = L->window + L->last_pos;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    pos &= ~(page - 1);
    if (pos > L->map_len || pos < L->released + RELEASE_STEP)
        return;
    madvise((void *)(L->map + L->released), pos - L->released, MADV_DONTNEED);
    L->released = pos;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/*
** The items of a List, after its SEQUENCE_START: each is built in L->obj,
** decoded and dropped. The document's own node count and limit state are
** kept aside meanwhile. raw_key: the items are a KAI snapshot's
** rawObjects.<raw_key> list (typed by it). Returns false when the parser broke.
*/
static bool stream_items_fy(loader *L, const char *raw_key)
{
    uint32_t nodes = L->nodes;
    bool skipping = L->skipping, ok = true;
    struct fy_event *e;
    int more;
    while ((more = next_in(L, FYET_SEQUENCE_END, &e)) != 0) {
        if (more < 0) {
            ok = false;
            break;
        }
        tly_arena_reset(L->obj);
        L->nodes = 0;
        L->skipping = false;
        tly_node *item = build(L, L->obj, e, 2);
        if (!item) {
            ok = false;
            break;
        }
        if (raw_key)
            handle_raw_object(L, raw_key, item);
        else
            handle_object(L, item);
        release_consumed(L);
    }
    tly_arena_reset(L->obj);
    L->nodes = nodes;
    L->skipping = skipping;
    return ok;
}

/*
** A childless list node standing for a streamed list in its map (for the
** duplicate-key check); it is not counted against the object's node limit.
*/
static tly_node *stand_in_list(loader *L, struct fy_event *vev)
{
    tly_node *v = new_node(L, L->doc, vev, TLY_N_SEQ);
    L->nodes--;
    fy_parser_event_free(L->fyp, vev);
    return v;
}

/*
** The members of map n after its MAPPING_START, built at depth (built by
** hand so that lists can be streamed, as the native JSON reader's
** map_members does, so that both paths decode the same objects in the same
** order with the same diagnostics):
**   - a document's top-level map (items non-NULL): an `items` list is
**     streamed (a List's), and so is a `rawObjects` map (a KAI snapshot's);
**     *items gets the key position of the first (line 0: none);
**   - a snapshot's rawObjects map (raw): each member that is a list is
**     streamed, its objects typed by the member's key.
** Every other value is built as usual. A streamed list stays in the map as
** a childless list (for the duplicate-key check). Returns false when the
** parser broke.
*/
static bool stream_members(loader *L, tly_node *n, int depth, bool raw, uint32_t items[2])
{
    tly_node **tail = &n->kids;
    tly_keyset ks;
    tly_keyset_init(&ks);
    struct fy_event *kev;
    int more;
    bool unique = true;
    while ((more = next_in(L, FYET_MAPPING_END, &kev)) > 0) {
        uint32_t kline, kcol;
        bool ok;
        const char *key = read_key(L, L->doc, kev, depth, &kline, &kcol, &ok);
        struct fy_event *vev = ok ? next_event(L) : NULL;
        if (!vev) {
            more = -1;
            break;
        }
        int t = vev->type;
        bool list = key && t == FYET_SEQUENCE_START && (raw || (items && !strcmp(key, "items")));
        bool snapshot = key && t == FYET_MAPPING_START && items && !strcmp(key, "rawObjects");
        tly_node *v = list ? stand_in_list(L, vev) : snapshot ? new_node(L, L->doc, vev, TLY_N_MAP) : NULL;
        if (snapshot)
            fy_parser_event_free(L->fyp, vev);
        if ((list && !stream_items_fy(L, raw ? key : NULL)) ||
            (snapshot && !stream_members(L, v, depth + 1, true, NULL)) ||
            (!v && !(v = build(L, L->doc, vev, depth)))) {
            more = -1;
            break;
        }
        if ((list || snapshot) && items && !items[0])
            items[0] = kline, items[1] = kcol;
        if (key && !add_member(L, n, &tail, &ks, v, key, kline, kcol))
            unique = false;
    }
    tly_keyset_free(&ks);
    if (unique)
        n->flags |= TLY_NF_UNIQUE;
    return more == 0;
}

static void list_members(loader *L, const tly_node *top);

/*
** Reads one document whose DOCUMENT_START was consumed. Returns false when
** the parser broke.
*/
static bool load_document(loader *L)
{
    struct fy_event *ev = next_event(L);
    if (!ev)
        return false;
    if (ev->type == FYET_DOCUMENT_END) {
        fy_parser_event_free(L->fyp, ev);
        return true;
    }
    tly_arena_reset(L->doc);
    L->nodes = 0;
    L->skipping = false;
    if (ev->type != FYET_MAPPING_START) {
        tly_node *n = build(L, L->doc, ev, 1);
        if (!n)
            return false;
        handle_object(L, n);
    } else {
        tly_node *top = new_node(L, L->doc, ev, TLY_N_MAP);
        fy_parser_event_free(L->fyp, ev);
        uint32_t items[2] = {0, 0};
        if (!stream_members(L, top, 2, false, items))
            return false;
        const char *kind = scalar_member(top, "kind");
        if (!items[0])
            handle_object(L, top);
        else if (kind && !ends_with(kind, "List"))
            load_error(L, items[0], items[1],
                       "a %s with an `items` list: only List kinds hold items", kind);
        else
            list_members(L, top);
    }
    ev = next_event(L);
    if (!ev)
        return false;
    fy_parser_event_free(L->fyp, ev);  /* DOCUMENT_END */
    return true;
}

static void diag_sink(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    (void)diag, (void)user, (void)buf, (void)len;
}

/* Records libfyaml's collected errors; returns the line of the first (1-based, window-relative). */
static uint32_t report_parse_errors(loader *L)
{
    uint32_t first = 0;
    void *iter = NULL;
    struct fy_diag_error *err;
    bool any = false;
    while ((err = fy_diag_errors_iterate(L->fyd, &iter)) != NULL) {
        if (err->type < FYET_ERROR)
            continue;
        /* libfyaml reports errors 1-based (its event marks are 0-based). */
        uint32_t line = real_line(L, err->line > 1 ? (uint32_t)err->line - 1 : 0) + 1;
        if (!any)
            first = line;
        if (!any)
            load_error(L, line + L->line_off, err->column > 0 ? (uint32_t)err->column : 1,
                       "syntax error: %s", err->msg ? err->msg : "malformed input");
        any = true;
    }
    if (!any)
        load_error(L, L->line_off + 1, 1, "syntax error: the input could not be parsed");
    return first;
}

/*
** Parses buf[0..len) as a stream of documents. On a syntax error in YAML it
** reports it and resumes after the next line that starts a document ("---").
*/
static void load_buffer(loader *L, const char *buf, size_t len, bool json)
{
    size_t off = 0;
    L->line_off = 0;
    while (off <= len) {
        struct fy_diag_cfg dcfg;
        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = diag_sink;
        dcfg.level = FYET_ERROR;
        L->fyd = fy_diag_create(&dcfg);
        if (!L->fyd)
            tly_oom();
        fy_diag_set_collect_errors(L->fyd, true);
        struct fy_parse_cfg cfg = {
            .flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG |
                     (json ? FYPCF_JSON_FORCE : FYPCF_JSON_NONE),
            .diag = L->fyd,
        };
        L->fyp = fy_parser_create(&cfg);
        if (!L->fyp)
            tly_oom();
        L->broken = false;
        L->doc_line = 0;
        fy_parser_set_string(L->fyp, buf + off, len - off);
        L->window = off;
        L->crlf_text = json && memchr(buf + off, '\r', len - off) ? buf + off : NULL;
        L->crlf_len = len - off;
        L->crlf_pos = 0;
        L->crlf_fy = 0;
        L->crlf_real = 0;
        L->last_pos = 0;
        for (;;) {
            struct fy_event *ev = next_event(L);
            if (!ev)
                break;
            int t = ev->type;
            if (t == FYET_DOCUMENT_START) {
                const struct fy_mark *m = fy_event_start_mark(ev);
                L->doc_line = m ? (uint32_t)m->line + 1 : 1;
            }
            fy_parser_event_free(L->fyp, ev);
            if (t == FYET_STREAM_END)
                break;
            if (t == FYET_DOCUMENT_START && !load_document(L))
                break;
        }
        size_t resume = len + 1;
        if (L->broken && fy_parser_get_stream_error(L->fyp)) {
            uint32_t eline = report_parse_errors(L);
            /* Resume at the first document marker after the start of the
               broken document (the error itself may be reported past a
               "---" that sat inside an unclosed flow collection). */
            uint32_t from = L->doc_line ? L->doc_line : eline;
            if (!json && from > 0) {
                size_t p = off;
                for (uint32_t l = 1; l < from && p < len; p++)
                    if (buf[p] == '\n')
                        l++;
                uint32_t skipped = from - 1;
                while (p < len) {
                    const char *nl = memchr(buf + p, '\n', len - p);
                    if (!nl)
                        break;
                    p = (size_t)(nl - buf) + 1;
                    skipped++;
                    if (len - p >= 3 && memcmp(buf + p, "---", 3) == 0 &&
                        (len - p == 3 || buf[p + 3] == '\n' || buf[p + 3] == ' ' ||
                         buf[p + 3] == '\r')) {
                        resume = p;
                        break;
                    }
                }
                if (resume <= len)
                    L->line_off += skipped;
            }
        }
        fy_parser_destroy(L->fyp);
        fy_diag_destroy(L->fyd);
        L->fyp = NULL;
        L->fyd = NULL;
        if (resume > len)
            break;
        off = resume;
    }
}

/*
** Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629:
** no overlong forms, no surrogates, nothing above U+10FFFF), or len.
** Kubernetes objects are UTF-8, and Debian's libfyaml 0.7.12 can loop forever
** or read out of bounds on some malformed sequences (a `%` directive line
** with a stray byte hangs it; found by fuzz/fuzz_load.c), so input is
** checked before the parser sees it.
*/
static size_t utf8_invalid_at(const unsigned char *p, size_t len)
{
    size_t i = 0;
    while (i < len) {
        /*
        ** ASCII 64 bytes at a time with SSE2 (the x86-64 baseline), then
        ** eight: most of any Kubernetes dump. Eight at a time was 3% of a
        ** whole load's instructions.
        */
#if defined(__SSE2__)
        while (len - i >= 64) {
            const __m128i *v = (const __m128i *)(const void *)(p + i);
            __m128i any = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(v), _mm_loadu_si128(v + 1)),
                                       _mm_or_si128(_mm_loadu_si128(v + 2), _mm_loadu_si128(v + 3)));
            if (_mm_movemask_epi8(any))
                break;
            i += 64;
        }
#endif
        while (len - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ull)
                break;
            i += 8;
        }
        if (i >= len)
            break;
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return i;
        }
        if (len - i <= n)
            return i;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return i;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += n + 1;
    }
    return len;
}

/* An error at the first byte that is not UTF-8, with its line and column. */
static void utf8_error(tly_store *s, const char *name, const char *buf, size_t bad)
{
    uint32_t line = 1, col = 1;
    for (size_t i = 0; i < bad; i++) {
        if (buf[i] == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)buf[i] & 0xc0) != 0x80) {
            col++;
        }
    }
    tly_diags_add(s->diags, TLY_SEV_ERROR, name, line, col, NULL, NULL, NULL,
                  "input is not valid UTF-8 (byte 0x%02x at offset %zu); the file is not read",
                  (unsigned char)buf[bad], bad);
}

/*
** Whether buf[0..len) is UTF-8 (else an error). A mapped file (release) is
** checked a step at a time and the checked pages are given back, so the
** check does not make the whole file resident before the parse.
*/
static bool utf8_ok(tly_store *s, const char *name, const char *buf, size_t len, bool release)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), off = 0, released = 0;
    while (off < len) {
        size_t n = len - off < RELEASE_STEP ? len - off : RELEASE_STEP;
        size_t bad = off + utf8_invalid_at((const unsigned char *)buf + off, n);
        if (bad < off + n && off + n < len && bad + 4 > off + n) {
            off = bad;  /* a character cut by the step's end: check it with the next step */
            continue;
        }
        if (bad < off + n) {
            utf8_error(s, name, buf, bad);
            return false;
        }
        off += n;
        size_t upto = off & ~(page - 1);
        if (release && upto > released) {
            madvise((void *)(buf + released), upto - released, MADV_DONTNEED);
            released = upto;
        }
    }
    return true;
}

/* How a buffer is read: chosen from its name and text, or forced. */
enum { READ_AUTO, READ_FY_YAML, READ_FY_JSON, READ_NATIVE };
/* Where a buffer is: the caller's (kept), a file mapping, an anonymous mapping (a pipe's). */
enum { BUF_CALLER, BUF_FILE, BUF_ANON };

/*
** Whether text named name is read by the native JSON reader: a *.json
** name; or a name that says neither JSON nor YAML (a pipe, /dev/stdin, a
** file named on the command line) whose text starts with '{' or '[' and is
** JSON from end to end. YAML that starts with '{' ({a: 1}, or a flow map
** followed by more YAML) fails the check and goes to libfyaml as before.
*/
static bool read_as_json(const char *name, const char *buf, size_t len)
{
    if (ends_with(name, ".json"))
        return true;
    if (ends_with(name, ".yaml") || ends_with(name, ".yml"))
        return false;
    size_t i = len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
        i++;
    return i < len && (buf[i] == '{' || buf[i] == '[') && tly_json_valid(buf, len);
}

/* One object from the native JSON reader. */
static void json_object(void *ctx, const tly_node *tree, size_t end)
{
    loader *L = ctx;
    handle_object(L, tree);
    L->last_pos = end;
    release_consumed(L);
}

/*
** A List's own members: a `now` (what `tally snapshot` writes: the capture
** time) is the input's clock, which commands use unless --now is given.
*/
static void list_members(loader *L, const tly_node *top)
{
    if (tly_kaisnap_is_snapshot(top)) {
        /* A snapshot.json whose rawObjects the reader streamed: its schedulerParams. */
        const char *sched, *qlk;
        tly_kaisnap_params(top, &sched, &qlk);
        tly_store_set_snapshot_params(L->s, sched, qlk);
        return;
    }
    const tly_node *now = tly_node_get(top, "now");
    if (!now)
        return;
    int64_t t;
    if (now->type != TLY_N_STRING || !tly_parse_time(now->str, &t))
        load_error(L, now->line, now->col,
                   "now: expected an RFC 3339 time such as 2026-11-29T13:00:00Z (the capture time "
                   "of a snapshot)");
    else
        tly_store_set_clock(L->s, t);
}

static void json_list(void *ctx, const tly_node *top) { list_members(ctx, top); }

/* One object of rawObjects.<key> from the native reader, streamed. */
static void json_raw_object(void *ctx, const char *key, const tly_node *tree, size_t end)
{
    loader *L = ctx;
    handle_raw_object(L, key, tree);
    L->last_pos = end;
    release_consumed(L);
}

/*
** A KAI snapshot ZIP: its snapshot.json, inflated into memory, is read as a
** JSON file named <name>/snapshot.json.
*/
static int load_zip(tly_store *s, const char *name, const char *buf, size_t len)
{
    char err[256];
    size_t n = 0;
    char *json = tly_kaisnap_unzip(buf, len, &n, err, sizeof err);
    if (!json) {
        tly_diags_add(s->diags, TLY_SEV_ERROR, name, 0, 0, NULL, NULL, NULL, "%s", err);
        return 1;
    }
    char *inner = tly_arena_printf(s->arena, "%s/%s", name, TLY_KAISNAP_FILE);
    int errors = tly_store_load_json(s, inner, json, n);
    free(json);
    return errors;
}

static int load_named_buffer(tly_store *s, const char *name, const char *buf, size_t len,
                             int where, int how)
{
    if (how == READ_AUTO && tly_kaisnap_is_zip(buf, len))
        return load_zip(s, name, buf, len);
    if (!utf8_ok(s, name, buf, len, where == BUF_FILE))
        return 1;
    if (how == READ_AUTO)
        how = read_as_json(name, buf, len) ? READ_NATIVE : READ_FY_YAML;
    bool release = where == BUF_FILE || (where == BUF_ANON && how == READ_NATIVE);
    loader L = {
        .s = s,
        .map = release ? buf : NULL,
        .map_len = len,
        .file = tly_arena_strdup(s->arena, name),
        .doc = tly_arena_create(16 * 1024),
        .obj = tly_arena_create(64 * 1024),
    };
    if (how == READ_NATIVE) {
        tly_jsink sink = {.ctx = &L, .object = json_object, .list = json_list, .raw_object = json_raw_object,
                          .error = load_verror};
        tly_json_stream(buf, len, L.doc, L.obj, &sink);
    } else {
        load_buffer(&L, buf, len, how == READ_FY_JSON);
    }
    tly_arena_destroy(L.doc);
    tly_arena_destroy(L.obj);
    return L.errors;
}

int tly_store_load_object(tly_store *s, const char *name, const tly_node *root)
{
    loader L = {.s = s, .file = tly_arena_strdup(s->arena, name)};
    handle_object(&L, root);
    return L.errors;
}

int tly_store_load_string(tly_store *s, const char *name, const char *text, size_t len)
{
    return load_named_buffer(s, name, text, len, BUF_CALLER, READ_AUTO);
}

int tly_store_load_json(tly_store *s, const char *name, const char *buf, size_t len)
{
    return load_named_buffer(s, name, buf, len, BUF_CALLER, READ_NATIVE);
}

int tly_store_load_fy(tly_store *s, const char *name, const char *text, size_t len, bool json)
{
    return load_named_buffer(s, name, text, len, BUF_CALLER, json ? READ_FY_JSON : READ_FY_YAML);
}

static int load_file(tly_store *s, const char *path, int how);

int tly_store_load_file_fy(tly_store *s, const char *path, bool json)
{
    return load_file(s, path, json ? READ_FY_JSON : READ_FY_YAML);
}

/*
** A pipe, /dev/stdin or a process substitution (`<(kubectl get pods -o
** yaml)`): no size to map, so read it to the end first, into an anonymous
** mapping that the JSON reader can give back as it goes. Closes fd.
*/
static int load_stream(tly_store *s, const char *path, int fd, int how)
{
    size_t len = 0, cap = RELEASE_STEP;
    char *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        tly_oom();
    int errors = 1;
    for (;;) {
        if (len == cap) {
            void *bigger = mremap(buf, cap, cap * 2, MREMAP_MAYMOVE);
            if (bigger == MAP_FAILED)
                tly_oom();
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            tly_diags_add(s->diags, TLY_SEV_ERROR, path, 0, 0, NULL, NULL, NULL,
                          "cannot read: %s", strerror(errno));
            break;
        }
        if (got == 0) {
            errors = load_named_buffer(s, path, buf, len, BUF_ANON, how);
            break;
        }
        len += (size_t)got;
    }
    close(fd);
    munmap(buf, cap);
    return errors;
}

/* Loads one file (a pipe too), read as how says (READ_AUTO: by its name and text). */
static int load_file(tly_store *s, const char *path, int how)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        tly_diags_add(s->diags, TLY_SEV_ERROR, path, 0, 0, NULL, NULL, NULL,
                      "cannot read: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (!S_ISREG(st.st_mode))
        return load_stream(s, path, fd, how);
    if (st.st_size == 0) {
        close(fd);
        return 0;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        tly_diags_add(s->diags, TLY_SEV_ERROR, path, 0, 0, NULL, NULL, NULL,
                      "cannot read: %s", strerror(errno));
        return 1;
    }
    madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
    int errors = load_named_buffer(s, path, map, (size_t)st.st_size, BUF_FILE, how);
    munmap(map, (size_t)st.st_size);
    return errors;
}

static bool wanted_file(const char *name)
{
    return ends_with(name, ".yaml") || ends_with(name, ".yml") || ends_with(name, ".json");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Collects the input files below dir (recursively) into *files. */
static void collect(tly_store *s, const char *dir, char ***files, size_t *n, size_t *cap, int depth)
{
    DIR *d = opendir(dir);
    if (!d) {
        tly_diags_add(s->diags, TLY_SEV_ERROR, dir, 0, 0, NULL, NULL, NULL,
                      "cannot read directory: %s", strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *path = tly_xmalloc(len);
        snprintf(path, len, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < 32)
                collect(s, path, files, n, cap, depth + 1);
            free(path);
        } else if (wanted_file(e->d_name)) {
            if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 16;
                *files = tly_xrealloc(*files, *cap * sizeof **files);
            }
            (*files)[(*n)++] = path;
        } else {
            free(path);
        }
    }
    closedir(d);
}

/* Loads the files below directory path in byte order; *nfiles receives how many there were. */
static int load_dir(tly_store *s, const char *path, size_t *nfiles)
{
    char **files = NULL;
    size_t n = 0, cap = 0;
    collect(s, path, &files, &n, &cap, 0);
    if (n)  /* an empty directory has no array: qsort(NULL, 0) is undefined */
        qsort(files, n, sizeof *files, cmp_str);
    int errors = 0;
    for (size_t i = 0; i < n; i++) {
        errors += load_file(s, files[i], READ_AUTO);
        free(files[i]);
    }
    free(files);
    *nfiles = n;
    return errors;
}

/* Every object the store holds, of all kinds. */
static uint64_t objects_held(const tly_store *s)
{
    uint64_t n = s->crds_read;
    for (int k = 0; k < TLY_K_COUNT; k++)
        n += tly_store_count(s, k);
    return n;
}

/*
** A note when a path gave nothing at all: no object, and no diagnostic (a
** skipped kind, a replaced duplicate or an error says something already).
** An empty directory, an empty file or a pipe that delivered nothing is no
** error (contract section 2), but it is almost never what was meant.
*/
static void note_if_nothing(tly_store *s, const char *path, const struct stat *st, size_t nfiles)
{
    const char *why = S_ISDIR(st->st_mode) ? nfiles == 0 ? "the directory holds no *.yaml, *.yml or *.json file"
                                                       : "its files hold no objects"
                      : !S_ISREG(st->st_mode) ? "the input was empty"
                      : st->st_size == 0      ? "the file is empty"
                                              : "it holds only whitespace, comments or empty documents";
    tly_diags_add(s->diags, TLY_SEV_NOTE, path, 0, 0, NULL, NULL, NULL, "no objects were read: %s", why);
}

int tly_store_load_path(tly_store *s, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            tly_diags_add(s->diags, TLY_SEV_ERROR, path, 0, 0, NULL, NULL, NULL,
                          "%s does not exist (no file or directory has that name)", path);
        else
            tly_diags_add(s->diags, TLY_SEV_ERROR, path, 0, 0, NULL, NULL, NULL, "cannot read: %s",
                          strerror(errno));
        return 1;
    }
    uint64_t held = objects_held(s);
    size_t said = tly_diags_count(s->diags), nfiles = 0;
    int errors = S_ISDIR(st.st_mode) ? load_dir(s, path, &nfiles) : load_file(s, path, READ_AUTO);
    if (objects_held(s) == held && tly_diags_count(s->diags) == said)
        note_if_nothing(s, path, &st, nfiles);
    return errors;
}

size_t tly_utf8_invalid_at(const char *p, size_t len)
{
    return utf8_invalid_at((const unsigned char *)p, len);
}

/*
** tly_parse_value() through libfyaml, as the loader reads files: the
** reference that tests/test_jsonparse.c compares the native reader with.
*/
tly_node *tly_parse_value_fy(const char *text, size_t len, tly_arena *a)
{
    if (utf8_invalid_at((const unsigned char *)text, len) < len)
        return NULL;
    loader L = {.file = "<value>"};
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = diag_sink;
    dcfg.level = FYET_ERROR;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (!diag)
        tly_oom();
    fy_diag_set_collect_errors(diag, true);
    /* JSON mode: these values (AdmissionReviews, the kruntimes.io/capacities
       annotation) are JSON, and libfyaml 0.7.12 leaks a 2 KiB buffer on an
       unterminated single-quoted YAML scalar in flow context (found by
       fuzz/fuzz_admit.c), which JSON mode rejects before that path. */
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_JSON_FORCE,
                               .diag = diag};
    L.fyp = fy_parser_create(&cfg);
    if (!L.fyp)
        tly_oom();
    fy_parser_set_string(L.fyp, text, len);
    tly_node *root = NULL;
    int docs = 0;
    for (;;) {
        struct fy_event *ev = next_event(&L);
        if (!ev)
            break;
        int t = ev->type;
        fy_parser_event_free(L.fyp, ev);
        if (t == FYET_STREAM_END)
            break;
        if (t != FYET_DOCUMENT_START)
            continue;
        struct fy_event *v = next_event(&L);
        if (!v)
            break;
        if (v->type == FYET_DOCUMENT_END) {
            fy_parser_event_free(L.fyp, v);
            continue;
        }
        root = build(&L, a, v, 1);
        docs++;
        struct fy_event *end = next_event(&L);
        if (!end)
            break;
        fy_parser_event_free(L.fyp, end);
    }
    bool ok = !L.broken && L.errors == 0 && docs == 1;
    fy_parser_destroy(L.fyp);
    fy_diag_destroy(diag);
    return ok ? root : NULL;
}
