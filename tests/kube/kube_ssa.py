"""Field ownership for the test API server: server-side apply and managedFields, after the
semantics of sigs.k8s.io/structured-merge-diff (own implementation, one API version per kind).

A field set is a Python set of paths; a path is a tuple of path elements written as fieldsV1
spells them: "f:name", 'k:{"name":"x"}', 'v:"value"'.
"""
import json

from kube_schema import ANY, Node
from kube_store import jcopy

# Fields no manager owns (the API server strips them from every field set).
STRIPPED = {("f:apiVersion",), ("f:kind",), ("f:metadata",)} | {
    ("f:metadata", "f:" + f) for f in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                       "clusterName", "generation", "managedFields",
                                       "resourceVersion")}


def _dumps(v):
    return json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _list_kind(node):
    """'map' with keys, 'set', or 'atomic' for an array node."""
    if node is None or node.kind != "array":
        return "atomic", None
    if node.list_type == "map" and node.keys:
        return "map", node.keys
    if node.list_type == "set":
        return "set", None
    return "atomic", None


def item_pe(item, node):
    kind, keys = _list_kind(node)
    if kind == "map":
        if not isinstance(item, dict):
            return "v:" + _dumps(item)
        return "k:" + _dumps({k: item[k] for k in keys if k in item})
    return "v:" + _dumps(item)


def _is_leaf(value, node):
    if node is None or node.kind == "scalar":
        return True
    if node.kind == "any":
        return not isinstance(value, dict)
    if node.kind == "array":
        return _list_kind(node)[0] == "atomic" or not isinstance(value, list)
    if node.kind in ("object", "map"):
        return node.atomic or not isinstance(value, dict)
    return True


def _child(node, key):
    if node is None:
        return None
    if node.kind == "any":
        return ANY
    return node.child(key) or ANY


def to_set(value, node, path=(), out=None):
    """The paths a value sets (structured-merge-diff's ToFieldSet)."""
    if out is None:
        out = set()
    if _is_leaf(value, node):
        out.add(path)
        return out
    if isinstance(value, list):
        seen = set()
        for item in value:
            pe = item_pe(item, node)
            if pe in seen:
                continue
            seen.add(pe)
            to_set(item, node.items or ANY, path + (pe,), out)
            out.add(path + (pe,))
        return out
    for k, v in value.items():
        c = _child(node, k)
        p = path + ("f:" + k,)
        to_set(v, c, p, out)
        if v is None or (isinstance(v, dict) and not v) or not _declared(node, k):
            out.add(p)
    return out


def _declared(node, key):
    return node is not None and node.kind == "object" and key in node.props


def _empty(v):
    return v is None or (isinstance(v, (dict, list)) and not v)


MISSING = object()


def compare(lhs, rhs, node, path=(), res=None):
    """(added, modified, removed) between two values; MISSING is an absent value (a JSON null
    is a value)."""
    if res is None:
        res = (set(), set(), set())
    added, modified, removed = res
    if lhs is MISSING and rhs is MISSING:
        return res
    some = rhs if lhs is MISSING or lhs is None else lhs
    leaf = _is_leaf(some, node) or \
        (lhs not in (None, MISSING) and rhs not in (None, MISSING) and
         type(lhs) is not type(rhs)) or \
        (_empty(_val(lhs)) and _empty(_val(rhs)))
    if leaf:
        if lhs is MISSING:
            added.add(path)
        elif rhs is MISSING:
            removed.add(path)
        elif _dumps(lhs) != _dumps(rhs):
            modified.add(path)
        return res
    if lhs is MISSING:
        added.add(path)
    elif rhs is MISSING:
        removed.add(path)
    if isinstance(some, list) or isinstance(_val(rhs), list):
        lm, rm = {}, {}
        order = []
        for item in _val(lhs) or []:
            pe = item_pe(item, node)
            if pe not in lm:
                lm[pe] = item
                order.append(pe)
        for item in _val(rhs) or []:
            pe = item_pe(item, node)
            if pe not in rm:
                rm[pe] = item
                if pe not in lm:
                    order.append(pe)
        for pe in order:
            compare(lm.get(pe, MISSING), rm.get(pe, MISSING), node.items or ANY, path + (pe,),
                    res)
        return res
    lmap = _val(lhs) if isinstance(_val(lhs), dict) else {}
    rmap = _val(rhs) if isinstance(_val(rhs), dict) else {}
    keys = list(lmap.keys()) + [k for k in rmap if k not in lmap]
    for k in keys:
        compare(lmap.get(k, MISSING), rmap.get(k, MISSING), _child(node, k), path + ("f:" + k,),
                res)
    return res


