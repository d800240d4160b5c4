"""The kinds the test API server serves: built-in resources and the ones CRDs add, with what
discovery, routing, schemas and tables need to know about them."""
import copy

import kube_schema

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = ["get", "patch", "update"]


class Resource:
    """One resource at one served version."""

    def __init__(self, group, version, plural, kind, namespaced, singular=None, short=None,
                 categories=None, subresources=(), go_ns=None, go_type=None, crd=None,
                 storage_version=None, columns=None, list_kind=None, status_keeps=()):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.list_kind = list_kind or kind + "List"
        self.namespaced = namespaced
        self.singular = singular or kind.lower()
        self.short = list(short or [])
        self.categories = list(categories or [])
        self.subresources = list(subresources)
        self.go_ns = go_ns
        self.go_type = go_type or kind
        self.crd = crd
        self.storage_version = storage_version or version
        self.columns = columns
        # Metadata fields a status write may change besides status (pods and nodes).
        self.status_keeps = status_keeps
        self._node = None

    @property
    def gr(self):
        return (self.group, self.plural)

    @property
    def api_version(self):
        return self.version if not self.group else self.group + "/" + self.version

    @property
    def qualified(self):
        """The GroupResource string used in messages: pods, queues.scheduling.run.ai."""
        return self.plural if not self.group else self.plural + "." + self.group

    @property
    def qualified_kind(self):
        return self.kind if not self.group else self.kind + "." + self.group

    @property
    def has_status(self):
        return "status" in self.subresources

    @property
    def builtin(self):
        return self.crd is None

    def node(self):
        if self._node is None:
            if self.crd is not None:
                self._node = kube_schema.from_openapi(self.openapi_schema() or
                                                      {"type": "object",
                                                       "x-kubernetes-preserve-unknown-fields":
                                                       True}, root=True)
                if not self.openapi_schema():
                    self._node.preserve = True
            else:
                self._node = kube_schema.builtin().node(self.go_ns, self.go_type)
        return self._node

    def openapi_schema(self):
        if self.crd is None:
            return None
        for v in self.crd["spec"].get("versions", []):
            if v.get("name") == self.version:
                return (v.get("schema") or {}).get("openAPIV3Schema")
        return None

    def crd_version(self):
        for v in (self.crd or {}).get("spec", {}).get("versions", []):
            if v.get("name") == self.version:
                return v
        return {}


def _pod_columns():
    return "pods"


def builtins(dra_versions):
    R = Resource
    out = [
        R("", "v1", "pods", "Pod", True, short=["po"], categories=["all"],
          subresources=["status", "resize", "binding", "ephemeralcontainers"], go_ns="",
          columns="pods", status_keeps=(("f:metadata", "f:labels"),
                                        ("f:metadata", "f:annotations"))),
        R("", "v1", "nodes", "Node", False, short=["no"], subresources=["status"], go_ns="",
          columns="nodes", status_keeps=(("f:metadata", "f:labels"),
                                         ("f:metadata", "f:annotations"))),
        R("", "v1", "namespaces", "Namespace", False, short=["ns"],
          subresources=["status", "finalize"], go_ns="", columns="namespaces"),
        R("", "v1", "events", "Event", True, short=["ev"], go_ns="", columns="events"),
        R("", "v1", "configmaps", "ConfigMap", True, short=["cm"], go_ns="", columns="configmaps"),
        R("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short=["pc"],
          go_ns="scheduling.k8s.io", columns="priorityclasses"),
        R("coordination.k8s.io", "v1", "leases", "Lease", True, go_ns="coordination.k8s.io",
          columns="leases"),
        R("events.k8s.io", "v1", "events", "Event", True, short=["ev"], go_ns="events.k8s.io",
          columns="events"),
        R("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
          False, short=["crd", "crds"], categories=["api-extensions"], subresources=["status"],
          go_ns="apiextensions.k8s.io", columns="crds"),
        R("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
          "MutatingWebhookConfiguration", False, categories=["api-extensions"],
          go_ns="admissionregistration.k8s.io", columns="webhooks"),
        R("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
          "ValidatingWebhookConfiguration", False, categories=["api-extensions"],
          go_ns="admissionregistration.k8s.io", columns="webhooks"),
    ]
    order = [v for v in ("v1", "v1beta2", "v1beta1") if v in dra_versions]
    storage = order[0] if order else None
    for v in order:
        ns = "resource.k8s.io/" + v
        out += [
            R("resource.k8s.io", v, "resourceclaims", "ResourceClaim", True,
              subresources=["status"], go_ns=ns, storage_version=storage),
            R("resource.k8s.io", v, "resourceclaimtemplates", "ResourceClaimTemplate", True,
              go_ns=ns, storage_version=storage),
            R("resource.k8s.io", v, "resourceslices", "ResourceSlice", False, go_ns=ns,
              storage_version=storage),
            R("resource.k8s.io", v, "deviceclasses", "DeviceClass", False, go_ns=ns,
              storage_version=storage),
        ]
    return out


def from_crd(crd):
    """The Resources a CRD serves (one per served version), in the CRD's version order."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    storage = next((v.get("name") for v in spec.get("versions", []) if v.get("storage")), None)
    out = []
    for v in spec.get("versions", []):
        if not v.get("served"):
            continue
        subs = []
        if "status" in (v.get("subresources") or {}):
            subs.append("status")
        if "scale" in (v.get("subresources") or {}):
            subs.append("scale")
        out.append(Resource(group, v["name"], names.get("plural", ""), names.get("kind", ""),
                            spec.get("scope") == "Namespaced", singular=names.get("singular"),
                            short=names.get("shortNames"), categories=names.get("categories"),
                            subresources=subs, crd=copy.deepcopy(crd), storage_version=storage,
                            list_kind=names.get("listKind")))
    return out


# Group versions in discovery order: built-in groups first (as kube-apiserver orders them),
# then CRD groups by name.
BUILTIN_GROUP_ORDER = ["", "events.k8s.io", "coordination.k8s.io", "scheduling.k8s.io",
                       "apiextensions.k8s.io", "admissionregistration.k8s.io", "resource.k8s.io"]


def version_priority(v):
    """Kubernetes' version ordering: GA > beta > alpha, higher numbers first."""
    import re
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (3, 0, 0, v)
    major = int(m.group(1))
    stage = {"alpha": 2, "beta": 1, None: 0}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, v)
