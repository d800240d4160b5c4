/*
** kaisnap.h: KAI Scheduler snapshots read as input (contract section 2).
**
** KAI's snapshot plugin serves, at /get-snapshot, a ZIP holding one file,
** snapshot.json: {config, schedulerParams, rawObjects: {pods: [...],
** nodes: [...], queues, podGroups, priorityClasses, resourceClaims,
** resourceSlices, deviceClasses, and kinds tally does not read}, discovery}.
** The objects are the scheduler's cached Go structs: no apiVersion, no kind.
** The loader (load.c) reads such a ZIP, or the bare snapshot.json, wherever a
** file is: each rawObjects entry is typed here from the list it sits in, and
** schedulerParams' scheduler name and queue label key apply as a Config's
** would.
*/
#ifndef TALLY_KAISNAP_H
#define TALLY_KAISNAP_H

#include <stdbool.h>
#include <stddef.h>

#include "tally/node.h"

/* The name of the one file in a snapshot ZIP. */
#define TLY_KAISNAP_FILE "snapshot.json"

/* Whether buf starts like a ZIP archive (a local file header). */
bool tly_kaisnap_is_zip(const char *buf, size_t len);

/*
** The contents of snapshot.json in the ZIP buf[0..len), malloc'ed (with a
** NUL after it), its size in *out_len. NULL when it cannot be read, with the
** reason in err (a bad archive, no snapshot.json, an entry larger than
** TLY_KAISNAP_MAX bytes, a short or corrupt entry).
*/
char *tly_kaisnap_unzip(const char *buf, size_t len, size_t *out_len, char *err, size_t errlen);
#define TLY_KAISNAP_MAX ((size_t)8 << 30)

/*
** The apiVersion and kind of an object of rawObjects.<key>, false for keys
** of kinds tally does not read (bindRequests, configMaps, topologies...).
** DRA objects carry no version: a claim whose requests name deviceClassName
** directly, or a slice whose devices have `basic`, is v1beta1; anything
** else resource.k8s.io/v1 (v1beta2 has v1's shape).
*/
bool tly_kaisnap_kind(const char *key, const tly_node *obj, const char **api_version, const char **kind);

/*
** obj with apiVersion and kind members put first: the new root and the two
** members are the caller's three nodes `room` (obj's own nodes are shared, not
** changed; the result lives as long as room and obj). An object that names a
** kind itself is returned as it is.
*/
const tly_node *tly_kaisnap_typed(tly_node room[3], const tly_node *obj, const char *api_version,
                                  const char *kind);

/* Whether a top-level map is a KAI snapshot (it has a rawObjects map and no kind). */
bool tly_kaisnap_is_snapshot(const tly_node *top);

/*
** schedulerParams' scheduler name and queue label key (Go field names, so
** matched without regard to case: SchedulerName, QueueLabelKey), or NULL.
*/
void tly_kaisnap_params(const tly_node *top, const char **scheduler_name, const char **queue_label_key);

#endif
