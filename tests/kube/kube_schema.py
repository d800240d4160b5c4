"""Structural schemas for the test API server: one node type for built-in kinds (from the field
table builtin_types.json) and for CRDs (from spec.versions[].schema.openAPIV3Schema).

A Node says what a JSON value at that place is: an object with declared fields, a map, a list
(atomic, map with keys, or set), a scalar, or anything (preserved unknown fields). Pruning, strict
field validation, strategic merge patch and server-side apply all walk objects with it.
"""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


class Node:
    """kind: 'object' | 'map' | 'array' | 'scalar' | 'any'."""

    __slots__ = ("kind", "_props", "_resolve", "items", "addl", "list_type", "keys", "atomic",
                 "patch_strategy", "merge_key", "preserve", "embedded", "raw", "zero")

    def __init__(self, kind, props=None, resolve=None, items=None, addl=None, list_type=None,
                 keys=None, atomic=False, patch_strategy=None, merge_key=None, preserve=False,
                 embedded=False, raw=None):
        self.kind = kind
        self._props = props
        self._resolve = resolve
        self.items = items
        self.addl = addl
        self.list_type = list_type
        self.keys = keys or []
        self.atomic = atomic
        self.patch_strategy = patch_strategy or ""
        self.merge_key = merge_key
        self.preserve = preserve
        self.embedded = embedded
        self.raw = raw
        self.zero = None  # built-in structs: {field: node (a struct) or the zero value}

    @property
    def props(self):
        if self._props is None:
            self._props = self._resolve() if self._resolve else {}
            self._resolve = None
        return self._props

    def child(self, key):
        """The node of field or map entry `key`, or None when the key is unknown here."""
        if self.kind == "object":
            p = self.props.get(key)
            if p is not None:
                return p
            if self.addl is not None:
                return self.addl
            if self.preserve:
                return ANY
            return None
        if self.kind == "map":
            return self.addl
        if self.kind == "any":
            return ANY
        return None

    def is_field(self, key):
        return self.kind == "object" and key in self.props


ANY = Node("any")
SCALAR = Node("scalar")


# ---- built-in kinds -------------------------------------------------------------------------

def map_value(expr):
    """The value type of a Go map type: map[K]V -> V (K may hold brackets)."""
    depth = 0
    for i, c in enumerate(expr):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return expr[i + 1:]
    return "interface{}"


class BuiltinTypes:
    """Nodes for the Go API types recorded in builtin_types.json."""

    def __init__(self, path=os.path.join(HERE, "builtin_types.json")):
        with open(path) as f:
            d = json.load(f)
        self.types = d["types"]
        self.leaves = d["leaves"]
        self.scalars = set(d["scalars"])
        self.core_prefixes = d["core_prefixes"]
        self.cache = {}

    def node(self, ns, expr):
        key = (ns, expr)
        n = self.cache.get(key)
        if n is None:
            n = self._build(ns, expr, {})
            self.cache[key] = n
        return n

    def _build(self, ns, expr, field):
        expr = expr.lstrip("*")
        if expr in self.scalars or expr in ("interface{}",):
            return SCALAR if expr != "interface{}" else ANY
        if expr in self.leaves:
            return ANY if self.leaves[expr] == "any" else SCALAR
        if expr.startswith("[]"):
            items = self._ref(ns, expr[2:])
            strategy = field.get("patchStrategy", "")
            return Node("array", items=items, list_type=field.get("listType", "atomic"),
                        keys=field.get("keys"), patch_strategy=strategy,
                        merge_key=field.get("patchMergeKey"))
        if expr.startswith("map["):
            return Node("map", addl=self._ref(ns, map_value(expr)),
                        atomic=field.get("mapType") == "atomic")
        tns, name = ns, expr
        if expr.startswith("metav1."):
            tns, name = "meta", expr[7:]
        else:
            for p in self.core_prefixes:
                if expr.startswith(p):
                    tns, name = "", expr[len(p):]
                    break
            else:
                if "." in expr:
                    return ANY
        t = self.types.get(tns, {}).get(name)
        if t is None and tns != "meta":
            t = self.types["meta"].get(name)
            if t is not None:
                tns = "meta"
        if t is None:
            return ANY
        if "alias" in t:
            return self._build(tns, t["alias"], field)
        node = Node("object", atomic=bool(t.get("atomic")))
        node._resolve = lambda: self._fields(tns, t, node)
        return node

    def _ref(self, ns, expr):
        """A node for an element type: cached per (ns, expr) so recursive types terminate."""
        key = (ns, expr.lstrip("*"))
        n = self.cache.get(key)
        if n is None:
            n = self._build(ns, expr, {})
            self.cache[key] = n
        return n

    def _fields(self, ns, t, node):
        props = {}
        zero = {}
        for inl in t.get("inline", []):
            inner = self._build(ns, inl, {})
            if inner.kind == "object":
                props.update(inner.props)
                zero.update(inner.zero or {})
        for name, f in t["fields"].items():
            typ = f["type"]
            if typ.lstrip("*").startswith(("[]", "map[")) and typ != "[]byte":
                props[name] = self._build(ns, typ, f)
            else:
                props[name] = self._ref(ns, typ)
            # What Go's encoding/json writes for a zero value of this field.
            omit = f.get("omitempty")
            if typ.startswith("*") or typ.startswith(("[]", "map[")):
                if not omit:
                    zero[name] = None
            elif props[name].kind == "object":
                zero[name] = props[name]
            elif not omit:
                zero[name] = {"string": "", "bool": False}.get(typ, 0 if typ in self.scalars
                                                              else None)
        node.zero = zero
        return props


