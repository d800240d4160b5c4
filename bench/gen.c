/*
** gen.c: synthetic cluster generator for benchmarks (`tally-gen`).
**
**   tally-gen pods N [SEED]   a `kubectl get pods -o json` style List of N pods
**
** Output is deterministic for a given N and SEED (a small xorshift PRNG, no
** libc rand), so benchmark inputs are reproducible byte for byte. The pods
** look like what a GPU cluster's kubectl prints: metadata with labels,
** annotations and owner references, one to three containers with cpu,
** memory and GPU requests, tolerations, and a status with conditions.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static unsigned pick(unsigned n) { return (unsigned)(rnd() % n); }

static const char *cpus[] = {"100m", "250m", "500m", "1", "2", "4", "8", "1500m"};
static const char *mems[] = {"128Mi", "512Mi", "1Gi", "4Gi", "16Gi", "64Gi", "2G", "300M"};
static const char *queues[] = {"team-a", "team-b", "team-c", "inference", "research"};
static const char *phases[] = {"Running", "Running", "Running", "Pending", "Succeeded"};

static void container(int first, unsigned idx, int gpu)
{
    const char *mem = mems[pick(8)];
    printf("%s          {\n"
           "            \"name\": \"worker-%u\",\n"
           "            \"image\": \"registry.example.com/ml/trainer:2026.11\",\n"
           "            \"args\": [\"--epochs\", \"%u\", \"--batch-size\", \"%u\"],\n"
           "            \"env\": [{\"name\": \"NCCL_DEBUG\", \"value\": \"WARN\"}],\n"
           "            \"resources\": {\n"
           "              \"requests\": {\"cpu\": \"%s\", \"memory\": \"%s\"%s},\n"
           "              \"limits\": {\"memory\": \"%s\"%s}\n"
           "            }\n"
           "          }",
           first ? "" : ",\n", idx, 1 + pick(100), 1u << pick(9), cpus[pick(8)], mem,
           gpu ? ", \"nvidia.com/gpu\": \"1\"" : "", mem,
           gpu ? ", \"nvidia.com/gpu\": \"1\"" : "");
}

static void pods(unsigned long n)
{
    printf("{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n");
    for (unsigned long i = 0; i < n; i++) {
        const char *q = queues[pick(5)];
        const char *phase = phases[pick(5)];
        int gpu = pick(3) == 0;
        int bound = strcmp(phase, "Pending") != 0;
        unsigned node = pick(5000);
        printf("%s    {\n"
               "      \"apiVersion\": \"v1\",\n"
               "      \"kind\": \"Pod\",\n"
               "      \"metadata\": {\n"
               "        \"name\": \"job-%lu-%05u\",\n"
               "        \"namespace\": \"%s\",\n"
               "        \"uid\": \"%08" PRIx64 "-%04x-4%03x-8%03x-%012" PRIx64 "\",\n"
               "        \"creationTimestamp\": \"2026-11-%02uT%02u:%02u:%02uZ\",\n"
               "        \"labels\": {\"app\": \"trainer\", \"kai.scheduler/queue\": \"%s\", "
               "\"job-name\": \"job-%lu\"},\n"
               "        \"annotations\": {\"pod-group-name\": \"pg-job-%lu\"},\n"
               "        \"ownerReferences\": [{\"apiVersion\": \"batch/v1\", \"kind\": \"Job\", "
               "\"name\": \"job-%lu\", \"uid\": \"%016" PRIx64 "\", \"controller\": true}]\n"
               "      },\n"
               "      \"spec\": {\n"
               "        \"schedulerName\": \"kai-scheduler\",\n"
               "        \"priorityClassName\": \"train\",\n"
               "        \"priority\": 50,\n",
               i ? ",\n" : "", i / 4, pick(100000), q, (uint64_t)(rnd() & 0xffffffffu), pick(0x10000),
               pick(0x1000), pick(0x1000), (uint64_t)(rnd() & 0xffffffffffffull), 1 + pick(28), pick(24),
               pick(60), pick(60), q, i / 4, i / 4, i / 4, rnd());
        if (bound)
            printf("        \"nodeName\": \"node-%04u\",\n", node);
        printf("        \"tolerations\": [{\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\", "
               "\"effect\": \"NoSchedule\"}],\n"
               "        \"containers\": [\n");
        unsigned nc = 1 + pick(3);
        for (unsigned c = 0; c < nc; c++)
            container(c == 0, c, gpu && c == 0);
        printf("\n        ]\n"
               "      },\n"
               "      \"status\": {\n"
               "        \"phase\": \"%s\",\n"
               "        \"conditions\": [\n"
               "          {\"type\": \"PodScheduled\", \"status\": \"%s\", "
               "\"lastTransitionTime\": \"2026-11-%02uT%02u:%02u:%02uZ\"},\n"
               "          {\"type\": \"Ready\", \"status\": \"%s\", "
               "\"lastTransitionTime\": \"2026-11-%02uT%02u:%02u:%02uZ\"}\n"
               "        ],\n"
               "        \"startTime\": \"2026-11-%02uT%02u:%02u:%02uZ\"\n"
               "      }\n"
               "    }",
               phase, bound ? "True" : "False", 1 + pick(28), pick(24), pick(60), pick(60),
               strcmp(phase, "Running") ? "False" : "True", 1 + pick(28), pick(24), pick(60),
               pick(60), 1 + pick(28), pick(24), pick(60), pick(60));
    }
    printf("\n  ],\n  \"kind\": \"List\",\n  \"metadata\": {\"resourceVersion\": \"\"}\n}\n");
}

int main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[1], "pods") != 0) {
        fprintf(stderr, "usage: tally-gen pods N [SEED]\n");
        return 2;
    }
    unsigned long n = strtoul(argv[2], NULL, 10);
    if (argc > 3)
        rng_state ^= strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull;
    if (!rng_state)
        rng_state = 1;
    pods(n);
    return 0;
}
