/*
** labelsyntax.h: Kubernetes' syntax rules for label keys, label values and
** label selectors, with apimachinery's own messages.
**
** Two users need the messages word for word:
**  - kruntimes' scheduler compiles a Run's affinity selectors with
**    apimachinery's LabelSelectorAsSelector and, when that fails, ends the
**    Run Failed with the error text in status.message (the CRD does not
**    check operators, values or label syntax, so the API server stores such
**    Runs). tally must print the same message.
**  - annotation keys follow the label key rule (IsQualifiedName), so a
**    capacity annotation such as kruntimes.io/capacity.example.com/gpu (two
**    '/') can be named as one the API server would refuse.
**
** Every function returns NULL when the input is valid, else a message
** allocated from the arena. Byte strings are checked as Go's regexp checks
** them (the character classes are ASCII).
*/
#ifndef TALLY_LABELSYNTAX_H
#define TALLY_LABELSYNTAX_H

#include <stdbool.h>

#include "tally/arena.h"
#include "tally/node.h"

/*
** Why key is not a valid label key (IsLabelKey: an optional DNS subdomain
** prefix and '/', then a name of at most 63 characters), the problems joined
** by "; " as apimachinery joins them; NULL when valid.
*/
const char *tly_label_key_problems(tly_arena *a, const char *key);

/* The same test without the messages: whether key is a label key. */
bool tly_label_key_ok(const char *key);

/*
** Why key is not a valid annotation key: the label key rule applied to the
** key lower-cased, as the API server's ValidateAnnotations applies it; NULL
** when valid.
*/
const char *tly_annotation_key_problems(tly_arena *a, const char *key);

/* Why value is not a valid label value (at most 63 characters, may be empty); NULL when valid. */
const char *tly_label_value_problems(tly_arena *a, const char *value);

/*
** The error apimachinery's LabelSelectorAsSelector returns for the label
** selector at node sel (a map with matchLabels and matchExpressions), or
** NULL when it compiles. matchLabels come first, in key byte order (Go
** visits the map in a random order; one bad entry is the usual case), then
** matchExpressions in order; the first failing requirement's error is
** returned, its problems aggregated as Go aggregates them ("[a, b]" for
** two). Members with the wrong type are left to the decoder's type checks
** and skipped here. *at is set to the node at fault and *field to its path
** below the selector ("matchExpressions[0].values"), both may be NULL.
*/
const char *tly_label_selector_error(tly_arena *a, const tly_node *sel, const tly_node **at,
                                     const char **field);

#endif
