"""Label and field selectors, as kube-apiserver parses and applies them."""
import re

from kube_status import bad_request

_LABEL_RE = re.compile(r"""\s*(?:
    (?P<not>!)\s*(?P<nkey>[^\s,!=()]+)|
    (?P<key>[^\s,!=()]+)\s*(?:
        (?P<op>==|=|!=)\s*(?P<val>[^\s,()]*)|
        \s(?P<setop>in|notin)\s*\((?P<set>[^)]*)\)
    )?
    )\s*(?:,|$)""", re.X)


def parse_labels(s):
    """[(key, op, values)] with op in = != in notin exists !; raises ApiError(400)."""
    if not s:
        return []
    out = []
    pos = 0
    while pos < len(s):
        m = _LABEL_RE.match(s, pos)
        if not m or m.end() == pos:
            raise bad_request("unable to parse requirement: found '%s', expected: "
                              "identifier" % s[pos:pos + 1])
        pos = m.end()
        if m.group("not"):
            out.append((m.group("nkey"), "!", []))
        elif m.group("op"):
            op = "!=" if m.group("op") == "!=" else "="
            out.append((m.group("key"), op, [m.group("val")]))
        elif m.group("setop"):
            vals = [v.strip() for v in m.group("set").split(",") if v.strip()]
            out.append((m.group("key"), m.group("setop"), vals))
        else:
            out.append((m.group("key"), "exists", []))
    return out


def match_labels(reqs, labels):
    for key, op, vals in reqs:
        has = key in labels
        v = labels.get(key)
        if op == "=" and (not has or v != vals[0]):
            return False
        if op == "!=" and has and v == vals[0]:
            return False
        if op == "in" and (not has or v not in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!" and has:
            return False
        if op == "invalid":
            return False
    return True


def match_selector(sel, labels):
    """A metav1.LabelSelector (matchLabels, matchExpressions) against labels; None matches
    everything, {} matches everything."""
    if sel is None:
        return True
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    reqs = [(k, "=", [v]) for k, v in (sel.get("matchLabels") or {}).items()]
    reqs += [(e.get("key"), ops.get(e.get("operator"), "invalid"), e.get("values") or [])
             for e in sel.get("matchExpressions") or []]
    return match_labels(reqs, labels or {})


# Field selectors each built-in kind supports (besides metadata.name and metadata.namespace).
FIELDS = {
    ("", "pods"): ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                   "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                   "status.podIP", "status.podIPs", "status.nominatedNodeName"],
    ("", "nodes"): ["spec.unschedulable"],
    ("", "namespaces"): ["status.phase"],
    ("", "events"): ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion",
                     "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                     "reportingComponent", "source", "type"],
    ("events.k8s.io", "events"): ["regarding.kind", "regarding.namespace", "regarding.name",
                                  "reason", "type", "reportingController"],
    ("resource.k8s.io", "resourceslices"): ["spec.nodeName", "spec.driver"],
}


def parse_fields(res, s):
    """[(path, op, value)]; raises ApiError(400) for unsupported fields."""
    if not s:
        return []
    out = []
    allowed = ["metadata.name", "metadata.namespace"] + FIELDS.get((res.group, res.plural), [])
    if res.crd is not None:
        v = res.crd_version()
        allowed += [f.get("jsonPath", "").lstrip(".") for f in v.get("selectableFields") or []]
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", part)
        if not m:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (s, part))
        path, op, val = m.group(1), m.group(2), m.group(3)
        if path not in allowed:
            if res.crd is not None:
                raise bad_request('"%s" is not a known field selector: only %s'
                                  % (path, ", ".join('"%s"' % a for a in allowed)))
            raise bad_request("field label not supported: %s" % path)
        out.append((path, "!=" if op == "!=" else "=", val))
    return out


def field_value(obj, path):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, list):
        return ",".join(str(x.get("ip", x)) if isinstance(x, dict) else str(x) for x in cur)
    return str(cur)


def match_fields(reqs, obj):
    for path, op, val in reqs:
        v = field_value(obj, path)
        if (op == "=") != (v == val):
            return False
    return True
