/*
** valuebound.h: an upper bound on the JSON values of a request body, found
** without parsing it (`tally serve`'s limit on a review's parse, docs/serve.md
** "Limits and threads").
**
** Every value but the first follows a ',' or opens a container (or follows a
** ':'), counted outside strings. A body that does not start with '{' or '['
** (after whitespace) is taken for YAML in block style, whose values also
** follow line breaks and colons: those count too. A string runs from a quote
** to the next quote not escaped by an odd run of backslashes; an unterminated
** string ends the count. The parser builds a node per value, so the bound
** bounds the parse's memory before any of it is spent.
*/
#ifndef TALLY_VALUEBOUND_H
#define TALLY_VALUEBOUND_H

#include <stddef.h>

size_t tly_values_bound(const char *s, size_t n);

#endif
