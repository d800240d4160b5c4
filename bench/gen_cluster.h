/*
** gen_cluster.h: the realistic cluster of issue 16, written by tally-gen
** (`tally-gen cluster SCALE [SEED]`) and built in memory by bench-pods
** (`bench-pods --realistic SCALE`). One generator, so that the benchmark and
** the command line see the same bytes.
*/
#ifndef TALLY_BENCH_GEN_CLUSTER_H
#define TALLY_BENCH_GEN_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

/*
** Writes a `kind: List` (one item per line, as compact as the API server
** sends it) of SCALE x (5,000 nodes, 500 queues, 100,000 pods) plus 20
** AccountedResources, the PriorityClasses, Namespaces and PodGroups the pods
** name. Deterministic for a given SCALE and SEED.
*/
void gen_cluster(FILE *out, unsigned scale, uint64_t seed);

#endif
