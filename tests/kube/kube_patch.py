"""Patches the test API server applies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and
Kubernetes strategic merge patch (for built-in kinds, driven by kube_schema nodes)."""
import json

from kube_store import jcopy


class PatchError(Exception):
    """The patch does not apply to the document (the server answers 422)."""


class PatchDecodeError(Exception):
    """The patch is not a patch (the server answers 400)."""


# ---- RFC 6902 -------------------------------------------------------------------------------

def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container, token, op, allow_end=False):
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError("%s operation does not apply: invalid index %r" % (op, token))
    i = int(token)
    if i > len(container) or (i == len(container) and not allow_end):
        raise PatchError("%s operation does not apply: index %d out of bounds" % (op, i))
    return i


def _parent(doc, parts, op):
    cur = doc
    for p in parts[:-1]:
        if isinstance(cur, dict):
            if p not in cur:
                raise PatchError("%s operation does not apply: doc is missing path" % op)
            cur = cur[p]
        elif isinstance(cur, list):
            cur = cur[_index(cur, p, op)]
        else:
            raise PatchError("%s operation does not apply: doc is missing path" % op)
    return cur


def _get(doc, parts, op):
    if not parts:
        return doc
    parent = _parent(doc, parts, op)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("%s operation does not apply: doc is missing key" % op)
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, op)]
    raise PatchError("%s operation does not apply: doc is missing path" % op)


def _add(doc, parts, value, op="add"):
    if not parts:
        return value
    parent = _parent(doc, parts, op)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, op, allow_end=True), value)
    else:
        raise PatchError("%s operation does not apply: doc is missing path" % op)
    return doc


def _remove(doc, parts, op="remove"):
    if not parts:
        raise PatchError("%s operation does not apply: cannot remove the root" % op)
    parent = _parent(doc, parts, op)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("%s operation does not apply: doc is missing key" % op)
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, op))
    raise PatchError("%s operation does not apply: doc is missing path" % op)


