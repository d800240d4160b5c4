/*
** kube_int.h: what the files of src/kube/ share and nothing outside reads:
** the resolved connection settings, the credential cache, and small helpers.
*/
#ifndef TALLY_KUBE_INT_H
#define TALLY_KUBE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tally/kube.h"

/* Resolved settings: everything is owned (malloc'd) by the struct. */
struct tly_kube_config {
    char *origin;            /* "kubeconfig F, context C" or "the in-cluster service account" */
    char *server;            /* https://host:port, no trailing slash */
    char *ns;                /* the context's namespace, or NULL */
    char *cluster_where;     /* "F: clusters[name=X].cluster" for messages */
    char *user_where;        /* "F: users[name=U].user", or NULL for no user */
    /* TLS */
    char *ca_file;
    char *ca_pem;            /* decoded certificate-authority-data */
    size_t ca_len;
    bool insecure;
    char *tls_server_name;
    char *proxy_url;
    char *cert_file, *key_file;
    char *cert_pem, *key_pem;
    size_t cert_len, key_len;
    /* credentials */
    char *token;
    char *token_file;
    char *username, *password;
    /* exec credential plugin */
    char *exec_api;          /* client.authentication.k8s.io/v1 or v1beta1 */
    char **exec_argv;        /* NULL-terminated; [0] is the command */
    char **exec_env;         /* NULL-terminated NAME=VALUE */
    bool exec_cluster_info;  /* provideClusterInfo */
    char *exec_where;
};

/* The credential of one request. */
typedef struct {
    char *bearer;            /* token, or NULL */
    char *basic;             /* "user:password", or NULL */
    char *cert_pem, *key_pem;/* from an exec plugin, or NULL (the config's are used) */
    size_t cert_len, key_len;
} tly_kube_cred;

typedef struct tly_kube_creds tly_kube_creds;

/* The credential cache of one client (cred.c). */
tly_kube_creds *tly_kube_creds_create(const tly_kube_config *cfg);
void tly_kube_creds_destroy(tly_kube_creds *c);
/*
** The credential to send now: a copy the caller frees with
** tly_kube_cred_clear(). refresh drops what is cached first (after a 401):
** the token file is read again and the exec plugin run again.
*/
int tly_kube_creds_get(tly_kube_creds *c, bool refresh, tly_kube_cred *out, char *err,
                       size_t errlen);
void tly_kube_cred_clear(tly_kube_cred *c);
/* How many times the exec plugin ran (tests). */
uint32_t tly_kube_creds_exec_runs(const tly_kube_creds *c);

/* Decodes standard base64 (whitespace ignored); NULL when malformed. */
char *tly_base64_decode(const char *in, size_t len, size_t *outlen);

/* Reads a whole file (at most max bytes); NULL with errno set. */
char *tly_read_file(const char *path, size_t max, size_t *len);

/* A monotonic clock in milliseconds. */
int64_t tly_mono_ms(void);

#endif
