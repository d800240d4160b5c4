/*
** kubeconfig.c: where the API client connects and as whom (kube.h).
**
** Two sources, as client-go has them:
**
**  - A kubeconfig. With --kubeconfig only that file is read. Else every
**    file of $KUBECONFIG (colon-separated; files that do not exist are
**    skipped) is merged the way kubectl merges them: for clusters, users
**    and contexts the first file that defines a name wins, and so does the
**    first current-context. Else ~/.kube/config. The context is --context
**    or the current-context; it names a cluster (server, certificate
**    authority as a file or base64 data, insecure-skip-tls-verify,
**    tls-server-name, proxy-url) and a user (client certificate and key as
**    files or data, token, tokenFile, username/password, or an exec plugin).
**    Relative paths are relative to the directory of the file that holds
**    the entry.
**  - --in-cluster: KUBERNETES_SERVICE_HOST and _PORT, and the service
**    account's token, ca.crt and namespace under
**    /var/run/secrets/kubernetes.io/serviceaccount (TALLY_SERVICEACCOUNT_DIR
**    moves that directory, for tests). The token is read again when it
**    rotates (cred.c).
**
** Everything is checked here, before any request: a missing field, a file
** that cannot be read, base64 that does not decode, a certificate without
** its key, an unsupported auth-provider or exec apiVersion. Each error
** names the file and the field path (users[name=admin].user.client-key) and
** says what to do.
*/
#include <errno.h>
#include <libfyaml.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube_int.h"
#include "tally/arena.h"
#include "tally/error.h"

#define MAX_KUBECONFIG (16u << 20)
#define MAX_PEM (1u << 20)
#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- small helpers ------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return TLY_EINVAL;
}

char *tly_read_file(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = tly_xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                fclose(f);
                free(buf);
                errno = EFBIG;
                return NULL;
            }
            cap *= 2;
            buf = tly_xrealloc(buf, cap + 1);
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

char *tly_base64_decode(const char *in, size_t len, size_t *outlen)
{
    char *out = tly_xmalloc(len / 4 * 3 + 4);
    size_t n = 0, pad = 0;
    uint32_t acc = 0;
    int bits = 0, chars = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            chars++;
            continue;
        }
        int v = b64val(c);
        if (v < 0 || pad) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        chars++;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (pad > 2 || (chars % 4 != 0 && pad) || chars % 4 == 1) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    *outlen = n;
    return out;
}

/* ---- a kubeconfig file as a tree ----------------------------------------- */

typedef struct {
    char *path;              /* as given */
    char *dir;               /* its directory, for relative paths */
    char *text;              /* the file's bytes: the document points into them */
    struct fy_document *doc;
} kfile;

static void diag_sink(struct fy_diag *d, void *user, const char *buf, size_t len)
{
    (void)d, (void)user, (void)buf, (void)len;
}

/* Parses one file; a syntax error names the line. */
static int kfile_open(kfile *f, const char *path, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    size_t len = 0;
    char *text = tly_read_file(path, MAX_KUBECONFIG, &len);
    if (!text)
        return fail(err, errlen, "kubeconfig %s: cannot read: %s", path, strerror(errno));
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = diag_sink;
    dcfg.level = FYET_ERROR;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (!diag)
        tly_oom();
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG, .diag = diag};
    f->doc = fy_document_build_from_string(&cfg, text, len);
    if (!f->doc) {
        void *it = NULL;
        struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
        int rc = fail(err, errlen, "kubeconfig %s:%d:%d: not valid YAML: %s", path,
                      e ? e->line : 0, e ? e->column : 0, e && e->msg ? e->msg : "parse error");
        fy_diag_destroy(diag);
        free(text);
        return rc;
    }
    fy_diag_destroy(diag);
    f->text = text;
    f->path = tly_xstrdup(path);
    const char *slash = strrchr(path, '/');
    f->dir = slash ? tly_xasprintf("%.*s", (int)(slash - path), path) : tly_xstrdup(".");
    if (slash == path)
        strcpy(f->dir, "/");
    return TLY_OK;
}