_BUILTIN = None


def builtin():
    global _BUILTIN
    if _BUILTIN is None:
        _BUILTIN = BuiltinTypes()
    return _BUILTIN


def object_meta():
    return builtin().node("meta", "ObjectMeta")


def skeleton(node, depth=0):
    """The JSON Go writes for the zero value of a built-in struct (None for CRDs): the live
    object server-side apply compares a created object against."""
    if node is None or node.kind != "object" or depth > 8:
        return {}
    node.props  # resolves node.zero
    out = {}
    for k, v in (node.zero or {}).items():
        out[k] = skeleton(v, depth + 1) if isinstance(v, Node) else v
    return out


# ---- CRD schemas --------------------------------------------------------------------------

def from_openapi(s, root=False):
    """A Node for a structural openAPIV3Schema (a dict)."""
    if not isinstance(s, dict):
        return ANY
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if s.get("x-kubernetes-int-or-string"):
        return Node("scalar", raw=s)
    t = s.get("type")
    if t == "array":
        return Node("array", items=from_openapi(s.get("items", {})),
                    list_type=s.get("x-kubernetes-list-type", "atomic"),
                    keys=s.get("x-kubernetes-list-map-keys"), raw=s,
                    patch_strategy="merge" if s.get("x-kubernetes-list-type") == "set" else "")
    if t == "object" or "properties" in s or embedded:
        props = {k: from_openapi(v) for k, v in (s.get("properties") or {}).items()}
        if root or embedded:
            props.setdefault("apiVersion", SCALAR)
            props.setdefault("kind", SCALAR)
            props["metadata"] = object_meta()
        addl = s.get("additionalProperties")
        atomic = s.get("x-kubernetes-map-type") == "atomic"
        if not props and addl is not None and addl is not False:
            return Node("map", addl=from_openapi(addl) if isinstance(addl, dict) else ANY,
                        atomic=atomic, raw=s)
        if not props and preserve:
            return Node("any", raw=s)
        n = Node("object", props=props, preserve=preserve, embedded=embedded, atomic=atomic,
                 raw=s)
        if isinstance(addl, dict):
            n.addl = from_openapi(addl)
        elif addl is True:
            n.addl = ANY
        return n
    if preserve:
        return Node("any", raw=s)
    if t in ("string", "integer", "number", "boolean"):
        return Node("scalar", raw=s)
    return ANY


# ---- pruning ---------------------------------------------------------------------------------

def join(path, key):
    return key if not path else path + "." + key


def prune(value, node, path="", unknown=None):
    """Drops, in place, every field the schema does not know; returns the dropped paths
    (`spec.foo`, `spec.containers[0].bar`) in document order."""
    if unknown is None:
        unknown = []
    if node is None or node.kind in ("any", "scalar"):
        return unknown
    if node.kind in ("object", "map") and isinstance(value, dict):
        for k in list(value.keys()):
            c = node.child(k)
            if c is None:
                unknown.append(join(path, k))
                del value[k]
            else:
                prune(value[k], c, join(path, k), unknown)
    elif node.kind == "array" and isinstance(value, list):
        for i, v in enumerate(value):
            prune(v, node.items, "%s[%d]" % (path, i), unknown)
    return unknown


# ---- value validation of CR objects (a documented subset of OpenAPI) -----------------------

_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
          "object": (dict,), "array": (list,)}


def _typeok(v, t):
    if t in ("integer", "number") and isinstance(v, bool):
        return False
    if t == "integer" and isinstance(v, float) and v.is_integer():
        return True
    return isinstance(v, _TYPES.get(t, (object,)))


