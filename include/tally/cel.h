/*
** cel.h: a CEL evaluator for CustomResourceDefinition validation rules
** (x-kubernetes-validations), over the loader's value trees.
**
** The language is the part of CEL that Kubernetes' CRD rules use:
**   - literals (int, double, single- and double-quoted strings, true, false,
**     null, lists [...]), `self` and field selection (self.spec.x), indexing
**     (list[i], map['key']);
**   - operators ! - * / % + (numbers, strings, lists) == != < <= > >= in
**     && || (commutative about errors, as CEL is) and ?:;
**   - has(self.f), size(x) and x.size(), int(), string(), double();
**   - string methods startsWith, endsWith, contains, matches (POSIX extended),
**     split (Kubernetes' strings library), lowerAscii, upperAscii, trim;
**   - the macros all, exists, exists_one, map (two and three arguments) and
**     filter, over lists and over map keys.
** A rule that uses anything else, or `oldSelf` (a transition rule, checked
** only on update), is not evaluated: the result says so, never "passed".
*/
#ifndef TALLY_CEL_H
#define TALLY_CEL_H

#include <stdbool.h>
#include <stddef.h>

#include "tally/node.h"

typedef enum {
    TLY_CEL_TRUE = 0,      /* the rule holds */
    TLY_CEL_FALSE,         /* it does not */
    TLY_CEL_ERROR,         /* evaluating it failed (no such key, wrong types): it does not hold */
    TLY_CEL_UNSUPPORTED,   /* not evaluated: syntax or a function tally does not know, or oldSelf */
} tly_cel_result;

/*
** Evaluates rule with `self` bound to value. why (may be NULL) receives, for
** ERROR and UNSUPPORTED, what went wrong.
*/
tly_cel_result tly_cel_eval_rule(const char *rule, const tly_node *self, char *why, size_t whylen);

#endif