def _val(v):
    return None if v is MISSING else v


def merge(lhs, rhs, node):
    """rhs merged into lhs (structured-merge-diff's Merge)."""
    if rhs is None:
        return jcopy(lhs)
    if lhs is None or _is_leaf(rhs, node) or type(lhs) is not type(rhs) or \
            (_empty(lhs) and _empty(rhs)):
        return jcopy(rhs)
    if isinstance(rhs, list):
        return _merge_list(lhs, rhs, node)
    out = {}
    for k in list(lhs.keys()) + [k for k in rhs if k not in lhs]:
        v = merge(lhs.get(k), rhs.get(k), _child(node, k))
        if v is not None or k in rhs or k in lhs:
            out[k] = v
    return out


def _merge_list(lhs, rhs, node):
    items = node.items or ANY
    lpes = [item_pe(x, node) for x in lhs]
    rpes = [item_pe(x, node) for x in rhs]
    lmap, rmap = {}, {}
    for pe, x in zip(lpes, lhs):
        lmap.setdefault(pe, x)
    for pe, x in zip(rpes, rhs):
        rmap.setdefault(pe, x)
    shared = [pe for pe in rpes if pe in lmap]
    nxt = shared.pop(0) if shared else None
    merged_rhs = set()
    out = []
    li = ri = 0
    L, R = len(lpes), len(rpes)
    while li < L or ri < R:
        if li < L and ri < R:
            pe = lpes[li]
            if pe == rpes[ri]:
                merged_rhs.add(pe)
                out.append(merge(lmap[pe], rmap[pe], items))
                li += 1
                ri += 1
                nxt = shared.pop(0) if shared else None
                continue
            if pe in rmap and nxt is not None and nxt != lpes[li]:
                li += 1
                continue
        if li < L:
            pe = lpes[li]
            if pe not in rmap:
                out.append(jcopy(lhs[li]))
                li += 1
                continue
            elif pe in merged_rhs:
                li += 1
        if ri < R:
            pe = rpes[ri]
            merged_rhs.add(pe)
            out.append(merge(lmap.get(pe), rmap[pe], items))
            ri += 1
            if nxt is not None and nxt == pe:
                nxt = shared.pop(0) if shared else None
    return out


def remove_items(value, paths, node, path=()):
    """value without the given paths (and without containers emptied by that)."""
    if not isinstance(value, (dict, list)) or _is_leaf(value, node):
        return value
    if isinstance(value, list):
        out = []
        for item in value:
            p = path + (item_pe(item, node),)
            if p in paths:
                continue
            out.append(remove_items(item, paths, node.items or ANY, p))
        return out
    out = {}
    for k, v in value.items():
        p = path + ("f:" + k,)
        if p in paths:
            continue
        nv = remove_items(v, paths, _child(node, k), p)
        if isinstance(nv, (dict, list)) and not nv and not _empty(v):
            continue
        out[k] = nv
    return out


def _node_at(node, path):
    for pe in path:
        if node is None:
            return None
        if pe.startswith("f:"):
            node = _child(node, pe[2:])
        else:
            node = node.items if node.kind == "array" else ANY
    return node