def _show(v):
    if isinstance(v, str):
        return json.dumps(v)
    return json.dumps(v, separators=(",", ":"))


def validate(value, s, path, errs):
    """Checks type, required, enum, pattern, bounds and sizes; appends (field, type, detail,
    value) tuples in the shape of Kubernetes field errors."""
    if not isinstance(s, dict):
        return
    if value is None:
        if s.get("nullable"):
            return
        if "type" in s:
            errs.append((path, "FieldValueTypeInvalid", 'Invalid value: "null": %s in body must '
                         'be of type %s: "null"' % (path or "<root>", s["type"])))
        return
    if s.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            errs.append((path, "FieldValueTypeInvalid",
                         "Invalid value: %s: %s in body must be of type integer,string: %s"
                         % (_show(value), path, _show(type(value).__name__))))
            return
    t = s.get("type")
    if t and not _typeok(value, t):
        got = {str: "string", bool: "boolean", dict: "object", list: "array", int: "integer",
               float: "number"}.get(type(value), "unknown")
        errs.append((path, "FieldValueTypeInvalid",
                     'Invalid value: "%s": %s in body must be of type %s: "%s"'
                     % (got, path, t, got)))
        return
    if "enum" in s and value not in s["enum"]:
        errs.append((path, "FieldValueNotSupported", "Unsupported value: %s: supported values: %s"
                     % (_show(value), ", ".join(_show(e) for e in s["enum"]))))
    if isinstance(value, str):
        if "maxLength" in s and len(value) > s["maxLength"]:
            errs.append((path, "FieldValueTooLong", "Too long: may not be more than %d bytes"
                         % s["maxLength"]))
        if "minLength" in s and len(value) < s["minLength"]:
            errs.append((path, "FieldValueInvalid", "Invalid value: %s: %s in body should be at "
                         "least %d chars long" % (_show(value), path, s["minLength"])))
        if "pattern" in s and not _pattern(s["pattern"]).search(value):
            errs.append((path, "FieldValueInvalid", "Invalid value: %s: %s in body should match "
                         "'%s'" % (_show(value), path, s["pattern"])))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "maximum" in s and value > s["maximum"]:
            errs.append((path, "FieldValueInvalid", "Invalid value: %s: %s in body should be less "
                         "than or equal to %s" % (_show(value), path, s["maximum"])))
        if "minimum" in s and value < s["minimum"]:
            errs.append((path, "FieldValueInvalid", "Invalid value: %s: %s in body should be "
                         "greater than or equal to %s" % (_show(value), path, s["minimum"])))
    if isinstance(value, list):
        if "maxItems" in s and len(value) > s["maxItems"]:
            errs.append((path, "FieldValueTooMany", "Too many: %d: must have at most %d items"
                         % (len(value), s["maxItems"])))
        if "minItems" in s and len(value) < s["minItems"]:
            errs.append((path, "FieldValueInvalid", "Invalid value: %d: %s in body should have "
                         "at least %d items" % (len(value), path, s["minItems"])))
        keys = s.get("x-kubernetes-list-map-keys")
        if s.get("x-kubernetes-list-type") == "map" and keys:
            seen = set()
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    k = json.dumps([item.get(x) for x in keys])
                    if k in seen:
                        errs.append(("%s[%d]" % (path, i), "FieldValueDuplicate",
                                     "Duplicate value: %s" % _show({x: item.get(x) for x in keys
                                                                   if x in item})))
                    seen.add(k)
        for i, item in enumerate(value):
            validate(item, s.get("items", {}), "%s[%d]" % (path, i), errs)
    if isinstance(value, dict):
        if "maxProperties" in s and len(value) > s["maxProperties"]:
            errs.append((path, "FieldValueTooMany", "Too many: %d: must have at most %d items"
                         % (len(value), s["maxProperties"])))
        for r in s.get("required", []):
            if r not in value:
                errs.append((join(path, r), "FieldValueRequired", "Required value"))
        props = s.get("properties") or {}
        addl = s.get("additionalProperties")
        for k, v in value.items():
            if path == "" and k in ("apiVersion", "kind", "metadata"):
                continue
            if k in props:
                validate(v, props[k], join(path, k), errs)
            elif isinstance(addl, dict):
                validate(v, addl, join(path, k), errs)


_PATTERNS = {}


def _pattern(p):
    r = _PATTERNS.get(p)
    if r is None:
        try:
            r = re.compile(p)
        except re.error:
            r = re.compile("")
        _PATTERNS[p] = r
    return r


def ssa_keys(node):
    """The list-map keys server-side apply uses for an array node (None when atomic/set)."""
    if node.list_type == "map" and node.keys:
        return node.keys
    return None
