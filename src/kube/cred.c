/*
** cred.c: the credential each API request carries (kube_int.h).
**
** Sources, first match wins:
**   1. an exec plugin (users[].user.exec): run with KUBERNETES_EXEC_INFO
**      set, its ExecCredential (status.token, or clientCertificateData and
**      clientKeyData) cached until status.expirationTimestamp, or until a
**      401 says it is no longer good;
**   2. a token file (tokenFile, or the in-cluster service account token):
**      re-read when the file changes (checked at most once a second), which
**      is how kubelet's hourly rotation of bound tokens reaches a
**      long-running server, and after every 401;
**   3. a static token, then username/password.
** Client certificates from the kubeconfig are set on the connection by
** client.c; an exec plugin's certificate replaces them.
**
** Everything is under one mutex: requests of many threads share one cache,
** and the plugin runs once when several of them find the credential expired.
*/
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kube_int.h"
#include "tally/arena.h"
#include "tally/decode.h"
#include "tally/error.h"
#include "tally/json.h"

extern char **environ;

#define EXEC_TIMEOUT_MS 60000
#define EXEC_MAX_OUTPUT (1u << 20)
#define FILE_RECHECK_MS 1000

struct tly_kube_creds {
    const tly_kube_config *cfg;
    pthread_mutex_t mu;
    /* token file */
    char *file_token;
    struct stat file_st;
    int64_t file_checked;
    /* exec plugin */
    bool exec_ok;
    char *exec_token, *exec_cert, *exec_key;
    size_t exec_cert_len, exec_key_len;
    int64_t exec_expiry;     /* Unix seconds; INT64_MAX: no expiry given */
    uint32_t exec_runs;
};

int64_t tly_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

