/*
** cel.h: tally's one CEL module. It evaluates CustomResourceDefinition
** validation rules (x-kubernetes-validations, crd.c) and DRA device
** selectors (dra.c): one parser, one evaluator, one set of semantics
** (CEL's commutative && and ||, heterogeneous equality, Kubernetes'
** quantity and semver libraries), with an environment per use that says
** which variables and functions a program may name, as Kubernetes compiles
** each kind of expression in an environment of its own.
**
** The language (both environments unless said):
**   - literals: int, string (single and double quotes, the common escapes),
**     true, false; in rules also double, null and lists [...];
**   - operators ! && || == != < <= > >= in, in rules also - * / % + (numbers,
**     strings, lists) and ?:;
**   - has(x.f); Kubernetes' quantity library: quantity(s), and on quantities
**     compareTo, isGreaterThan, isLessThan (in rules also isQuantity(s), sign,
**     isInteger, asInteger, add, sub); its semver library: semver(s) and
**     semver(s, normalize), and on versions compareTo, isGreaterThan,
**     isLessThan, major, minor, patch (in rules also isSemver); equality of
**     quantities and of versions is by value, as Kubernetes' types define it;
**   - rules only: self and oldSelf, field selection and indexing, size(),
**     int(), string(), double(); the string methods startsWith, endsWith,
**     contains, matches (POSIX extended), split, lowerAscii, upperAscii,
**     trim; the macros all, exists, exists_one, map, filter;
**   - device selectors only: device.driver, device.attributes["domain"].name
**     (or ["name"]), device.capacity["domain"].name, "name" in
**     device.attributes["domain"] (and capacity). Attribute values are typed
**     per device (int, bool, string, version), so their static type is
**     unknown; capacities are quantities. A plain attribute name is in the
**     driver's domain, as Kubernetes groups them.
** The device environment is what tally's placement has always evaluated
** exactly, plus the semver functions, has(), and quantity() or semver() of a
** string attribute; anything else there (string methods, macros, ?:,
** arithmetic, list literals, double and unsigned literals) is refused at
** compile time, so a pod is never placed on a selector tally read only in
** part. Placement never uses floating point, hence no doubles there. The
** string methods, macros and ?: are evaluated in rules and could be let into
** selectors; they are kept out so that no placement answer changed when the
** two evaluators became one (docs/pods.md).
**
** Anything outside the language is never evaluated: compiling fails, and the
** caller reports it (a rule: a warning that it was not evaluated; a selector:
** the pod is UnsupportedConstraint). Compiled programs are read-only, so
** several threads may evaluate one program at once.
*/
#ifndef TALLY_CEL_H
#define TALLY_CEL_H

#include <stdbool.h>
#include <stddef.h>

#include "tally/arena.h"
#include "tally/node.h"
#include "tally/objects.h"

typedef enum {
    TLY_CEL_TRUE = 0,      /* the rule holds */
    TLY_CEL_FALSE,         /* it does not */
    TLY_CEL_ERROR,         /* evaluating it failed (no such key, wrong types): it does not hold */
    TLY_CEL_UNSUPPORTED,   /* not evaluated: syntax or a function tally does not know, or oldSelf */
} tly_cel_result;

typedef enum {
    TLY_CEL_ENV_RULE = 0,  /* self, oldSelf: x-kubernetes-validations rules */
    TLY_CEL_ENV_DEVICE,    /* device: DRA device selectors */
} tly_cel_env;

typedef struct tly_cel_prog tly_cel_prog;

/*
** Compiles expr (which must outlive the program) into arena a. NULL when
** tally does not evaluate it; *why (in a) then says why, for the caller to
** quote: in a rule "cannot parse it (... at offset N)" or "uses F, which
** tally does not evaluate"; in a selector "<what> (column N)", N 1-based.
*/
tly_cel_prog *tly_cel_compile(tly_arena *a, const char *expr, tly_cel_env env, const char **why);

/* Whether a rule names oldSelf: a transition rule, evaluated on updates only. */
bool tly_cel_is_transition(const tly_cel_prog *p);

/*
** Evaluates rule p with self bound to self and oldSelf to old_self (NULL
** when there is no old value: a transition rule is then UNSUPPORTED). why
** (may be NULL) receives, for ERROR and UNSUPPORTED, what went wrong.
*/
tly_cel_result tly_cel_eval_self(const tly_cel_prog *p, const tly_node *self, const tly_node *old_self,
                                 char *why, size_t whylen);

/*
** Evaluates selector p with device bound to dev of driver (dev may be NULL:
** a device without attributes or capacity). Only TRUE means the device
** matches: FALSE and ERROR (a missing attribute) do not.
*/
tly_cel_result tly_cel_eval_device(const tly_cel_prog *p, const char *driver, const tly_device *dev);

/* Compiles rule and evaluates it with self, without an old value. */
tly_cel_result tly_cel_eval_rule(const char *rule, const tly_node *self, char *why, size_t whylen);

/*
** Kubernetes' naming of device attributes and capacities: `have` (as a
** ResourceSlice writes it) is `id` of `domain` when it is the qualified
** "domain/id", or the plain "id" on a device of driver `domain`. Selectors,
** matchAttribute constraints and AccountedResource matches all use it.
*/
bool tly_cel_device_name_is(const char *have, const char *driver, const char *domain, const char *id);
const tly_attr *tly_cel_device_attr(const tly_device *dev, const char *driver, const char *domain,
                                    const char *id);
const tly_capacity *tly_cel_device_capacity(const tly_device *dev, const char *driver, const char *domain,
                                            const char *id);

#endif