def ensure_named(paths, root):
    """paths plus every ancestor that is a declared field of a struct."""
    out = set(paths)
    for p in paths:
        node = root
        for i, pe in enumerate(p[:-1]):
            if pe.startswith("f:") and _declared(node, pe[2:]):
                out.add(p[:i + 1])
            node = _node_at(node, (pe,))
    return out


def prefixed(paths, prefix):
    n = len(prefix)
    return {p for p in paths if p[:n] == prefix}


def fmt_path(path):
    out = []
    for pe in path:
        if pe.startswith("f:"):
            out.append("." + pe[2:])
        elif pe.startswith("k:"):
            kv = json.loads(pe[2:])
            out.append("[" + ",".join("%s=%s" % (k, json.dumps(kv[k])) for k in sorted(kv)) + "]")
        elif pe.startswith("v:"):
            out.append("[=%s]" % pe[2:])
        else:
            out.append("[%s]" % pe[2:])
    return "".join(out)


# ---- managedFields encoding ------------------------------------------------------------------

def to_fields_v1(paths):
    tree = {}
    for p in sorted(paths):
        node = tree
        for pe in p:
            node = node.setdefault(pe, {})
    for p in paths:
        node = tree
        for pe in p:
            node = node[pe]
        if node and "." not in node:
            node["."] = {}
    return _sort_tree(tree)


def _sort_tree(t):
    return {k: _sort_tree(t[k]) for k in sorted(t, key=lambda k: (k != ".", k))}


def from_fields_v1(tree, path=(), out=None):
    if out is None:
        out = set()
    for k, sub in (tree or {}).items():
        if k == ".":
            out.add(path)
        elif not sub:
            out.add(path + (k,))
        else:
            from_fields_v1(sub, path + (k,), out)
    return out


class Manager:
    __slots__ = ("manager", "operation", "api_version", "subresource", "time", "fields")

    def __init__(self, manager, operation, api_version, subresource="", time=None, fields=None):
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.subresource = subresource or ""
        self.time = time
        self.fields = fields if fields is not None else set()

    def ident(self):
        d = {"manager": self.manager, "operation": self.operation}
        if self.operation != "Apply":
            d["apiVersion"] = self.api_version
        if self.subresource:
            d["subresource"] = self.subresource
        return json.dumps(d, separators=(",", ":"))

    def printable(self):
        s = json.dumps(self.manager)
        if self.subresource:
            s += " with subresource %s" % json.dumps(self.subresource)
        if self.operation == "Update":
            s += " using %s" % self.api_version
        return s