static void kfile_close(kfile *f)
{
    if (f->doc)
        fy_document_destroy(f->doc);
    free(f->text);
    free(f->path);
    free(f->dir);
}

/* A mapping member of n, or NULL. */
static struct fy_node *member(struct fy_node *n, const char *key)
{
    if (!n || !fy_node_is_mapping(n))
        return NULL;
    return fy_node_mapping_lookup_by_string(n, key, FY_NT);
}

/* A scalar member's text (malloc'd), or NULL when absent or empty. */
static char *scalar(struct fy_node *n, const char *key)
{
    struct fy_node *v = member(n, key);
    if (!v || !fy_node_is_scalar(v))
        return NULL;
    size_t len = 0;
    const char *t = fy_node_get_scalar(v, &len);
    if (!t || !len)
        return NULL;
    return tly_xasprintf("%.*s", (int)len, t);
}

static bool truthy(struct fy_node *n, const char *key)
{
    char *v = scalar(n, key);
    bool t = v && (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"));
    free(v);
    return t;
}

/* The entry named `name` of list `list` (clusters, users, contexts), or NULL. */
static struct fy_node *named(struct fy_document *doc, const char *list, const char *name)
{
    struct fy_node *seq = member(fy_document_root(doc), list);
    if (!seq || !fy_node_is_sequence(seq))
        return NULL;
    void *it = NULL;
    struct fy_node *e;
    while ((e = fy_node_sequence_iterate(seq, &it)) != NULL) {
        char *n = scalar(e, "name");
        bool hit = n && !strcmp(n, name);
        free(n);
        if (hit)
            return e;
    }
    return NULL;
}

/* "a, b, c": the names in list over every file (for "did you mean"). */
static char *names_of(kfile *files, size_t nf, const char *list)
{
    size_t cap = 256, n = 0;
    char *out = tly_xmalloc(cap);
    out[0] = '\0';
    for (size_t i = 0; i < nf; i++) {
        struct fy_node *seq = member(fy_document_root(files[i].doc), list);
        if (!seq || !fy_node_is_sequence(seq))
            continue;
        void *it = NULL;
        struct fy_node *e;
        while ((e = fy_node_sequence_iterate(seq, &it)) != NULL) {
            char *nm = scalar(e, "name");
            if (!nm)
                continue;
            size_t need = n + strlen(nm) + 3;
            if (need > cap) {
                cap = need * 2;
                out = tly_xrealloc(out, cap);
            }
            n += (size_t)sprintf(out + n, "%s%s", n ? ", " : "", nm);
            free(nm);
        }
    }
    return out;
}

/* The first file's entry named `name` in `list`; *fi is its file. */
static struct fy_node *find_entry(kfile *files, size_t nf, const char *list, const char *name,
                                  size_t *fi)
{
    for (size_t i = 0; i < nf; i++) {
        struct fy_node *e = named(files[i].doc, list, name);
        if (e) {
            *fi = i;
            return e;
        }
    }
    return NULL;
}

/* ---- fields ------------------------------------------------------------- */

static char *resolve(const kfile *f, const char *p)
{
    if (p[0] == '/')
        return tly_xstrdup(p);
    if (p[0] == '~' && p[1] == '/' && getenv("HOME"))
        return tly_xasprintf("%s/%s", getenv("HOME"), p + 2);
    return tly_xasprintf("%s/%s", f->dir, p);
}

/*
** A file field (certificate-authority, client-key, tokenFile): the resolved
** path, checked readable now so the mistake is reported before any request.
*/
static int file_field(const kfile *f, struct fy_node *map, const char *where, const char *key,
                      char **out, char *err, size_t errlen)
{
    *out = NULL;
    char *v = scalar(map, key);
    if (!v)
        return TLY_OK;
    char *p = resolve(f, v);
    free(v);
    if (access(p, R_OK) != 0) {
        int rc = fail(err, errlen,
                      "kubeconfig %s: %s.%s: cannot read \"%s\": %s (relative paths are relative "
                      "to the kubeconfig's directory)",
                      f->path, where, key, p, strerror(errno));
        free(p);
        return rc;
    }
    *out = p;
    return TLY_OK;
}

/* A base64 -data field, decoded. */
static int data_field(const kfile *f, struct fy_node *map, const char *where, const char *key,
                      char **out, size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    char *v = scalar(map, key);
    if (!v)
        return TLY_OK;
    *out = tly_base64_decode(v, strlen(v), len);
    free(v);
    if (!*out)
        return fail(err, errlen, "kubeconfig %s: %s.%s: not valid base64 (it holds the PEM file "
                                 "encoded with `base64 -w0`)",
                    f->path, where, key);
    return TLY_OK;
}

static int read_cluster(tly_kube_config *c, const kfile *f, struct fy_node *cl, const char *where,
                        char *err, size_t errlen)
{
    c->cluster_where = tly_xasprintf("%s: %s", f->path, where);
    c->server = scalar(cl, "server");
    if (!c->server)
        return fail(err, errlen,
                    "kubeconfig %s: %s.server: missing; set the API server's URL "
                    "(https://host:port)",
                    f->path, where);
    size_t n = strlen(c->server);
    while (n > 0 && c->server[n - 1] == '/')
        c->server[--n] = '\0';
    if (strncmp(c->server, "https://", 8) && strncmp(c->server, "http://", 7))
        return fail(err, errlen,
                    "kubeconfig %s: %s.server: \"%s\" is not an http(s) URL; write it as "
                    "https://host:port",
                    f->path, where, c->server);
    c->insecure = truthy(cl, "insecure-skip-tls-verify");
    c->tls_server_name = scalar(cl, "tls-server-name");
    c->proxy_url = scalar(cl, "proxy-url");
    int rc = file_field(f, cl, where, "certificate-authority", &c->ca_file, err, errlen);
    if (rc == TLY_OK)
        rc = data_field(f, cl, where, "certificate-authority-data", &c->ca_pem, &c->ca_len, err,
                        errlen);
    return rc;
}

/* env: a list of {name, value} -> "NAME=VALUE" strings. */
static int exec_env(tly_kube_config *c, const kfile *f, struct fy_node *ex, const char *where,
                    char *err, size_t errlen)
{
    struct fy_node *env = member(ex, "env");
    size_t n = env && fy_node_is_sequence(env) ? (size_t)fy_node_sequence_item_count(env) : 0;
    c->exec_env = tly_xcalloc(n + 1, sizeof *c->exec_env);
    void *it = NULL;
    struct fy_node *e;
    size_t i = 0;
    while (env && (e = fy_node_sequence_iterate(env, &it)) != NULL) {
        char *name = scalar(e, "name"), *value = scalar(e, "value");
        if (!name) {
            free(value);
            return fail(err, errlen, "kubeconfig %s: %s.exec.env[%zu].name: missing", f->path,
                        where, i);
        }
        c->exec_env[i++] = tly_xasprintf("%s=%s", name, value ? value : "");
        free(name);
        free(value);
    }
    return TLY_OK;
}

static int read_exec(tly_kube_config *c, const kfile *f, struct fy_node *ex, const char *where,
                     char *err, size_t errlen)
{
    c->exec_where = tly_xasprintf("kubeconfig %s: %s.exec", f->path, where);
    c->exec_api = scalar(ex, "apiVersion");
    if (!c->exec_api || (strcmp(c->exec_api, "client.authentication.k8s.io/v1") &&
                         strcmp(c->exec_api, "client.authentication.k8s.io/v1beta1")))
        return fail(err, errlen,
                    "%s.apiVersion: \"%s\" is not supported; use client.authentication.k8s.io/v1 "
                    "(or v1beta1)",
                    c->exec_where, c->exec_api ? c->exec_api : "");
    char *cmd = scalar(ex, "command");
    if (!cmd)
        return fail(err, errlen, "%s.command: missing; name the credential plugin to run",
                    c->exec_where);
    struct fy_node *args = member(ex, "args");
    size_t n = args && fy_node_is_sequence(args) ? (size_t)fy_node_sequence_item_count(args) : 0;
    c->exec_argv = tly_xcalloc(n + 2, sizeof *c->exec_argv);
    /* A relative command with a slash is relative to the kubeconfig, as client-go does. */
    c->exec_argv[0] = strchr(cmd, '/') && cmd[0] != '/' ? resolve(f, cmd) : tly_xstrdup(cmd);
    free(cmd);
    void *it = NULL;
    struct fy_node *a;
    size_t i = 1;
    while (args && (a = fy_node_sequence_iterate(args, &it)) != NULL) {
        size_t len = 0;
        const char *t = fy_node_is_scalar(a) ? fy_node_get_scalar(a, &len) : NULL;
        c->exec_argv[i++] = tly_xasprintf("%.*s", (int)len, t ? t : "");
    }
    c->exec_cluster_info = truthy(ex, "provideClusterInfo");
    return exec_env(c, f, ex, where, err, errlen);
}

static int read_user(tly_kube_config *c, const kfile *f, struct fy_node *u, const char *where,
                     char *err, size_t errlen)
{
    c->user_where = tly_xasprintf("kubeconfig %s: %s", f->path, where);
    struct fy_node *ap = member(u, "auth-provider");
    if (ap) {
        char *name = scalar(ap, "name");
        int rc = fail(err, errlen,
                      "kubeconfig %s: %s.auth-provider: the legacy auth-provider \"%s\" is not "
                      "supported; use an exec credential plugin (for GKE gke-gcloud-auth-plugin, "
                      "for Azure kubelogin)",
                      f->path, where, name ? name : "");
        free(name);
        return rc;
    }
    int rc = file_field(f, u, where, "client-certificate", &c->cert_file, err, errlen);
    if (rc == TLY_OK)
        rc = file_field(f, u, where, "client-key", &c->key_file, err, errlen);
    if (rc == TLY_OK)
        rc = data_field(f, u, where, "client-certificate-data", &c->cert_pem, &c->cert_len, err,
                        errlen);
    if (rc == TLY_OK)
        rc = data_field(f, u, where, "client-key-data", &c->key_pem, &c->key_len, err, errlen);
    if (rc == TLY_OK)
        rc = file_field(f, u, where, "tokenFile", &c->token_file, err, errlen);
    if (rc != TLY_OK)
        return rc;
    bool cert = c->cert_file || c->cert_pem, key = c->key_file || c->key_pem;
    if (cert != key)
        return fail(err, errlen, "kubeconfig %s: %s: %s is set without %s; give both", f->path,
                    where, cert ? "client-certificate" : "client-key",
                    cert ? "client-key" : "client-certificate");
    c->token = scalar(u, "token");
    c->username = scalar(u, "username");
    c->password = scalar(u, "password");
    struct fy_node *ex = member(u, "exec");
    return ex ? read_exec(c, f, ex, where, err, errlen) : TLY_OK;
}

/* ---- kubeconfig --------------------------------------------------------- */

/* The files to read, in order (a NULL-terminated malloc'd list of malloc'd paths). */
static char **kubeconfig_paths(const char *flag, char *err, size_t errlen)
{
    char **out = tly_xcalloc(2, sizeof *out);
    if (flag) {
        out[0] = tly_xstrdup(flag);
        return out;
    }
    const char *env = getenv("KUBECONFIG");
    if (env && *env) {
        size_t n = 0, cap = 2;
        const char *p = env;
        while (*p) {
            const char *colon = strchr(p, ':');
            size_t len = colon ? (size_t)(colon - p) : strlen(p);
            char *one = tly_xasprintf("%.*s", (int)len, p);
            if (len && access(one, F_OK) == 0) {
                if (n + 1 >= cap) {
                    cap *= 2;
                    out = tly_xrealloc(out, cap * sizeof *out);
                }
                out[n++] = one;
                out[n] = NULL;
            } else {
                free(one);
            }
            p += len + (colon ? 1 : 0);
        }
        if (n == 0)
            snprintf(err, errlen,
                     "no kubeconfig: none of the files in $KUBECONFIG (%s) exists; pass "
                     "--kubeconfig FILE or --in-cluster",
                     env);
        return out;
    }
    const char *home = getenv("HOME");
    char *def = home ? tly_xasprintf("%s/.kube/config", home) : NULL;
    if (!def || access(def, F_OK) != 0) {
        snprintf(err, errlen,
                 "no kubeconfig: --kubeconfig is not given, $KUBECONFIG is not set and %s does not "
                 "exist; pass --kubeconfig FILE, or --in-cluster inside a Pod",
                 def ? def : "~/.kube/config");
        free(def);
        return out;
    }
    out[0] = def;
    return out;
}

static int from_kubeconfig(tly_kube_config *c, const tly_kube_source *src, char *err,
                           size_t errlen)
{
    err[0] = '\0';
    char **paths = kubeconfig_paths(src->kubeconfig, err, errlen);
    size_t nf = 0;
    while (paths[nf])
        nf++;
    int rc = nf ? TLY_OK : TLY_EINVAL;
    kfile *files = tly_xcalloc(nf + 1, sizeof *files);
    size_t opened = 0;
    for (; rc == TLY_OK && opened < nf; opened++)
        rc = kfile_open(&files[opened], paths[opened], err, errlen);
    if (rc != TLY_OK && opened)
        opened--;  /* the one that failed cleaned up after itself */
    char *ctx = NULL;
    if (rc == TLY_OK) {
        ctx = src->context ? tly_xstrdup(src->context) : NULL;
        for (size_t i = 0; !ctx && i < nf; i++)
            ctx = scalar(fy_document_root(files[i].doc), "current-context");
        if (!ctx) {
            char *all = names_of(files, nf, "contexts");
            rc = fail(err, errlen, "kubeconfig %s: no current-context is set; pass --context NAME%s%s%s",
                      files[0].path, *all ? " (contexts: " : "", all, *all ? ")" : "");
            free(all);
        }
    }
    if (rc == TLY_OK) {
        size_t fi = 0, ci = 0, ui = 0;
        struct fy_node *ce = find_entry(files, nf, "contexts", ctx, &fi);
        struct fy_node *cx = member(ce, "context");
        char *cluster = scalar(cx, "cluster"), *user = scalar(cx, "user");
        struct fy_node *cle = cluster ? find_entry(files, nf, "clusters", cluster, &ci) : NULL;
        struct fy_node *ue = user ? find_entry(files, nf, "users", user, &ui) : NULL;
        if (!ce) {
            char *all = names_of(files, nf, "contexts");
            rc = fail(err, errlen, "kubeconfig %s: context \"%s\" not found (contexts: %s)",
                      files[0].path, ctx, *all ? all : "none");
            free(all);
        } else if (!cluster) {
            rc = fail(err, errlen, "kubeconfig %s: contexts[name=%s].context.cluster: missing",
                      files[fi].path, ctx);
        } else if (!cle || !member(cle, "cluster")) {
            rc = fail(err, errlen,
                      "kubeconfig %s: contexts[name=%s].context.cluster: no cluster named \"%s\" "
                      "in clusters[]",
                      files[fi].path, ctx, cluster);
        } else if (user && (!ue || !member(ue, "user"))) {
            rc = fail(err, errlen,
                      "kubeconfig %s: contexts[name=%s].context.user: no user named \"%s\" in "
                      "users[]",
                      files[fi].path, ctx, user);
        } else {
            c->ns = scalar(cx, "namespace");
            char *where = tly_xasprintf("clusters[name=%s].cluster", cluster);
            rc = read_cluster(c, &files[ci], member(cle, "cluster"), where, err, errlen);
            free(where);
            if (rc == TLY_OK && user) {
                where = tly_xasprintf("users[name=%s].user", user);
                rc = read_user(c, &files[ui], member(ue, "user"), where, err, errlen);
                free(where);
            }
            c->origin = tly_xasprintf("kubeconfig %s, context %s", files[fi].path, ctx);
        }
        free(cluster);
        free(user);
    }
    free(ctx);
    for (size_t i = 0; i < opened; i++)
        kfile_close(&files[i]);
    free(files);
    for (size_t i = 0; paths[i]; i++)
        free(paths[i]);
    free(paths);
    return rc;
}

/* ---- in-cluster ----------------------------------------------------------- */

static int in_cluster(tly_kube_config *c, char *err, size_t errlen)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return fail(err, errlen,
                    "--in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; "
                    "this is not a Pod (outside a cluster use --kubeconfig FILE)");
    const char *dir = getenv("TALLY_SERVICEACCOUNT_DIR");
    if (!dir || !*dir)
        dir = SA_DIR;
    c->origin = tly_xstrdup("the in-cluster service account");
    c->server = strchr(host, ':') ? tly_xasprintf("https://[%s]:%s", host, port)
                                  : tly_xasprintf("https://%s:%s", host, port);
    c->cluster_where = tly_xasprintf("in-cluster (%s)", dir);
    c->user_where = tly_xasprintf("the service account token %s/token", dir);
    c->token_file = tly_xasprintf("%s/token", dir);
    c->ca_file = tly_xasprintf("%s/ca.crt", dir);
    if (access(c->token_file, R_OK) != 0)
        return fail(err, errlen,
                    "--in-cluster: cannot read the service account token %s: %s (is "
                    "automountServiceAccountToken false?)",
                    c->token_file, strerror(errno));
    if (access(c->ca_file, R_OK) != 0)
        return fail(err, errlen, "--in-cluster: cannot read the service account CA %s: %s",
                    c->ca_file, strerror(errno));
    char *nsfile = tly_xasprintf("%s/namespace", dir);
    size_t len = 0;
    c->ns = tly_read_file(nsfile, 4096, &len);
    free(nsfile);
    while (c->ns && len > 0 && (c->ns[len - 1] == '\n' || c->ns[len - 1] == ' '))
        c->ns[--len] = '\0';
    if (c->ns && !*c->ns) {
        free(c->ns);
        c->ns = NULL;
    }
    return TLY_OK;
}

