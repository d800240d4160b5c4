/*
** gen.c: synthetic cluster generator for benchmarks (`tally-gen`).
**
**   tally-gen pods N [SEED]   a `kubectl get pods -o json` style List of N pods
**   tally-gen nodes N [SEED]  a `kubectl get nodes -o json` style List of N GPU nodes
**   tally-gen cluster SCALE [SEED]  the realistic cluster of issue 16 at SCALE x
**                             (5,000 nodes, 500 queues, 100,000 pods; gen_cluster.c)
**
** Output is deterministic for a given N and SEED (a small xorshift PRNG, no
** libc rand), so benchmark inputs are reproducible byte for byte. The pods
** look like what a GPU cluster's kubectl prints: metadata with labels,
** annotations and owner references, one to three containers with cpu,
** memory and GPU requests, tolerations, and a status with conditions. The
** nodes (node-0000 ..., the names the pods are bound to) look like GPU
** nodes with NVIDIA's GPU feature discovery: about 30 labels, a few
** annotations, a GPU taint, capacity and allocatable, the kubelet's five
** conditions, addresses, nodeInfo and a short image list.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_cluster.h"

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
        /* A Job's four pods: job-<i/4>-<suffix>, the suffix in a quarter of its own (never two alike). */
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
               i ? ",\n" : "", i / 4, (unsigned)(i % 4) * 25000u + pick(25000), q, (uint64_t)(rnd() & 0xffffffffu), pick(0x10000),
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

static const char *conds[] = {"MemoryPressure", "KubeletHasSufficientMemory", "DiskPressure",
                               "KubeletHasNoDiskPressure", "PIDPressure", "KubeletHasSufficientPID",
                               "NetworkUnavailable", "RouteCreated"};

