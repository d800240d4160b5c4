/*
** anonymize.h: `tally snapshot --anonymize` (contract section 9).
**
** A snapshot is sent to someone else (a KAI or tally maintainer) to
** reproduce a result. Anonymizing it keeps every value that carries
** accounting meaning (numbers, quantities, times, enums, resource names,
** the label and annotation keys tally reads, well-known names such as
** `default-queue`) and replaces every other string by a token:
**   - consistently: one global mapping, so a node name in spec.nodeName,
**     in the Node's metadata.name and in a kubernetes.io/hostname label
**     value becomes the same token;
**   - keeping byte order: for any two strings a and b of the input,
**     strcmp(a, b) < 0 iff strcmp(anon(a), anon(b)) < 0, kept strings
**     included, so every tie-break tally makes by name, and therefore every
**     result, is the same up to the renaming.
** What is kept, what is renamed and how tokens are chosen: docs/anonymize.md.
**
** Use: create, collect every object (pass 1), seal, rename every object
** (pass 2), destroy. Pass 2 must see the same objects as pass 1: a string
** it never saw has no token, and renaming stops the process rather than
** write it out.
**
** Ownership: the anonymizer copies every string it notes. A renamed tree
** points at tokens owned by the anonymizer (and at composite strings built
** in the caller's arena), so it must be written before the anonymizer is
** destroyed. Not thread-safe; one anonymizer per snapshot.
*/
#ifndef TALLY_ANONYMIZE_H
#define TALLY_ANONYMIZE_H

#include <stdio.h>

#include "tally/arena.h"
#include "tally/node.h"

typedef struct tly_anonymizer tly_anonymizer;

tly_anonymizer *tly_anonymizer_create(void);
void tly_anonymizer_destroy(tly_anonymizer *an);          /* NULL is fine */
/* Pass 1 over every object (a tly_capture_visit_fn): note the strings it holds. */
void tly_anonymizer_collect(void *an, tly_node *obj, tly_arena *a);
/* Between the passes: choose every token. */
void tly_anonymizer_seal(tly_anonymizer *an);
/* Pass 2 (a tly_capture_rename_fn): rewrite obj in place; new strings go into arena a. */
void tly_anonymizer_rename(void *an, tly_node *obj, tly_arena *a);
/* The token of an original string after seal, or NULL if it is kept (tests, the map file). */
const char *tly_anonymizer_token(const tly_anonymizer *an, const char *original);
/* Writes {"original": "token", ...} sorted by original, for the sender's eyes only. */
void tly_anonymizer_write_map(const tly_anonymizer *an, FILE *out);

#endif
