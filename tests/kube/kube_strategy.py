"""What kube-apiserver's registry strategies, defaulting and built-in admission do to objects of
the kinds the test server serves (the part of it tally's inputs depend on)."""
import re

import kube_cel
from kube_status import ApiError
from kube_store import jcopy

DNS1123_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN_RE = re.compile("^" + DNS1123_SUBDOMAIN + "$")
DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile("^" + DNS1123_LABEL + "$")

SYSTEM_PRIORITY_CLASSES = [("system-cluster-critical", 2000000000),
                           ("system-node-critical", 2000001000)]
SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"]


def name_errors(name, label=False):
    """Field errors for metadata.name: (field, type, detail)."""
    if label:
        if len(name) > 63 or not _LABEL_RE.match(name):
            return [("metadata.name", "FieldValueInvalid",
                     'Invalid value: "%s": a lowercase RFC 1123 label must consist of lower case '
                     "alphanumeric characters or '-', and must start and end with an "
                     "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                     "validation is '%s')" % (name, DNS1123_LABEL))]
        return []
    if len(name) > 253 or not _SUBDOMAIN_RE.match(name):
        return [("metadata.name", "FieldValueInvalid",
                 'Invalid value: "%s": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'example.com', regex used for validation is "
                 "'%s')" % (name, DNS1123_SUBDOMAIN))]
    return []


# ---- pods ---------------------------------------------------------------------------------

def _containers(spec):
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                yield c


def _default_requests(res):
    if not isinstance(res, dict):
        return
    limits = res.get("limits")
    if isinstance(limits, dict) and limits:
        req = res.setdefault("requests", {})
        for k, v in limits.items():
            req.setdefault(k, v)


def default_pod(pod, create=True):
    """API defaulting (every write) and, on create, the DefaultTolerationSeconds admission."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    _default_requests(spec.get("resources"))
    for c in _containers(spec):
        _default_requests(c.get("resources"))
        c.setdefault("resources", {})
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        image = c.get("image") or ""
        tag = image.rsplit("/", 1)[-1]
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        for p in c.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")
    if not create:
        return
    tolerations = spec.get("tolerations") or []
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(isinstance(t, dict) and t.get("key") in (key, None, "") and
                   t.get("effect") in ("NoExecute", None, "") and
                   (t.get("key") == key or t.get("operator") == "Exists") for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 300})
    spec["tolerations"] = tolerations


def qos_class(spec):
    requests, limits = {}, {}
    best_effort = True
    guaranteed = True
    for c in _containers(spec):
        r = c.get("resources") or {}
        req = {k: v for k, v in (r.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (r.get("limits") or {}).items() if k in ("cpu", "memory")}
        if req or lim:
            best_effort = False
        if set(lim) != {"cpu", "memory"}:
            guaranteed = False
        for k in ("cpu", "memory"):
            if k in req and k in lim and str(req[k]) != str(lim[k]):
                guaranteed = False
        requests.update(req)
        limits.update(lim)
    if best_effort:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_create_errors(pod):
    spec = pod.get("spec") or {}
    errs = []
    containers = spec.get("containers")
    if not containers:
        errs.append(("spec.containers", "FieldValueRequired", "Required value"))
    seen = set()
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            if not isinstance(c, dict):
                continue
            p = "spec.%s[%d]" % (key, i)
            if not c.get("name"):
                errs.append((p + ".name", "FieldValueRequired", "Required value"))
            elif c["name"] in seen:
                errs.append((p + ".name", "FieldValueDuplicate",
                             'Duplicate value: "%s"' % c["name"]))
            seen.add(c.get("name"))
            if not c.get("image"):
                errs.append((p + ".image", "FieldValueRequired", "Required value"))
    return errs


POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)")


def pod_update_errors(old, new, resize=False):
    """Pod spec immutability (ValidatePodUpdate), in the cases tally and kubectl meet."""
    os_, ns_ = jcopy(old.get("spec") or {}), jcopy(new.get("spec") or {})
    errs = []
    og = [g.get("name") for g in os_.get("schedulingGates") or [] if isinstance(g, dict)]
    ng = [g.get("name") for g in ns_.get("schedulingGates") or [] if isinstance(g, dict)]
    for g in ng:
        if g not in og:
            errs.append(("spec.schedulingGates", "FieldValueForbidden",
                         "Forbidden: only deletion is allowed, but found new scheduling gate "
                         "'%s'" % g))
    if os_.get("nodeName") and ns_.get("nodeName") != os_.get("nodeName"):
        pass  # reported by the generic spec check below
    for s in (os_, ns_):
        s.pop("schedulingGates", None)
        s.pop("activeDeadlineSeconds", None)
        s.pop("terminationGracePeriodSeconds", None)
        for c in _containers(s):
            c.pop("image", None)
            if resize:
                c.pop("resources", None)
                c.pop("resizePolicy", None)
        if resize:
            s.pop("resources", None)
    ot = os_.pop("tolerations", None) or []
    nt = ns_.pop("tolerations", None) or []
    if any(t not in nt for t in ot):
        errs.append(("spec.tolerations", "FieldValueForbidden",
                     "Forbidden: existing toleration can not be modified except its "
                     "tolerationSeconds"))
    if os_ != ns_:
        errs.append(("spec", "FieldValueForbidden", POD_UPDATE_FORBIDDEN))
    return errs


# ---- other kinds ---------------------------------------------------------------------------

def default_namespace(ns):
    name = (ns.get("metadata") or {}).get("name", "")
    ns.setdefault("metadata", {}).setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    spec = ns.setdefault("spec", {})
    spec.setdefault("finalizers", ["kubernetes"])
    ns["status"] = {"phase": "Active"}


def default_priority_class(pc):
    pc.setdefault("preemptionPolicy", "PreemptLowerPriority")


def crd_status(crd, now):
    spec = crd.get("spec") or {}
    names = jcopy(spec.get("names") or {})
    storage = [v.get("name") for v in spec.get("versions", []) if v.get("storage")]
    return {
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": names,
        "storedVersions": storage,
    }


def default_crd(crd):
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    spec.setdefault("conversion", {"strategy": "None"})


def crd_errors(crd):
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    errs = []
    name = (crd.get("metadata") or {}).get("name", "")
    if name != "%s.%s" % (names.get("plural"), spec.get("group")):
        errs.append(("metadata.name", "FieldValueInvalid",
                     'Invalid value: "%s": must be spec.names.plural+"."+spec.group' % name))
    versions = spec.get("versions") or []
    if not versions:
        errs.append(("spec.versions", "FieldValueInvalid",
                     "Invalid value: []apiextensions.CustomResourceDefinitionVersion(nil): "
                     "must have exactly one version marked as storage version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(("spec.versions", "FieldValueInvalid",
                     "Invalid value: ...: must have exactly one version marked as storage "
                     "version"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errs.append(("spec.scope", "FieldValueNotSupported",
                     'Unsupported value: "%s": supported values: "Cluster", "Namespaced"'
                     % spec.get("scope", "")))
    if not names.get("kind"):
        errs.append(("spec.names.kind", "FieldValueRequired", "Required value"))
    return errs


def default_webhooks(cfg, mutating):
    for w in cfg.get("webhooks") or []:
        if not isinstance(w, dict):
            continue
        w.setdefault("failurePolicy", "Fail")
        w.setdefault("matchPolicy", "Equivalent")
        w.setdefault("namespaceSelector", {})
        w.setdefault("objectSelector", {})
        w.setdefault("timeoutSeconds", 10)
        if mutating:
            w.setdefault("reinvocationPolicy", "Never")
        for r in w.get("rules") or []:
            if isinstance(r, dict):
                r.setdefault("scope", "*")
        cc = w.get("clientConfig") or {}
        if isinstance(cc.get("service"), dict):
            cc["service"].setdefault("port", 443)


def webhook_errors(cfg):
    errs = []
    for i, w in enumerate(cfg.get("webhooks") or []):
        p = "webhooks[%d]" % i
        if not isinstance(w, dict):
            continue
        if not w.get("name"):
            errs.append((p + ".name", "FieldValueRequired", "Required value"))
        if w.get("sideEffects") not in ("None", "NoneOnDryRun"):
            if w.get("sideEffects") is None:
                errs.append((p + ".sideEffects", "FieldValueRequired",
                             "Required value: must specify one of None, NoneOnDryRun"))
            else:
                errs.append((p + ".sideEffects", "FieldValueNotSupported",
                             'Unsupported value: "%s": supported values: "None", "NoneOnDryRun"'
                             % w.get("sideEffects")))
        arv = w.get("admissionReviewVersions")
        if not arv:
            errs.append((p + ".admissionReviewVersions", "FieldValueRequired",
                         "Required value: must specify one of v1, v1beta1"))
        elif "v1" not in arv:
            errs.append((p + ".admissionReviewVersions", "FieldValueInvalid",
                         "Invalid value: %s: this server understands only v1 (test server)"
                         % arv))
        cc = w.get("clientConfig") or {}
        if bool(cc.get("url")) == bool(cc.get("service")):
            errs.append((p + ".clientConfig", "FieldValueRequired",
                         "Required value: exactly one of url or service is required"))
        for j, mc in enumerate(w.get("matchConditions") or []):
            q = "%s.matchConditions[%d].expression" % (p, j)
            try:
                kube_cel.compile_expr(mc.get("expression"))
            except kube_cel.CompileError as e:
                errs.append((q, "FieldValueInvalid", 'Invalid value: "%s": compilation failed: '
                             "ERROR: <input>: %s" % (mc.get("expression"), e)))
    return errs


def check_one_global_default(store_items, pc):
    if not pc.get("globalDefault"):
        return
    name = pc["metadata"]["name"]
    for rec in store_items:
        o = rec.obj
        if o.get("globalDefault") and o["metadata"]["name"] != name:
            raise ApiError(422, "Invalid", 'PriorityClass.scheduling.k8s.io "%s" is invalid: '
                           "globalDefault: Invalid value: true: PriorityClass %s is already "
                           "marked as default. Only one default can exist"
                           % (name, o["metadata"]["name"]),
                           {"name": name, "group": "scheduling.k8s.io", "kind": "PriorityClass"})


def schema_defaults(value, s):
    """Applies OpenAPI `default`s of a structural schema in place (for present parents)."""
    if not isinstance(s, dict) or not isinstance(value, dict):
        if isinstance(value, list) and isinstance(s, dict):
            for v in value:
                schema_defaults(v, s.get("items"))
        return
    for k, sub in (s.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue
        if k not in value and "default" in sub:
            value[k] = jcopy(sub["default"])
        if k in value:
            schema_defaults(value[k], sub)
    addl = s.get("additionalProperties")
    if isinstance(addl, dict):
        for k, v in value.items():
            if k not in (s.get("properties") or {}):
                schema_defaults(v, addl)
