"""What the test API server shows besides objects: discovery documents (legacy and aggregated),
the OpenAPI v3 documents kubectl needs, and Tables for kubectl's human-readable output."""
import calendar
import hashlib
import json
import time

from kube_resources import SUB_VERBS, VERBS

GIT_VERSION = "v1.33.0"
VERSION_INFO = {
    "major": "1", "minor": "33", "emulationMajor": "1", "emulationMinor": "33",
    "minCompatibilityMajor": "1", "minCompatibilityMinor": "32",
    "gitVersion": GIT_VERSION, "gitCommit": "60a317eadfcb839692a68eab88b2096f4d708f4f",
    "gitTreeState": "clean", "buildDate": "2025-04-23T13:04:26Z", "goVersion": "go1.24.2",
    "compiler": "gc", "platform": "linux/amd64",
}

AGG_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGG_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def _verbs(res):
    return list(VERBS)


def api_resource_list(gv, resources):
    out = []
    for r in resources:
        e = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
             "kind": r.kind, "verbs": _verbs(r)}
        if r.short:
            e["shortNames"] = r.short
        if r.categories:
            e["categories"] = r.categories
        e["storageVersionHash"] = _hash(r.group + "/" + r.storage_version + "/" + r.kind)
        out.append(e)
        for sub in r.subresources:
            se = {"name": r.plural + "/" + sub, "singularName": "", "namespaced": r.namespaced,
                  "kind": r.kind, "verbs": list(SUB_VERBS)}
            if sub == "binding":
                se.update(kind="Binding", verbs=["create"])
            elif sub == "resize":
                se["verbs"] = ["get", "patch", "update"]
            elif sub == "finalize":
                se["verbs"] = ["update"]
            elif sub == "scale":
                se.update(group="autoscaling", version="v1", kind="Scale")
            out.append(se)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}


def _hash(s):
    import base64
    return base64.b64encode(hashlib.sha256(s.encode()).digest()[:8]).decode()


def api_versions(address):
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}


def api_group(group, versions):
    vs = [{"groupVersion": group + "/" + v, "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(groups):
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [api_group(g, vs) for g, vs in groups]}


def aggregated(groups, by_gv, v2beta1=False):
    """APIGroupDiscoveryList for (group, [versions]) pairs; by_gv[(g, v)] -> [Resource]."""
    items = []
    for g, vs in groups:
        versions = []
        for v in vs:
            rs = []
            for r in by_gv.get((g, v), []):
                e = {"resource": r.plural,
                     "responseKind": {"group": g, "version": v, "kind": r.kind},
                     "scope": "Namespaced" if r.namespaced else "Cluster",
                     "singularResource": r.singular, "verbs": _verbs(r)}
                if r.short:
                    e["shortNames"] = r.short
                if r.categories:
                    e["categories"] = r.categories
                subs = []
                for sub in r.subresources:
                    se = {"subresource": sub,
                          "responseKind": {"group": g, "version": v, "kind": r.kind},
                          "verbs": list(SUB_VERBS)}
                    if sub == "binding":
                        se.update(responseKind={"group": "", "version": "v1", "kind": "Binding"},
                                  verbs=["create"])
                    elif sub == "finalize":
                        se["verbs"] = ["update"]
                    elif sub == "scale":
                        se["responseKind"] = {"group": "autoscaling", "version": "v1",
                                              "kind": "Scale"}
                    subs.append(se)
                if subs:
                    e["subresources"] = subs
                rs.append(e)
            versions.append({"version": v, "resources": rs, "freshness": "Current"})
        items.append({"metadata": {"name": g, "creationTimestamp": None}, "versions": versions})
    return {"kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/" + ("v2beta1" if v2beta1 else "v2"),
            "metadata": {}, "items": items}


# ---- OpenAPI v3 ---------------------------------------------------------------------------

def gv_path(group, version):
    return "api/v1" if not group else "apis/%s/%s" % (group, version)


def openapi_root(gvs, docs):
    return {"paths": {gv_path(g, v): {"serverRelativeURL": "/openapi/v3/%s?hash=%s"
                                      % (gv_path(g, v), _doc_hash(docs(g, v)))}
                      for g, v in gvs}}


def _doc_hash(doc):
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:64].upper()


