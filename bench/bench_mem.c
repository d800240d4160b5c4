/*
** bench_mem.c: memory held by the state store per node and per pod (`make bench`).
**
**   bench-mem [NODES [PODS]]     (default 5000 nodes, 20000 pods)
**
** Loads, one store at a time, through the normal loader (its native JSON reader, as for a .json file):
** tally-gen's `kubectl get nodes -o json`-style List of NODES and of
** 2*NODES GPU nodes, and its `kubectl get pods -o json`-style List of PODS
** and of 2*PODS pods (tally-gen ... 42, run from this program's directory,
** the same inputs as the load benchmark). For each store it takes the
** process's resident bytes (/proc/self/statm: the heap and the huge-page
** arena blocks and tables of pages.c, which glibc's mallinfo2() used before
** 2026-12-07 does not see) before the input is generated and after the
** store is finished (bench_load_as has freed the input text by then), and the
** store arena's bytes handed out (tly_arena_used: the decoded structs,
** strings and lists). Per node and per pod figures are the differences
** between the two sizes divided by the difference in count, so what does
** not grow with the input (the store, the interned names, partly filled
** arena blocks) cancels; a huge page partly used is resident whole, so
** what is left is at most 2 MiB / count either way. Also prints the input bytes per object for scale
** and the sizes of the structs that make up a node and a pod.
*/
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/arena.h"
#include "tally/objects.h"
#include "tally/store.h"

#include "bench.h"

static char gen_path[PATH_MAX];

/* The output of `tally-gen WHAT N 42` in a malloc'd buffer. */
static char *generate(const char *what, unsigned n, size_t *len)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "'%s' %s %u 42", gen_path, what, n);
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("bench-mem: popen");
        exit(1);
    }
    size_t cap = 1 << 20, used = 0, got;
    char *buf = tly_xmalloc(cap);
    while ((got = fread(buf + used, 1, cap - used, p)) > 0) {
        used += got;
        if (used == cap)
            buf = tly_xrealloc(buf, cap *= 2);
    }
    if (pclose(p) != 0 || used == 0) {
        fprintf(stderr, "bench-mem: %s failed\n", cmd);
        exit(1);
    }
    *len = used;
    return buf;
}

typedef struct {
    long long resident, arena, input;
} footprint;

/* Loads `tally-gen WHAT N` into a store and measures what the finished store holds. */
static footprint measure(const char *what, int kind, unsigned n)
{
    footprint f;
    long long before = bench_resident();
    size_t len;
    char *text = generate(what, n, &len);
    /* The native JSON reader, as `tally` reads a .json file (libfyaml took minutes at 2M pods). */
    tly_store *s = bench_load_as("bench-mem", "bench.json", text, len);
    f.resident = bench_resident() - before;
    f.arena = (long long)tly_arena_used(tly_store_arena(s));
    f.input = (long long)len;
    if (tly_store_count(s, kind) != n) {
        fprintf(stderr, "bench-mem: expected %u objects, the store holds %u\n", n,
                tly_store_count(s, kind));
        exit(1);
    }
    size_t diags = tly_diags_count(tly_store_diags(s));
    tly_store_destroy(s);
    printf("%s %u: resident %lld B, arena used %lld B, input %lld B, %zu diagnostics\n", what, n,
           f.resident, f.arena, f.input, diags);
    return f;
}

/* Both sizes, then the per-object differences on one line bench.sh reads. */
static void per_object(const char *what, int kind, unsigned n)
{
    footprint a = measure(what, kind, n), b = measure(what, kind, 2 * n);
    printf("per %.*s (%u -> %u): resident %.0f B, arena %.0f B, input %.0f B\n",
           (int)strlen(what) - 1, what, n, 2 * n, (double)(b.resident - a.resident) / n,
           (double)(b.arena - a.arena) / n, (double)(b.input - a.input) / n);
}

int main(int argc, char **argv)
{
    unsigned nodes = argc > 1 ? (unsigned)atoi(argv[1]) : 5000u;
    unsigned pods = argc > 2 ? (unsigned)atoi(argv[2]) : 20000u;
    if (nodes == 0 || pods == 0) {
        fprintf(stderr, "usage: bench-mem [NODES [PODS]]\n");
        return 2;
    }
    /* tally-gen is built next to this program (build-bench/). */
    ssize_t n = readlink("/proc/self/exe", gen_path, sizeof gen_path - 16);
    if (n <= 0) {
        perror("bench-mem: /proc/self/exe");
        return 1;
    }
    gen_path[n] = '\0';
    char *slash = strrchr(gen_path, '/');
    strcpy(slash ? slash + 1 : gen_path, "tally-gen");
    printf("structs: tly_meta %zu, tly_k8s_node %zu, tly_pod %zu, tly_container %zu, "
           "tly_container_status %zu, tly_condition %zu, tly_toleration %zu, tly_kv %zu, "
           "tly_rq %zu (tly_qty %zu)\n",
           sizeof(tly_meta), sizeof(tly_k8s_node), sizeof(tly_pod), sizeof(tly_container),
           sizeof(tly_container_status), sizeof(tly_condition), sizeof(tly_toleration),
           sizeof(tly_kv), sizeof(tly_rq), sizeof(tly_qty));
    per_object("nodes", TLY_K_NODE, nodes);
    per_object("pods", TLY_K_POD, pods);
    return 0;
}