tly_kube_creds *tly_kube_creds_create(const tly_kube_config *cfg)
{
    tly_kube_creds *c = tly_xcalloc(1, sizeof *c);
    c->cfg = cfg;
    c->file_checked = INT64_MIN;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

static void exec_clear(tly_kube_creds *c)
{
    free(c->exec_token);
    free(c->exec_cert);
    free(c->exec_key);
    c->exec_token = c->exec_cert = c->exec_key = NULL;
    c->exec_ok = false;
}

void tly_kube_creds_destroy(tly_kube_creds *c)
{
    if (!c)
        return;
    exec_clear(c);
    free(c->file_token);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

uint32_t tly_kube_creds_exec_runs(const tly_kube_creds *c) { return c->exec_runs; }

void tly_kube_cred_clear(tly_kube_cred *c)
{
    free(c->bearer);
    free(c->basic);
    free(c->cert_pem);
    free(c->key_pem);
    memset(c, 0, sizeof *c);
}

static char *dup_n(const char *s, size_t n)
{
    char *d = tly_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* ---- token file ------------------------------------------------------------ */

static int file_token(tly_kube_creds *c, bool refresh, char *err, size_t errlen)
{
    int64_t now = tly_mono_ms();
    if (!refresh && c->file_token && now - c->file_checked < FILE_RECHECK_MS)
        return TLY_OK;
    c->file_checked = now;
    struct stat st;
    if (stat(c->cfg->token_file, &st) != 0) {
        if (c->file_token)
            return TLY_OK;  /* keep the last token while the file is being replaced */
        snprintf(err, errlen, "%s: cannot read the token file %s: %s", c->cfg->user_where,
                 c->cfg->token_file, strerror(errno));
        return TLY_EIO;
    }
    if (!refresh && c->file_token && st.st_ino == c->file_st.st_ino &&
        st.st_size == c->file_st.st_size && st.st_mtim.tv_sec == c->file_st.st_mtim.tv_sec &&
        st.st_mtim.tv_nsec == c->file_st.st_mtim.tv_nsec)
        return TLY_OK;
    size_t len = 0;
    char *t = tly_read_file(c->cfg->token_file, 1u << 20, &len);
    if (!t) {
        if (c->file_token)
            return TLY_OK;
        snprintf(err, errlen, "%s: cannot read the token file %s: %s", c->cfg->user_where,
                 c->cfg->token_file, strerror(errno));
        return TLY_EIO;
    }
    while (len > 0 && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' '))
        t[--len] = '\0';
    free(c->file_token);
    c->file_token = t;
    c->file_st = st;
    return TLY_OK;
}

/* ---- exec plugin ----------------------------------------------------------- */

/* KUBERNETES_EXEC_INFO: the ExecCredential the plugin reads its spec from. */
static char *exec_info(const tly_kube_config *cfg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        tly_oom();
    tly_json j;
    tly_json_init(&j, f, false);
    tly_json_begin_object(&j);
    tly_json_key(&j, "apiVersion");
    tly_json_string(&j, cfg->exec_api);
    tly_json_key(&j, "kind");
    tly_json_string(&j, "ExecCredential");
    tly_json_key(&j, "spec");
    tly_json_begin_object(&j);
    tly_json_key(&j, "interactive");
    tly_json_bool(&j, false);
    if (cfg->exec_cluster_info) {
        tly_json_key(&j, "cluster");
        tly_json_begin_object(&j);
        tly_json_key(&j, "server");
        tly_json_string(&j, cfg->server);
        if (cfg->tls_server_name) {
            tly_json_key(&j, "tls-server-name");
            tly_json_string(&j, cfg->tls_server_name);
        }
        if (cfg->insecure) {
            tly_json_key(&j, "insecure-skip-tls-verify");
            tly_json_bool(&j, true);
        }
        tly_json_end_object(&j);
    }
    tly_json_end_object(&j);
    tly_json_end_object(&j);
    fclose(f);
    return buf;
}

/* The environment for the plugin: ours, the kubeconfig's env entries, KUBERNETES_EXEC_INFO. */
static char **exec_envp(const tly_kube_config *cfg, char *info)
{
    size_t n = 0, m = 0;
    while (environ[n])
        n++;
    while (cfg->exec_env && cfg->exec_env[m])
        m++;
    char **envp = tly_xcalloc(n + m + 2, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21))
            envp[k++] = environ[i];
    for (size_t i = 0; i < m; i++)
        envp[k++] = cfg->exec_env[i];
    envp[k++] = info;
    return envp;
}

/* Runs the plugin; its stdout (malloc'd) in *out. */
static int exec_run(tly_kube_creds *c, char **out, size_t *outlen, char *err, size_t errlen)
{
    const tly_kube_config *cfg = c->cfg;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: cannot run the plugin: %s", cfg->exec_where, strerror(errno));
        return TLY_EIO;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    char *json = exec_info(cfg);
    char *info = tly_xasprintf("KUBERNETES_EXEC_INFO=%s", json);
    free(json);
    char **envp = exec_envp(cfg, info);
    pid_t pid;
    int rc = posix_spawnp(&pid, cfg->exec_argv[0], &fa, NULL, cfg->exec_argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    free(info);
    close(pipefd[1]);
    c->exec_runs++;
    if (rc != 0) {
        close(pipefd[0]);
        snprintf(err, errlen, "%s.command: cannot run \"%s\": %s (is it installed and on PATH?)",
                 cfg->exec_where, cfg->exec_argv[0], strerror(rc));
        return TLY_EIO;
    }
    size_t cap = 4096, n = 0;
    char *buf = tly_xmalloc(cap + 1);
    int64_t deadline = tly_mono_ms() + EXEC_TIMEOUT_MS;
    bool timed_out = false, too_big = false;
    for (;;) {
        int64_t left = deadline - tly_mono_ms();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            continue;
        if (n == cap) {
            if (cap >= EXEC_MAX_OUTPUT) {
                too_big = true;
                break;
            }
            cap *= 2;
            buf = tly_xrealloc(buf, cap + 1);
        }
        ssize_t got = read(pipefd[0], buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(pipefd[0]);
    if (timed_out || too_big)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    buf[n] = '\0';
    if (timed_out || too_big || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (timed_out)
            snprintf(err, errlen, "%s: \"%s\" did not finish within %d s", cfg->exec_where,
                     cfg->exec_argv[0], EXEC_TIMEOUT_MS / 1000);
        else if (too_big)
            snprintf(err, errlen, "%s: \"%s\" printed more than %u bytes", cfg->exec_where,
                     cfg->exec_argv[0], EXEC_MAX_OUTPUT);
        else if (WIFEXITED(status))
            snprintf(err, errlen, "%s: \"%s\" failed with exit status %d (its messages are above)",
                     cfg->exec_where, cfg->exec_argv[0], WEXITSTATUS(status));
        else
            snprintf(err, errlen, "%s: \"%s\" was killed by signal %d", cfg->exec_where,
                     cfg->exec_argv[0], WTERMSIG(status));
        free(buf);
        return TLY_EAUTH;
    }
    *out = buf;
    *outlen = n;
    return TLY_OK;
}

static const char *str_member(const tly_node *map, const char *key)
{
    const tly_node *n = map ? tly_node_get(map, key) : NULL;
    return n && n->type == TLY_N_STRING ? n->str : NULL;
}

/* Reads the plugin's ExecCredential into the cache. */
static int exec_parse(tly_kube_creds *c, const char *out, size_t len, char *err, size_t errlen)
{
    const tly_kube_config *cfg = c->cfg;
    tly_arena *a = tly_arena_create(4096);
    tly_node *root = tly_parse_value(out, len, a);
    const tly_node *st = root ? tly_node_get(root, "status") : NULL;
    const char *api = str_member(root, "apiVersion"), *kind = str_member(root, "kind");
    const char *tok = str_member(st, "token"), *cert = str_member(st, "clientCertificateData");
    const char *key = str_member(st, "clientKeyData"), *exp = str_member(st, "expirationTimestamp");
    int rc = TLY_EAUTH;
    int64_t expiry = INT64_MAX;
    if (!root || root->type != TLY_N_MAP)
        snprintf(err, errlen, "%s: \"%s\" did not print an ExecCredential JSON object",
                 cfg->exec_where, cfg->exec_argv[0]);
    else if (!kind || strcmp(kind, "ExecCredential") || !api || strcmp(api, cfg->exec_api))
        snprintf(err, errlen, "%s: the plugin printed apiVersion \"%s\" kind \"%s\"; expected %s "
                              "ExecCredential",
                 cfg->exec_where, api ? api : "", kind ? kind : "", cfg->exec_api);
    else if (!tok && !(cert && key))
        snprintf(err, errlen, "%s: the plugin's ExecCredential has neither status.token nor "
                              "status.clientCertificateData and clientKeyData",
                 cfg->exec_where);
    else if (exp && !tly_parse_time(exp, &expiry))
        snprintf(err, errlen, "%s: status.expirationTimestamp \"%s\" is not an RFC 3339 time",
                 cfg->exec_where, exp);
    else
        rc = TLY_OK;
    if (rc == TLY_OK) {
        exec_clear(c);
        c->exec_token = tok ? tly_xstrdup(tok) : NULL;
        if (cert && key) {
            c->exec_cert = tly_xstrdup(cert);
            c->exec_key = tly_xstrdup(key);
            c->exec_cert_len = strlen(cert);
            c->exec_key_len = strlen(key);
        }
        c->exec_expiry = expiry;
        c->exec_ok = true;
    }
    tly_arena_destroy(a);
    return rc;
}

static int exec_cred(tly_kube_creds *c, bool refresh, char *err, size_t errlen)
{
    if (c->exec_ok && !refresh && time(NULL) < c->exec_expiry)
        return TLY_OK;
    char *out = NULL;
    size_t len = 0;
    int rc = exec_run(c, &out, &len, err, errlen);
    if (rc == TLY_OK)
        rc = exec_parse(c, out, len, err, errlen);
    free(out);
    return rc;
}

/* ---- public ----------------------------------------------------------------- */

int tly_kube_creds_get(tly_kube_creds *c, bool refresh, tly_kube_cred *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    const tly_kube_config *cfg = c->cfg;
    int rc = TLY_OK;
    pthread_mutex_lock(&c->mu);
    if (cfg->exec_argv) {
        rc = exec_cred(c, refresh, err, errlen);
        if (rc == TLY_OK) {
            out->bearer = c->exec_token ? tly_xstrdup(c->exec_token) : NULL;
            if (c->exec_cert) {
                out->cert_pem = dup_n(c->exec_cert, c->exec_cert_len);
                out->key_pem = dup_n(c->exec_key, c->exec_key_len);
                out->cert_len = c->exec_cert_len;
                out->key_len = c->exec_key_len;
            }
        }
    } else if (cfg->token_file) {
        rc = file_token(c, refresh, err, errlen);
        if (rc == TLY_OK)
            out->bearer = tly_xstrdup(c->file_token);
    } else if (cfg->token) {
        out->bearer = tly_xstrdup(cfg->token);
    } else if (cfg->username) {
        out->basic = tly_xasprintf("%s:%s", cfg->username, cfg->password ? cfg->password : "");
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}