def decode_managers(obj):
    out = {}
    for e in (obj.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(e, dict):
            continue
        m = Manager(e.get("manager", ""), e.get("operation", "Update"), e.get("apiVersion", ""),
                    e.get("subresource", ""), e.get("time"),
                    from_fields_v1(e.get("fieldsV1") or {}))
        out[m.ident()] = m
    return out


def encode_managers(managers):
    entries = []
    for m in managers.values():
        if not m.fields:
            continue
        e = {"manager": m.manager, "operation": m.operation, "apiVersion": m.api_version}
        if m.time:
            e["time"] = m.time
        e["fieldsType"] = "FieldsV1"
        e["fieldsV1"] = to_fields_v1(m.fields)
        if m.subresource:
            e["subresource"] = m.subresource
        entries.append(e)
    entries.sort(key=lambda e: (e["operation"], e.get("time") or "", e["manager"],
                                e["apiVersion"], e.get("subresource", "")))
    return entries


class ApplyConflict(Exception):
    def __init__(self, conflicts):
        # conflicts: list of (Manager, path)
        self.conflicts = conflicts
        Exception.__init__(self, self.message())

    def message(self):
        c = self.conflicts
        if len(c) == 1:
            return "Apply failed with 1 conflict: conflict with %s: %s" % (
                c[0][0].printable(), fmt_path(c[0][1]))
        by = {}
        for m, p in c:
            by.setdefault(m.ident(), (m, []))[1].append(p)
        lines = []
        for ident in sorted(by):
            m, ps = by[ident]
            lines.append("conflicts with %s:" % m.printable())
            lines.extend("- %s" % fmt_path(p) for p in ps)
        return "Apply failed with %d conflicts: %s" % (len(c), "\n".join(lines))

    def causes(self):
        return [{"reason": "FieldManagerConflict",
                 "message": "conflict with %s" % m.printable(), "field": fmt_path(p)}
                for m, p in self.conflicts]


def _filter(paths, keep):
    """paths without STRIPPED ones and, via keep(path) -> bool, the reset fields."""
    out = set()
    for p in paths:
        if p in STRIPPED or (len(p) >= 2 and p[:2] in STRIPPED):
            continue
        if keep(p):
            out.add(p)
    return out


def _settle(live, new, node, managers, actor_ident, keep, force):
    """Conflicts and removals against the other managers (structured-merge-diff's update)."""
    added, modified, removed = compare(live, new, node)
    changed = _filter(added | modified, keep)
    removed = _filter(removed, keep)
    conflicts = []
    for ident, m in managers.items():
        if ident == actor_ident:
            continue
        both = m.fields & changed
        conflicts.extend((m, p) for p in sorted(both))
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    for ident, m in list(managers.items()):
        if ident == actor_ident:
            continue
        m.fields = (m.fields - changed) - removed
        if not m.fields:
            del managers[ident]
    return changed, removed


def update(live, new, node, managers, actor, now, keep=lambda p: True):
    """Ownership after a non-apply write of `new` over `live` by manager `actor`."""
    changed, removed = _settle(live or {}, new, node, managers, actor.ident(), keep, True)
    prev = managers.get(actor.ident())
    if changed:
        fields = ((prev.fields if prev else set()) - removed) | changed
        actor.fields = fields
        actor.time = now
        managers[actor.ident()] = actor
    elif prev is not None:
        prev.fields = prev.fields - removed
        if not prev.fields:
            del managers[actor.ident()]
    return managers


def apply(live, config, node, managers, actor, now, force, keep=lambda p: True):
    """(new object, managers) after `actor` applies `config` over `live` (None: create)."""
    base = live if live is not None else {}
    merged = merge(base, config, node)
    prev = managers.get(actor.ident())
    last = prev.fields if prev else set()
    new_set = _filter(to_set(config, node), keep)
    if last:
        others = set()
        for ident, m in managers.items():
            if ident != actor.ident():
                others |= m.fields
        owned = ensure_named(others | new_set, node)
        gone = {p for p in ensure_named(last, node) if p not in owned}
        gone = _filter(gone, keep)
        if gone:
            merged = remove_items(merged, gone, node)
    _settle(base, merged, node, managers, actor.ident(), keep, force)
    actor.fields = new_set
    if _dumps(base) != _dumps(merged) or prev is None or prev.fields != new_set:
        actor.time = now
    else:
        actor.time = prev.time
    if new_set:
        managers[actor.ident()] = actor
    else:
        managers.pop(actor.ident(), None)
    return merged, managers


def keep_for(subresource, status_node):
    """A keep(path) filter: the main resource of a kind with a status subresource does not own
    status; the status subresource owns only status (and metadata labels/annotations when
    status_node says so)."""
    if subresource == "status":
        extra = status_node or ()

        def keep(p):
            return p[:1] == ("f:status",) or any(p[:len(e)] == e for e in extra)
        return keep
    if subresource == "main-with-status":
        return lambda p: p[:1] != ("f:status",)
    return lambda p: True


__all__ = ["Node", "apply", "update", "decode_managers", "encode_managers", "Manager",
           "ApplyConflict", "keep_for", "to_set", "merge", "compare"]