static void nodes(unsigned long n)
{
    printf("{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n");
    for (unsigned long i = 0; i < n; i++) {
        int h200 = pick(2) == 0;
        const char *product = h200 ? "NVIDIA-H200" : "NVIDIA-A100-SXM4-80GB";
        unsigned zone = pick(3), hb = pick(60);
        printf("%s    {\n"
               "      \"apiVersion\": \"v1\",\n"
               "      \"kind\": \"Node\",\n"
               "      \"metadata\": {\n"
               "        \"name\": \"node-%04lu\",\n"
               "        \"uid\": \"%08" PRIx64 "-%04x-4%03x-8%03x-%012" PRIx64 "\",\n"
               "        \"creationTimestamp\": \"2026-10-%02uT%02u:%02u:%02uZ\",\n"
               "        \"labels\": {\n"
               "          \"beta.kubernetes.io/arch\": \"amd64\", \"beta.kubernetes.io/os\": \"linux\",\n"
               "          \"kubernetes.io/arch\": \"amd64\", \"kubernetes.io/os\": \"linux\",\n"
               "          \"kubernetes.io/hostname\": \"node-%04lu\",\n"
               "          \"node.kubernetes.io/instance-type\": \"%s\",\n"
               "          \"topology.kubernetes.io/region\": \"us-east-1\",\n"
               "          \"topology.kubernetes.io/zone\": \"us-east-1%c\",\n"
               "          \"nvidia.com/cuda.driver.major\": \"550\", \"nvidia.com/cuda.driver.minor\": \"127\",\n"
               "          \"nvidia.com/cuda.driver.rev\": \"05\", \"nvidia.com/cuda.runtime.major\": \"12\",\n"
               "          \"nvidia.com/cuda.runtime.minor\": \"4\", \"nvidia.com/gfd.timestamp\": \"17%08u\",\n"
               "          \"nvidia.com/gpu.compute.major\": \"%s\", \"nvidia.com/gpu.compute.minor\": \"0\",\n"
               "          \"nvidia.com/gpu.count\": \"8\", \"nvidia.com/gpu.family\": \"%s\",\n"
               "          \"nvidia.com/gpu.machine\": \"%s\", \"nvidia.com/gpu.memory\": \"%s\",\n"
               "          \"nvidia.com/gpu.present\": \"true\", \"nvidia.com/gpu.product\": \"%s\",\n"
               "          \"nvidia.com/gpu.replicas\": \"1\", \"nvidia.com/gpu.sharing-strategy\": \"none\",\n"
               "          \"nvidia.com/mig.capable\": \"true\", \"nvidia.com/mig.strategy\": \"single\",\n"
               "          \"nvidia.com/gpu.deploy.device-plugin\": \"true\",\n"
               "          \"nvidia.com/gpu.deploy.gpu-feature-discovery\": \"true\",\n"
               "          \"feature.node.kubernetes.io/pci-10de.present\": \"true\",\n"
               "          \"feature.node.kubernetes.io/kernel-version.full\": \"6.1.0-27-cloud-amd64\"\n"
               "        },\n"
               "        \"annotations\": {\n"
               "          \"node.alpha.kubernetes.io/ttl\": \"0\",\n"
               "          \"volumes.kubernetes.io/controller-managed-attach-detach\": \"true\",\n"
               "          \"csi.volume.kubernetes.io/nodeid\": \"{\\\"ebs.csi.aws.com\\\":\\\"i-%016" PRIx64 "\\\"}\",\n"
               "          \"nfd.node.kubernetes.io/feature-labels\": \"pci-10de.present,kernel-version.full\"\n"
               "        }\n"
               "      },\n"
               "      \"spec\": {\n"
               "        \"podCIDR\": \"10.%u.%u.0/24\",\n"
               "        \"providerID\": \"aws:///us-east-1%c/i-%016" PRIx64 "\",\n"
               "        \"taints\": [{\"key\": \"nvidia.com/gpu\", \"value\": \"present\", "
               "\"effect\": \"NoSchedule\"}]\n"
               "      },\n",
               i ? ",\n" : "", i, (uint64_t)(rnd() & 0xffffffffu), pick(0x10000), pick(0x1000),
               pick(0x1000), (uint64_t)(rnd() & 0xffffffffffffull), 1 + pick(28), pick(24), pick(60),
               pick(60), i, h200 ? "p5en.48xlarge" : "p4de.24xlarge", 'a' + zone, pick(100000000),
               h200 ? "9" : "8", h200 ? "hopper" : "ampere", h200 ? "p5en.48xlarge" : "p4de.24xlarge",
               h200 ? "143771" : "81920", product, rnd(), (unsigned)(i / 256) % 256,
               (unsigned)i % 256, 'a' + zone, rnd());
        const char *cpu = h200 ? "192" : "96", *mem = h200 ? "2097152Mi" : "1179648Mi";
        const char *efa = h200 ? "16" : "4";
        printf("      \"status\": {\n"
               "        \"capacity\": {\"cpu\": \"%s\", \"ephemeral-storage\": \"3750000Mi\", "
               "\"hugepages-1Gi\": \"0\", \"hugepages-2Mi\": \"0\", \"memory\": \"%s\", "
               "\"nvidia.com/gpu\": \"8\", \"pods\": \"250\", \"vpc.amazonaws.com/efa\": \"%s\"},\n"
               "        \"allocatable\": {\"cpu\": \"%s\", \"ephemeral-storage\": \"3455000Mi\", "
               "\"hugepages-1Gi\": \"0\", \"hugepages-2Mi\": \"0\", \"memory\": \"%s\", "
               "\"nvidia.com/gpu\": \"8\", \"pods\": \"250\", \"vpc.amazonaws.com/efa\": \"%s\"},\n"
               "        \"conditions\": [\n",
               cpu, mem, efa, cpu, mem, efa);
        for (unsigned c = 0; c < 4; c++)
            printf("          {\"type\": \"%s\", \"status\": \"False\", "
                   "\"lastHeartbeatTime\": \"2026-11-29T09:%02u:00Z\", "
                   "\"lastTransitionTime\": \"2026-10-01T00:00:00Z\", \"reason\": \"%s\", "
                   "\"message\": \"%s\"},\n",
                   conds[2 * c], hb, conds[2 * c + 1],
                   c == 3 ? "RouteController created a route" : "kubelet has sufficient resources");
        printf("          {\"type\": \"Ready\", \"status\": \"True\", "
               "\"lastHeartbeatTime\": \"2026-11-29T09:%02u:00Z\", "
               "\"lastTransitionTime\": \"2026-10-01T00:00:00Z\", \"reason\": \"KubeletReady\", "
               "\"message\": \"kubelet is posting ready status\"}\n"
               "        ],\n"
               "        \"addresses\": [{\"type\": \"InternalIP\", \"address\": \"10.%u.%u.%u\"}, "
               "{\"type\": \"Hostname\", \"address\": \"node-%04lu\"}],\n"
               "        \"daemonEndpoints\": {\"kubeletEndpoint\": {\"Port\": 10250}},\n"
               "        \"nodeInfo\": {\"architecture\": \"amd64\", \"bootID\": \"%016" PRIx64 "\", "
               "\"containerRuntimeVersion\": \"containerd://1.7.22\", "
               "\"kernelVersion\": \"6.1.0-27-cloud-amd64\", \"kubeProxyVersion\": \"v1.31.2\", "
               "\"kubeletVersion\": \"v1.31.2\", \"machineID\": \"%016" PRIx64 "\", "
               "\"operatingSystem\": \"linux\", \"osImage\": \"Debian GNU/Linux 12 (bookworm)\", "
               "\"systemUUID\": \"%016" PRIx64 "\"},\n"
               "        \"images\": [\n"
               "          {\"names\": [\"registry.example.com/ml/trainer:2026.11\"], \"sizeBytes\": 9876543210},\n"
               "          {\"names\": [\"nvcr.io/nvidia/k8s-device-plugin:v0.17.0\"], \"sizeBytes\": 123456789},\n"
               "          {\"names\": [\"nvcr.io/nvidia/gpu-feature-discovery:v0.17.0\"], \"sizeBytes\": 98765432},\n"
               "          {\"names\": [\"registry.k8s.io/kube-proxy:v1.31.2\"], \"sizeBytes\": 30000000},\n"
               "          {\"names\": [\"registry.k8s.io/pause:3.10\"], \"sizeBytes\": 320368}\n"
               "        ]\n"
               "      }\n"
               "    }",
               hb, (unsigned)(i / 65536) % 256, (unsigned)(i / 256) % 256, (unsigned)i % 256, i,
               rnd(), rnd(), rnd());
    }
    printf("\n  ],\n  \"kind\": \"List\",\n  \"metadata\": {\"resourceVersion\": \"\"}\n}\n");
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "pods") != 0 && strcmp(argv[1], "nodes") != 0 &&
                     strcmp(argv[1], "cluster") != 0)) {
        fprintf(stderr, "usage: tally-gen pods|nodes N [SEED] | tally-gen cluster SCALE [SEED]\n");
        return 2;
    }
    unsigned long n = strtoul(argv[2], NULL, 10);
    if (!strcmp(argv[1], "cluster")) {
        gen_cluster(stdout, (unsigned)n, argc > 3 ? strtoull(argv[3], NULL, 10) : 42);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (argc > 3)
        rng_state ^= strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull;
    if (!rng_state)
        rng_state = 1;
    if (!strcmp(argv[1], "pods"))
        pods(n);
    else
        nodes(n);
    return 0;
}
