/*
** kaisnap.c: KAI Scheduler snapshots (kaisnap.h): the ZIP, the types of
** rawObjects entries, and schedulerParams.
**
** The ZIP is opened from memory with libzip (the mapped file or the bytes of
** a pipe), and the one entry is inflated into a buffer of the size its
** header states, read to the end and checked against it: a ZIP that lies
** about its sizes is refused, never trusted. A limit on that size keeps a
** hostile archive from asking for unbounded memory.
*/
#include "tally/kaisnap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zip.h>

#include "tally/error.h"

bool tly_kaisnap_is_zip(const char *buf, size_t len)
{
    return len >= 4 && memcmp(buf, "PK\x03\x04", 4) == 0;
}

/* Reads entry `idx` of z, which says it has `size` bytes, into a new buffer. */
static char *read_entry(zip_t *z, zip_uint64_t idx, zip_uint64_t size, char *err, size_t errlen)
{
    zip_file_t *f = zip_fopen_index(z, idx, 0);
    if (!f) {
        snprintf(err, errlen, "cannot open %s in the ZIP: %s", TLY_KAISNAP_FILE, zip_strerror(z));
        return NULL;
    }
    char *out = tly_xmalloc((size_t)size + 1);
    zip_uint64_t got = 0;
    while (got < size) {
        zip_int64_t n = zip_fread(f, out + got, size - got);
        if (n <= 0)
            break;
        got += (zip_uint64_t)n;
    }
    char probe;
    bool longer = got == size && zip_fread(f, &probe, 1) > 0;
    if (got != size || longer) {
        snprintf(err, errlen, "%s in the ZIP is corrupt or not the size its header says (%s)",
                 TLY_KAISNAP_FILE, zip_file_strerror(f));
        zip_fclose(f);
        free(out);
        return NULL;
    }
    zip_fclose(f);
    out[size] = 0;
    return out;
}

char *tly_kaisnap_unzip(const char *buf, size_t len, size_t *out_len, char *err, size_t errlen)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(buf, len, 0, &ze);
    zip_t *z = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze) : NULL;
    if (!z) {
        snprintf(err, errlen, "not a readable ZIP archive: %s", zip_error_strerror(&ze));
        if (src)
            zip_source_free(src);
        zip_error_fini(&ze);
        return NULL;
    }
    zip_error_fini(&ze);
    char *out = NULL;
    zip_stat_t st;
    zip_int64_t idx = zip_name_locate(z, TLY_KAISNAP_FILE, 0);
    if (idx < 0) {
        snprintf(err, errlen, "the ZIP holds no %s (a KAI snapshot from /get-snapshot has it)",
                 TLY_KAISNAP_FILE);
    } else if (zip_stat_index(z, (zip_uint64_t)idx, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
        snprintf(err, errlen, "cannot read the size of %s in the ZIP: %s", TLY_KAISNAP_FILE,
                 zip_strerror(z));
    } else if (st.size > TLY_KAISNAP_MAX) {
        snprintf(err, errlen, "%s in the ZIP says it is %llu bytes, more than the %zu tally reads",
                 TLY_KAISNAP_FILE, (unsigned long long)st.size, TLY_KAISNAP_MAX);
    } else if ((out = read_entry(z, (zip_uint64_t)idx, st.size, err, errlen))) {
        *out_len = (size_t)st.size;
    }
    zip_discard(z);
    return out;
}

/* ---- rawObjects ---------------------------------------------------------- */

static const struct {
    const char *key, *api_version, *kind;
} raw_kinds[] = {
    {"pods", "v1", "Pod"},
    {"nodes", "v1", "Node"},
    {"queues", "scheduling.run.ai/v2", "Queue"},
    {"podGroups", "scheduling.run.ai/v2alpha2", "PodGroup"},
    {"priorityClasses", "scheduling.k8s.io/v1", "PriorityClass"},
    {"resourceClaims", NULL, "ResourceClaim"},
    {"resourceSlices", NULL, "ResourceSlice"},
    {"deviceClasses", "resource.k8s.io/v1", "DeviceClass"},
};

/* Whether some element of the list at map.key has member `member`. */
static bool any_has(const tly_node *map, const char *key, const char *member)
{
    const tly_node *seq = tly_node_member(map, key);
    if (!seq || seq->type != TLY_N_SEQ)
        return false;
    for (const tly_node *it = seq->kids; it; it = it->next)
        if (tly_node_member(it, member))
            return true;
    return false;
}

/* v1beta1's flat requests (deviceClassName on the request) or devices (`basic`). */
static bool is_v1beta1(const char *kind, const tly_node *obj)
{
    const tly_node *spec = tly_node_member(obj, "spec");
    if (!strcmp(kind, "ResourceClaim"))
        return any_has(tly_node_member(spec, "devices"), "requests", "deviceClassName");
    return any_has(spec, "devices", "basic");
}

bool tly_kaisnap_kind(const char *key, const tly_node *obj, const char **api_version, const char **kind)
{
    for (size_t i = 0; i < sizeof raw_kinds / sizeof raw_kinds[0]; i++) {
        if (strcmp(raw_kinds[i].key, key) != 0)
            continue;
        *kind = raw_kinds[i].kind;
        *api_version = raw_kinds[i].api_version;
        if (!*api_version)
            *api_version = is_v1beta1(*kind, obj) ? "resource.k8s.io/v1beta1" : "resource.k8s.io/v1";
        return true;
    }
    return false;
}

static void string_member(tly_node *n, const char *key, const char *value, const tly_node *at)
{
    memset(n, 0, sizeof *n);
    n->type = TLY_N_STRING;
    tly_node_set_key(n, key, strlen(key));
    n->str = value;
    n->len = (uint32_t)strlen(value);
    n->line = n->kline = at->line;
    n->col = n->kcol = at->col;
}

const tly_node *tly_kaisnap_typed(tly_node room[3], const tly_node *obj, const char *api_version,
                                  const char *kind)
{
    if (obj->type != TLY_N_MAP || tly_node_member(obj, "kind") || tly_node_member(obj, "apiVersion"))
        return obj;
    room[0] = *obj;
    string_member(&room[1], "apiVersion", api_version, obj);
    string_member(&room[2], "kind", kind, obj);
    room[1].next = &room[2];
    room[2].next = obj->kids;
    room[0].kids = &room[1];
    room[0].nkids = obj->nkids + 2;
    return &room[0];
}

bool tly_kaisnap_is_snapshot(const tly_node *top)
{
    const tly_node *raw = tly_node_member(top, "rawObjects");
    return raw && raw->type == TLY_N_MAP && !tly_node_member(top, "kind") &&
           !tly_node_member(top, "apiVersion");
}

/* A string member of map whose key equals key without regard to case. */
static const char *member_nocase(const tly_node *map, const char *key)
{
    if (!map || map->type != TLY_N_MAP)
        return NULL;
    for (const tly_node *m = map->kids; m; m = m->next)
        if (m->key && !strcasecmp(m->key, key) && m->type == TLY_N_STRING && m->len)
            return m->str;
    return NULL;
}

void tly_kaisnap_params(const tly_node *top, const char **scheduler_name, const char **queue_label_key)
{
    const tly_node *p = tly_node_member(top, "schedulerParams");
    *scheduler_name = member_nocase(p, "schedulerName");
    *queue_label_key = member_nocase(p, "queueLabelKey");
}