PARAMS = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
          for n in ("dryRun", "fieldManager", "fieldValidation")]


def openapi_gv(group, version, resources):
    """A per group-version document: paths with the operations kubectl inspects (the PATCH
    content types and the fieldValidation parameter, by GVK) and, for CRDs, the schemas."""
    paths = {}
    schemas = {}
    prefix = "/api/v1" if not group else "/apis/%s/%s" % (group, version)
    for r in resources:
        gvk = {"group": group, "version": version, "kind": r.kind}
        base = prefix + ("/namespaces/{namespace}/" if r.namespaced else "/") + r.plural
        ctypes = ["application/json-patch+json", "application/merge-patch+json",
                  "application/apply-patch+yaml"]
        if r.builtin:
            ctypes.insert(2, "application/strategic-merge-patch+json")
        body = {"content": {c: {"schema": {"type": "object"}} for c in ctypes}, "required": True}
        ok = {"200": {"description": "OK"}}
        item = {
            "get": {"operationId": "read" + r.kind, "x-kubernetes-action": "get",
                    "x-kubernetes-group-version-kind": gvk, "responses": ok},
            "put": {"operationId": "replace" + r.kind, "x-kubernetes-action": "put",
                    "x-kubernetes-group-version-kind": gvk, "parameters": PARAMS,
                    "responses": ok},
            "patch": {"operationId": "patch" + r.kind, "x-kubernetes-action": "patch",
                      "x-kubernetes-group-version-kind": gvk,
                      "parameters": PARAMS + [{"name": "force", "in": "query",
                                               "schema": {"type": "boolean",
                                                          "uniqueItems": True}}],
                      "requestBody": body, "responses": ok},
            "delete": {"operationId": "delete" + r.kind, "x-kubernetes-action": "delete",
                       "x-kubernetes-group-version-kind": gvk, "responses": ok},
        }
        paths[base + "/{name}"] = item
        paths[base] = {
            "get": {"operationId": "list" + r.kind, "x-kubernetes-action": "list",
                    "x-kubernetes-group-version-kind": gvk, "responses": ok},
            "post": {"operationId": "create" + r.kind, "x-kubernetes-action": "post",
                     "x-kubernetes-group-version-kind": gvk, "parameters": PARAMS,
                     "responses": ok},
        }
        for sub in r.subresources:
            if sub in ("status", "resize"):
                paths[base + "/{name}/" + sub] = {
                    k: dict(v, operationId=v["operationId"] + sub.capitalize())
                    for k, v in item.items() if k != "delete"}
        schema = r.openapi_schema()
        if schema is not None:
            s = json.loads(json.dumps(schema))
            s["x-kubernetes-group-version-kind"] = [gvk]
            schemas["%s.%s.%s" % (".".join(reversed(group.split("."))), version, r.kind)] = s
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION},
            "paths": paths, "components": {"schemas": schemas}}


def openapi_v2(resources):
    """The protobuf OpenAPI v2 document (what kubectl 1.27 and 1.28 read to decide whether the
    server validates fields): one PATCH operation per resource, no schemas."""
    import kube_proto
    paths = []
    for r in resources:
        prefix = "/api/v1" if not r.group else "/apis/%s/%s" % (r.group, r.version)
        path = prefix + ("/namespaces/{namespace}/" if r.namespaced else "/") + r.plural + \
            "/{name}"
        paths.append((path, {"group": r.group, "version": r.version, "kind": r.kind},
                      ["dryRun", "fieldManager", "fieldValidation", "force"]))
    return kube_proto.openapi_v2(paths, "Kubernetes", GIT_VERSION)