/* ---- public --------------------------------------------------------------- */

int tly_kube_config_load(const tly_kube_source *src, tly_kube_config **out, char *err,
                         size_t errlen)
{
    tly_kube_config *c = tly_xcalloc(1, sizeof *c);
    int rc = src->in_cluster ? in_cluster(c, err, errlen) : from_kubeconfig(c, src, err, errlen);
    if (rc != TLY_OK) {
        tly_kube_config_free(c);
        *out = NULL;
        return rc;
    }
    *out = c;
    return TLY_OK;
}

static void free_list(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

void tly_kube_config_free(tly_kube_config *c)
{
    if (!c)
        return;
    char *fields[] = {c->origin, c->server, c->ns, c->cluster_where, c->user_where, c->ca_file,
                      c->ca_pem, c->tls_server_name, c->proxy_url, c->cert_file, c->key_file,
                      c->cert_pem, c->key_pem, c->token, c->token_file, c->username, c->password,
                      c->exec_api, c->exec_where};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        free(fields[i]);
    free_list(c->exec_argv);
    free_list(c->exec_env);
    free(c);
}

const char *tly_kube_config_server(const tly_kube_config *c) { return c->server; }
const char *tly_kube_config_origin(const tly_kube_config *c) { return c->origin; }
const char *tly_kube_config_namespace(const tly_kube_config *c) { return c->ns; }