def equal(a, b):
    """JSON equality (numbers by value, bool distinct from numbers)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return a == b


def decode_json_patch(raw):
    try:
        ops = json.loads(raw)
    except ValueError as e:
        raise PatchDecodeError("invalid character in JSON patch: %s" % e)
    if not isinstance(ops, list):
        raise PatchDecodeError("json: cannot unmarshal object into Go value of type "
                               "jsonpatch.Patch")
    for o in ops:
        if not isinstance(o, dict):
            raise PatchDecodeError("json: cannot unmarshal %s into Go value of type "
                                   "jsonpatch.Operation" % type(o).__name__)
    return ops


def json_patch(doc, ops):
    doc = jcopy(doc)
    for o in ops:
        op = o.get("op")
        path = o.get("path")
        if not isinstance(path, str):
            raise PatchError("%s operation does not apply: missing path" % op)
        parts = _pointer(path)
        if op == "add":
            if "value" not in o:
                raise PatchError("add operation does not apply: missing value")
            doc = _add(doc, parts, jcopy(o["value"]))
        elif op == "remove":
            _remove(doc, parts)
        elif op == "replace":
            if "value" not in o:
                raise PatchError("replace operation does not apply: missing value")
            _get(doc, parts, "replace")
            if not parts:
                doc = jcopy(o["value"])
            else:
                parent = _parent(doc, parts, "replace")
                if isinstance(parent, list):
                    parent[_index(parent, parts[-1], "replace")] = jcopy(o["value"])
                else:
                    parent[parts[-1]] = jcopy(o["value"])
        elif op == "move":
            frm = _pointer(o.get("from", ""))
            v = _remove(doc, frm, "move")
            doc = _add(doc, parts, v, "move")
        elif op == "copy":
            frm = _pointer(o.get("from", ""))
            doc = _add(doc, parts, jcopy(_get(doc, frm, "copy")), "copy")
        elif op == "test":
            try:
                cur = _get(doc, parts, "test")
            except PatchError:
                cur = None
                if o.get("value") is not None:
                    raise PatchError("testing value %s failed: test failed" % path)
            if not equal(cur, o.get("value")):
                raise PatchError("testing value %s failed: test failed" % path)
        else:
            raise PatchError("Unexpected kind: %s" % op)
    return doc


# ---- RFC 7386 -------------------------------------------------------------------------------

def merge_patch(doc, patch):
    if not isinstance(patch, dict):
        return jcopy(patch)
    out = jcopy(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# ---- strategic merge patch ----------------------------------------------------------------

ORDER = "$setElementOrder/"
DELETE_PRIM = "$deleteFromPrimitiveList/"


def strategic_merge(doc, patch, node):
    if not isinstance(patch, dict):
        raise PatchDecodeError("strategic merge patch must be a JSON object")
    return _smp_map(jcopy(doc) if isinstance(doc, dict) else {}, patch, node)


def _smp_map(orig, patch, node):
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: jcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        for k in list(orig.keys()):
            if k not in retain:
                del orig[k]
    orders = {}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith(ORDER):
            orders[k[len(ORDER):]] = v
            continue
        if k.startswith(DELETE_PRIM):
            field = k[len(DELETE_PRIM):]
            if isinstance(orig.get(field), list) and isinstance(v, list):
                orig[field] = [x for x in orig[field] if not any(equal(x, d) for d in v)]
            continue
        child = node.child(k) if node is not None else None
        if v is None:
            orig.pop(k, None)
        elif isinstance(v, dict) and (child is None or child.kind in ("object", "map", "any")):
            if child is not None and child.atomic:
                orig[k] = jcopy(v)
                continue
            base = orig.get(k) if isinstance(orig.get(k), dict) else {}
            r = _smp_map(base, v, child)
            if r is None:
                orig.pop(k, None)
            else:
                orig[k] = r
        elif isinstance(v, list) and child is not None and child.kind == "array" and \
                "merge" in child.patch_strategy.split(","):
            orig[k] = _smp_list(orig.get(k) if isinstance(orig.get(k), list) else [], v, child)
        else:
            orig[k] = _strip_directives(jcopy(v))
    for field, order in orders.items():
        child = node.child(field) if node is not None else None
        if isinstance(orig.get(field), list) and isinstance(order, list):
            orig[field] = _reorder(orig[field], order, child.merge_key if child else None)
    return orig


def _strip_directives(v):
    if isinstance(v, dict):
        return {k: _strip_directives(x) for k, x in v.items() if not k.startswith("$")}
    if isinstance(v, list):
        return [_strip_directives(x) for x in v]
    return v


def _smp_list(orig, patch, node):
    key = node.merge_key
    items = node.items
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [_strip_directives(jcopy(p)) for p in patch
                if not (isinstance(p, dict) and "$patch" in p)]
    if not key or items is None or items.kind not in ("object", "map"):
        out = list(orig)
        for p in patch:
            if not any(equal(p, o) for o in out):
                out.append(jcopy(p))
        return out
    out = [jcopy(o) for o in orig]
    for p in patch:
        if not isinstance(p, dict):
            continue
        kv = p.get(key)
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == kv
                    and key in o), None)
        if p.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_strip_directives(jcopy(p)))
        else:
            r = _smp_map(out[idx], p, items)
            if r is None:
                out.pop(idx)
            else:
                out[idx] = r
    return out


def _reorder(lst, order, key):
    def ident(x):
        return x.get(key) if key and isinstance(x, dict) else x

    wanted = [ident(o) if isinstance(o, dict) else o for o in order]
    pos = {json.dumps(w, sort_keys=True): i for i, w in enumerate(wanted)}
    listed = [x for x in lst if json.dumps(ident(x), sort_keys=True) in pos]
    listed.sort(key=lambda x: pos[json.dumps(ident(x), sort_keys=True)])
    rest = [x for x in lst if json.dumps(ident(x), sort_keys=True) not in pos]
    return listed + rest
