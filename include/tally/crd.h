/*
** crd.h: objects checked against the CustomResourceDefinitions of the input
** (contract section 4), as the API server checks them.
**
** The loader reads every apiextensions.k8s.io/v1 CustomResourceDefinition
** into a set: the store's own (tly_store_crds), which `admit` and `serve`
** check reviewed objects against (tly_crdset_check_object), or the one
** `tally validate` hands it (tly_store_set_crds), which also keeps a copy of
** every object of a group that is not built into Kubernetes, since a CRD
** may come after the objects it defines. tly_crdset_check() then
** checks each kept object whose group and kind a CRD defines, at its
** apiVersion's version, against that version's structural schema
** (openAPIV3Schema):
**   - type (x-kubernetes-int-or-string: an integer or a string), nullable
**     (a null where it is not allowed is dropped, as the API server prunes it);
**   - required, enum, pattern (POSIX extended with \d \w \s; a pattern that
**     cannot be compiled is reported as not evaluated), format int32/int64/
**     date-time, minimum/maximum (exclusive too), minLength/maxLength,
**     minItems/maxItems, minProperties/maxProperties;
**   - x-kubernetes-list-type set (no duplicate) and map (no two items with
**     the same x-kubernetes-list-map-keys);
**   - unknown fields, as kubectl's strict field validation reports them
**     (`unknown field "spec.args"`), unless x-kubernetes-preserve-unknown-
**     fields or additionalProperties allow them.
** An unserved version, or a version the CRD does not define, is an error.
** x-kubernetes-validations rules are evaluated by cel.h with self bound to
** the value at their schema node: a rule that does not hold is an error with
** its message; a rule tally cannot evaluate is a warning (once per rule),
** never a pass; transition rules (oldSelf) apply to updates only, which
** tly_crdset_check_object() checks (admit, serve).
*/
#ifndef TALLY_CRD_H
#define TALLY_CRD_H

#include "tally/diag.h"
#include "tally/node.h"

typedef struct tly_crdset tly_crdset;

tly_crdset *tly_crdset_create(void);
void tly_crdset_destroy(tly_crdset *c);

/* Whether root is a CustomResourceDefinition (apiextensions.k8s.io/v1). */
bool tly_crd_is_crd(const tly_node *root);

/* Reads CRD root (from file) into the set; problems with the CRD itself go to d. */
void tly_crdset_add(tly_crdset *c, const tly_node *root, const char *file, tly_diags *d);

/* Keeps a copy of object root (from file) when its group is not one of Kubernetes' own. */
void tly_crdset_keep(tly_crdset *c, const tly_node *root, const char *file);

/* Checks every kept object against the CRD of its kind, if the set holds one. */
void tly_crdset_check(tly_crdset *c, tly_diags *d);

/*
** Checks one object (an admission review's request.object, named `file` in
** the diagnostics) against the CRD of its kind in c, if c (may be NULL)
** holds one, as the API server validates a create or an update. old is the
** object before an UPDATE (NULL for a CREATE): transition rules are then
** evaluated with oldSelf, at the places where an old value correlates
** (object members by name, items of x-kubernetes-list-type map lists by
** their keys), and values the update leaves unchanged are not refused for
** anything but unknown fields and transition rules (the API server's
** validation ratcheting). Only reads c: several threads may check at once.
** Returns whether c holds a CRD for the object's group and kind.
*/
bool tly_crdset_check_object(const tly_crdset *c, const tly_node *root, const tly_node *old, const char *file,
                             tly_diags *d);

#endif
