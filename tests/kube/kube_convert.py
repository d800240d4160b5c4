"""Conversions between the served versions of one stored resource: resource.k8s.io v1beta1
against v1/v1beta2 (DeviceRequest.exactly, Device.basic), and core v1 Events against
events.k8s.io/v1. Objects are stored in the storage version's shape; everything else only
changes apiVersion."""
from kube_store import jcopy

EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                "tolerations", "capacity")

EVENT_RENAMES = [("involvedObject", "regarding"), ("message", "note"),
                 ("reportingComponent", "reportingController"), ("source", "deprecatedSource"),
                 ("firstTimestamp", "deprecatedFirstTimestamp"),
                 ("lastTimestamp", "deprecatedLastTimestamp"), ("count", "deprecatedCount")]


def _requests(obj, kind):
    spec = obj.get("spec") or {}
    if kind == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    return ((spec.get("devices") or {}).get("requests")) or []


def _to_beta1_request(r):
    ex = r.pop("exactly", None)
    if isinstance(ex, dict):
        for k in EXACT_FIELDS:
            if k in ex:
                r[k] = ex[k]
    return r


def _from_beta1_request(r):
    if "firstAvailable" in r and not any(k in r for k in EXACT_FIELDS):
        return r
    ex = {k: r.pop(k) for k in EXACT_FIELDS if k in r}
    if ex:
        r["exactly"] = ex
    return r


def _devices(obj):
    return (obj.get("spec") or {}).get("devices") or []


def convert(obj, group, kind, src, dst):
    """obj (at version src) as version dst; a new dict (the input is not changed)."""
    if src == dst:
        return obj
    out = jcopy(obj)
    if group == "resource.k8s.io":
        beta1_src, beta1_dst = src == "v1beta1", dst == "v1beta1"
        if beta1_src != beta1_dst:
            if kind in ("ResourceClaim", "ResourceClaimTemplate"):
                for r in _requests(out, kind):
                    if isinstance(r, dict):
                        (_to_beta1_request if beta1_dst else _from_beta1_request)(r)
            elif kind == "ResourceSlice":
                for d in _devices(out):
                    if not isinstance(d, dict):
                        continue
                    if beta1_dst:
                        basic = {k: d.pop(k) for k in list(d) if k != "name"}
                        if basic:
                            d["basic"] = basic
                    else:
                        d.update(d.pop("basic", None) or {})
        out["apiVersion"] = group + "/" + dst
        return out
    if kind == "Event" and {src, dst} == {"core", "events"}:
        pairs = EVENT_RENAMES if dst == "events" else [(b, a) for a, b in EVENT_RENAMES]
        for a, b in pairs:
            if a in out:
                out[b] = out.pop(a)
        out["apiVersion"] = "events.k8s.io/v1" if dst == "events" else "v1"
        return out
    out["apiVersion"] = (group + "/" if group else "") + dst
    return out


def needs(res):
    """Whether objects of res need more than an apiVersion change to be served."""
    if res.group == "resource.k8s.io":
        return (res.version == "v1beta1") != (res.storage_version == "v1beta1")
    return res.group == "events.k8s.io"


def to_served(res, obj):
    if res.group == "events.k8s.io":
        return convert(obj, "", "Event", "core", "events")
    return convert(obj, res.group, res.kind, res.storage_version, res.version)


def to_storage(res, obj):
    if res.group == "events.k8s.io":
        return convert(obj, "", "Event", "events", "core")
    out = convert(obj, res.group, res.kind, res.version, res.storage_version)
    if out is obj:
        out = dict(obj)
    out["apiVersion"] = (res.group + "/" if res.group else "") + res.storage_version
    return out