# ---- Tables ---------------------------------------------------------------------------------

def parse_time(s):
    try:
        return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None


def human_duration(seconds):
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 60 * 2:
        return "%ds" % s
    m = s // 60
    if m < 10:
        r = s % 60
        return "%dm" % m if r == 0 else "%dm%ds" % (m, r)
    if m < 60 * 3:
        return "%dm" % m
    h = s // 3600
    if h < 8:
        r = m % 60
        return "%dh" % h if r == 0 else "%dh%dm" % (h, r)
    if h < 48:
        return "%dh" % h
    if h < 24 * 8:
        d, r = h // 24, h % 24
        return "%dd" % d if r == 0 else "%dd%dh" % (d, r)
    if h < 24 * 365 * 2:
        return "%dd" % (h // 24)
    if h < 24 * 365 * 8:
        y = h // (24 * 365)
        d = (h // 24) % 365
        return "%dy" % y if d == 0 else "%dy%dd" % (y, d)
    return "%dy" % (h // (24 * 365))


def age(obj, now):
    t = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
    return "<unknown>" if t is None else human_duration(now - t)


def _col(name, typ="string", fmt="", desc="", priority=0):
    return {"name": name, "type": typ, "format": fmt, "description": desc or name,
            "priority": priority}


NAME_COL = _col("Name", fmt="name", desc="Name must be unique within a namespace.")


def _pod_row(p, now):
    spec, st = p.get("spec") or {}, p.get("status") or {}
    cs = st.get("containerStatuses") or []
    total = len(spec.get("containers") or [])
    ready = sum(1 for c in cs if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in cs)
    reason = st.get("reason") or st.get("phase") or "Unknown"
    if spec.get("schedulingGates") and st.get("phase", "Pending") == "Pending":
        reason = "SchedulingGated"
    for c in cs:
        w = (c.get("state") or {}).get("waiting") or {}
        t = (c.get("state") or {}).get("terminated") or {}
        if w.get("reason"):
            reason = w["reason"]
        elif t.get("reason"):
            reason = t["reason"]
    if (p.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [p["metadata"].get("name", ""), "%d/%d" % (ready, total), reason, restarts,
            age(p, now), st.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            st.get("nominatedNodeName") or "<none>",
            "<none>" if not gates else "0/%d" % len(gates)]


POD_COLS = [NAME_COL, _col("Ready"), _col("Status"), _col("Restarts", "string"), _col("Age"),
            _col("IP", priority=1), _col("Node", priority=1), _col("Nominated Node", priority=1),
            _col("Readiness Gates", priority=1)]


def _node_row(n, now):
    st = n.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in st.get("conditions") or []
             if isinstance(c, dict)}
    status = "Ready" if conds.get("Ready") == "True" else \
        ("NotReady" if "Ready" in conds else "Unknown")
    if (n.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in (n["metadata"].get("labels") or {})
                   if k.startswith("node-role.kubernetes.io/"))
    info = st.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in st.get("addresses") or []
             if isinstance(a, dict)}
    return [n["metadata"].get("name", ""), status, ",".join(roles) or "<none>", age(n, now),
            info.get("kubeletVersion", ""), addrs.get("InternalIP", "<none>"),
            addrs.get("ExternalIP", "<none>"), info.get("osImage", "<unknown>"),
            info.get("kernelVersion", "<unknown>"), info.get("containerRuntimeVersion",
                                                             "<unknown>")]


NODE_COLS = [NAME_COL, _col("Status"), _col("Roles"), _col("Age"), _col("Version"),
             _col("Internal-IP", priority=1), _col("External-IP", priority=1),
             _col("OS-Image", priority=1), _col("Kernel-Version", priority=1),
             _col("Container-Runtime", priority=1)]


def _simple(cols, fn):
    return [NAME_COL] + [_col(c) for c in cols], fn


TABLES = {
    "pods": (POD_COLS, _pod_row),
    "nodes": (NODE_COLS, _node_row),
    "namespaces": _simple(["Status", "Age"], lambda o, now: [
        o["metadata"]["name"], (o.get("status") or {}).get("phase", ""), age(o, now)]),
    "configmaps": _simple(["Data", "Age"], lambda o, now: [
        o["metadata"]["name"], len(o.get("data") or {}) + len(o.get("binaryData") or {}),
        age(o, now)]),
    "leases": _simple(["Holder", "Age"], lambda o, now: [
        o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity", ""), age(o, now)]),
    "priorityclasses": _simple(["Value", "Global-Default", "Age", "PreemptionPolicy"],
                               lambda o, now: [o["metadata"]["name"], o.get("value", 0),
                                               bool(o.get("globalDefault")), age(o, now),
                                               o.get("preemptionPolicy", "")]),
    "events": _simple(["Last Seen", "Type", "Reason", "Object", "Message"], lambda o, now: [
        o["metadata"]["name"],
        human_duration(now - (parse_time(o.get("lastTimestamp") or o.get("eventTime") or
                                         o.get("deprecatedLastTimestamp") or "") or now)),
        o.get("type", ""), o.get("reason", ""),
        "%s/%s" % (((o.get("involvedObject") or o.get("regarding") or {}).get("kind") or
                    "").lower(),
                   (o.get("involvedObject") or o.get("regarding") or {}).get("name", "")),
        o.get("message") or o.get("note") or ""]),
    "crds": _simple(["Created At"], lambda o, now: [
        o["metadata"]["name"], o["metadata"].get("creationTimestamp")]),
    "webhooks": _simple(["Webhooks", "Age"], lambda o, now: [
        o["metadata"]["name"], len(o.get("webhooks") or []), age(o, now)]),
}


def _jsonpath_get(obj, path):
    """A value for the simple JSONPaths printer columns use (.a.b, .a[0].b, .a['k'])."""
    import re
    cur = obj
    for tok in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]", path):
        name, idx, k1, k2 = tok
        key = name or k1 or k2
        if idx:
            if not isinstance(cur, list) or int(idx) >= len(cur):
                return None
            cur = cur[int(idx)]
        else:
            if not isinstance(cur, dict) or key not in cur:
                return None
            cur = cur[key]
    return cur


def _cell(typ, v, now):
    if v is None:
        return None
    if typ == "date":
        t = parse_time(v) if isinstance(v, str) else None
        return "<invalid>" if t is None else human_duration(now - t)
    if typ == "integer":
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if typ == "number":
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if typ == "boolean":
        return v if isinstance(v, bool) else None
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":")) if isinstance(v, (dict, list)) else \
        (str(v).lower() if isinstance(v, bool) else str(v))


def columns_for(res):
    if res.crd is not None:
        v = res.crd_version()
        cols = v.get("additionalPrinterColumns")
        if cols is None:
            cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
        defs = [NAME_COL] + [_col(c.get("name", ""), c.get("type", "string"), c.get("format", ""),
                                  c.get("description", ""), c.get("priority", 0))
                             for c in cols]

        def row(o, now):
            return [o["metadata"].get("name", "")] + [
                _cell(c.get("type"), _jsonpath_get(o, c.get("jsonPath", "")), now) for c in cols]
        return defs, row
    if res.columns in TABLES:
        return TABLES[res.columns]
    return ([NAME_COL, _col("Created At", "date")],
            lambda o, now: [o["metadata"].get("name", ""), o["metadata"].get("creationTimestamp")])


def partial_metadata(obj):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {}}


def table(res, objs, list_meta, include="Metadata", headers=True):
    defs, row = columns_for(res)
    now = time.time()
    rows = []
    for o in objs:
        r = {"cells": row(o, now)}
        if include == "Object":
            r["object"] = o
        elif include != "None":
            r["object"] = partial_metadata(o)
        rows.append(r)
    t = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta}
    if headers:
        t["columnDefinitions"] = defs
    t["rows"] = rows
    return t
