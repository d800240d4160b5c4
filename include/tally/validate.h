/*
** validate.h: the cross-object rules of `tally validate`, `tally admit` and
** the webhook.
**
** Per-object rules (types, required fields, enums, one-of, quantity syntax)
** are checked while decoding (decode_<kind>.c). What remains needs more than
** one object: a Queue's parent and AccountedResource references, a pod's
** PodGroup and PriorityClass, a Run's Runtime. In `validate` the input is
** often partial, so a reference to an object that is absent is a warning;
** `admit` and `serve` see the whole state and pass full_state = true, which
** makes those errors (contract section 4).
*/
#ifndef TALLY_VALIDATE_H
#define TALLY_VALIDATE_H

#include <stdbool.h>

#include "tally/diag.h"
#include "tally/store.h"

/* Adds the cross-object diagnostics of a finished store to d. */
void tly_validate_store(const tly_store *s, tly_diags *d, bool full_state);

#endif
