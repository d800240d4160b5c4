/*
** nodewrite.h: writing a value tree (node.h) back as JSON.
**
** Used where tally hands on objects it read: `tally snapshot` writes every
** object it lists from the API server. Scalars are written as they were
** read: numbers with their original text (a quantity's "0.1" stays 0.1),
** strings escaped as RFC 8259 requires. Keys come out in the tree's order.
*/
#ifndef TALLY_NODEWRITE_H
#define TALLY_NODEWRITE_H

#include <stdio.h>

#include "tally/node.h"

/* Writes n as compact JSON (no whitespace). */
void tly_node_write_json(FILE *out, const tly_node *n);

#endif
