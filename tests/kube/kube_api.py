"""The Kubernetes API of the test API server, independent of HTTP: routing of resource paths,
authorization, list/watch/get/create/update/patch/delete with kube-apiserver's semantics, CRD
lifecycle, admission webhooks and the test-control state (faults, tokens, RBAC rules)."""
import bisect
import gc
import json
import os
import random
import threading
import time
import uuid

import kube_admission
import kube_convert
import kube_patch
import kube_present
import kube_proto
import kube_resources
import kube_schema
import kube_select
import kube_ssa
import kube_strategy
import kube_status as st
from kube_status import ApiError
from kube_store import Expired, Store, decode_continue, dumps, encode_continue, head, \
    jcopy, now_rfc3339, with_head

PATCH_TYPES_BUILTIN = ["application/json-patch+json", "application/merge-patch+json",
                       "application/strategic-merge-patch+json", "application/apply-patch+yaml"]
PATCH_TYPES_CR = ["application/json-patch+json", "application/merge-patch+json",
                  "application/apply-patch+yaml"]
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
# Resources whose DELETE answers the deleted object (the others answer a Success Status).
RETURN_DELETED = {("", "pods"), ("", "namespaces")}
VERB_OF = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
           "DELETE": "delete"}


class User:
    def __init__(self, name, groups, uid=""):
        self.name = name
        self.groups = list(groups)
        self.uid = uid

    @property
    def master(self):
        return "system:masters" in self.groups


class Request:
    def __init__(self, method, path, query, headers, body, user, user_agent=""):
        self.method = method
        self.path = path
        self.query = query  # {name: first value}
        self.headers = headers  # lower-case names
        self.body = body
        self.user = user
        self.user_agent = user_agent
        self.warnings = []


class Response:
    def __init__(self, code, body, headers=None, ctype="application/json"):
        self.code = code
        self.body = body
        self.headers = headers or []
        self.ctype = ctype


class WatchResponse:
    """A watch stream for the HTTP layer to serve."""

    def __init__(self, api, res, watcher, timeout, bookmarks, initial_end_rv, table, want):
        self.api = api
        self.res = res
        self.watcher = watcher
        self.timeout = timeout
        self.bookmarks = bookmarks
        self.initial_end_rv = initial_end_rv  # send the initial-events-end BOOKMARK after them
        self.table = table
        self.want = want  # include param for tables
        self.ctype = "application/json"

    def encode(self, type_, rec):
        if self.table:
            obj = self.api.served_obj(self.res, rec)
            t = kube_present.table(self.res, [obj], {"resourceVersion": str(rec.rv)},
                                   self.want)
            return b'{"type":"' + type_.encode() + b'","object":' + dumps(t) + b"}\n"
        return b'{"type":"' + type_.encode() + b'","object":' + \
            self.api.encode(self.res, rec) + b"}\n"

    def bookmark(self, rv, initial_end=False):
        meta = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.res.kind, "apiVersion": self.res.api_version, "metadata": meta}
        return b'{"type":"BOOKMARK","object":' + dumps(obj) + b"}\n"

    def close(self):
        self.api.store.unwatch(self.watcher)


def _qbool(v):
    return v in ("1", "true", "True")


def _rand_suffix():
    return "".join(random.choice(NAME_CHARS) for _ in range(5))


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def add(self, rule):
        with self.lock:
            if rule.get("action") == "clear":
                self.rules = []
            else:
                rule = dict(rule)
                rule.setdefault("count", 1)
                self.rules.append(rule)

    def matches_res(self, rule, res):
        want = rule.get("resource")
        if not want:
            return True
        if res is None:
            return False
        return want in (res.plural, "%s/%s" % (res.group, res.plural), res.qualified,
                        "%s/%s" % (res.group or "core", res.plural))

    def take(self, action, res, verb=None):
        with self.lock:
            for r in self.rules:
                if r["action"] != action or r.get("count", 1) <= 0:
                    continue
                if not self.matches_res(r, res):
                    continue
                if verb is not None and r.get("verb", "any") not in ("any", verb):
                    continue
                r["count"] -= 1
                return r
        return None

    def latency_ms(self, res):
        with self.lock:
            return sum(r.get("ms", 0) for r in self.rules
                       if r["action"] == "latency" and self.matches_res(r, res))

    def active(self, action):
        with self.lock:
            return [r for r in self.rules if r["action"] == action and r.get("count", 1) > 0]


class Api:
    def __init__(self, dra_versions=("v1", "v1beta2", "v1beta1"), omit_groups=(), history=10000,
                 watch_queue=100000, service_urls=None, aggregated_discovery=True,
                 webhook_client_cert=None):
        self.store = Store(history=history, watch_queue=watch_queue)
        self.dra_versions = list(dra_versions)
        self.omitted = set(omit_groups)
        self.aggregated_discovery = aggregated_discovery
        self.faults = Faults()
        self.rbac = {}  # user -> [rule]
        self.dispatcher = kube_admission.Dispatcher(service_urls or {}, webhook_client_cert)
        self.registry_lock = threading.Lock()
        self.builtin = kube_resources.builtins(self.dra_versions)
        self.by_gvr = {}
        self.by_gv = {}
        self.refresh()
        self._seed_system()

    # ---- registry -------------------------------------------------------------------------

    def storage_gr(self, res):
        if res.group == "events.k8s.io" and res.plural == "events":
            return ("", "events")
        return (res.group, res.plural)

    def refresh(self):
        """Rebuilds the served resources from the built-ins and the stored CRDs."""
        with self.registry_lock:
            resources = list(self.builtin)
            for rec in self.store.items(("apiextensions.k8s.io",
                                         "customresourcedefinitions")).values():
                crd = rec.obj
                if crd.get("metadata", {}).get("deletionTimestamp"):
                    continue
                resources.extend(kube_resources.from_crd(crd))
            by_gvr, by_gv = {}, {}
            for r in resources:
                by_gvr[(r.group, r.version, r.plural)] = r
                by_gv.setdefault((r.group, r.version), []).append(r)
            self.by_gvr, self.by_gv = by_gvr, by_gv

    def served(self, group):
        return group not in self.omitted

    def lookup(self, group, version, plural):
        if not self.served(group):
            return None
        return self.by_gvr.get((group, version, plural))

    def groups(self):
        """[(group, [versions, preferred first])] in discovery order."""
        seen = {}
        for (g, v) in self.by_gv:
            if self.served(g):
                seen.setdefault(g, []).append(v)
        order = [g for g in kube_resources.BUILTIN_GROUP_ORDER if g in seen] + \
            sorted(g for g in seen if g not in kube_resources.BUILTIN_GROUP_ORDER)
        return [(g, sorted(seen[g], key=kube_resources.version_priority)) for g in order]

    def versions_of(self, res):
        return [v for (g, v, p) in self.by_gvr if g == res.group and p == res.plural]

    def resource_at(self, res, version):
        return self.by_gvr.get((res.group, version, res.plural), res)

    def storage_res(self, res):
        return self.resource_at(res, res.storage_version)

    def all_resources(self):
        return list(self.by_gvr.values())

    # ---- encoding ---------------------------------------------------------------------------

    def encode(self, res, rec):
        """rec at res's version, with apiVersion and kind (watch events, single objects)."""
        if kube_convert.needs(res):
            return dumps(kube_convert.to_served(res, rec.obj))
        return with_head(head(res.api_version, res.kind, res.builtin), rec.body)

    def encode_item(self, res, rec):
        """rec as a LIST item: built-in items carry no apiVersion/kind, custom ones do."""
        if kube_convert.needs(res):
            o = kube_convert.to_served(res, rec.obj)
            if res.builtin:
                o = {k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
            return dumps(o)
        if res.builtin:
            return rec.body
        return with_head(head(res.api_version, res.kind, False), rec.body)

    def served_obj(self, res, rec):
        if kube_convert.needs(res):
            return kube_convert.to_served(res, rec.obj)
        o = dict(rec.obj)
        o["apiVersion"] = res.api_version
        return o

    def to_version(self, res, obj, version):
        """obj (at res.version) as another served version of the same resource."""
        if obj is None or version == res.version:
            return obj
        target = self.resource_at(res, version)
        stored = kube_convert.to_storage(res, obj)
        return kube_convert.to_served(target, stored) if kube_convert.needs(target) else \
            dict(stored, apiVersion=target.api_version)

    # ---- seeding ------------------------------------------------------------------------------

    def _seed_system(self):
        for ns in kube_strategy.SYSTEM_NAMESPACES:
            o = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            kube_strategy.default_namespace(o)
            self.put_object(o)
        for name, value in kube_strategy.SYSTEM_PRIORITY_CLASSES:
            self.put_object({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                             "metadata": {"name": name}, "value": value,
                             "description": "Used for system critical pods that must run in "
                             "the cluster, but can be moved to another node if necessary."
                             if name == "system-cluster-critical" else
                             "Used for system critical pods that must not be moved from their "
                             "current node.", "preemptionPolicy": "PreemptLowerPriority"})

    def find_resource(self, api_version, kind):
        group, _, version = api_version.rpartition("/")
        for r in self.by_gv.get((group, version), []):
            if r.kind == kind:
                return r
        return None

    def put_object(self, obj, validate_webhooks=True, copy=True):
        """Stores obj as it is (no admission, no webhook), filling the metadata the server
        owns; returns the stored object. For seeds and /_test/put. copy=False: obj is the
        caller's no longer (it may be changed and stored)."""
        res = self.find_resource(obj.get("apiVersion", ""), obj.get("kind", ""))
        if res is None:
            raise st.bad_request("no resource is served for %s %s"
                                 % (obj.get("apiVersion"), obj.get("kind")))
        if copy:
            obj = jcopy(obj)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name"):
            raise st.bad_request("metadata.name is required")
        if res.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if res.gr == ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") or \
                res.gr == ("admissionregistration.k8s.io", "validatingwebhookconfigurations"):
            errs = kube_strategy.webhook_errors(obj)
            if errs and validate_webhooks:
                raise st.invalid(res, meta["name"], errs)
        if res.gr == ("apiextensions.k8s.io", "customresourcedefinitions"):
            kube_strategy.default_crd(obj)
            obj.setdefault("status", kube_strategy.crd_status(obj, now_rfc3339()))
        stored = kube_convert.to_storage(res, obj)
        gr = self.storage_gr(res)
        key = self.key(res, meta.get("namespace"), meta["name"])
        with self.store.lock:
            cur = self.store.get(gr, key)
            m = stored["metadata"]
            if cur is not None:
                m.setdefault("uid", cur.obj["metadata"].get("uid"))
                m.setdefault("creationTimestamp", cur.obj["metadata"].get("creationTimestamp"))
            m.setdefault("uid", str(uuid.uuid4()))
            m.setdefault("creationTimestamp", now_rfc3339())
            if res.crd is not None or res.gr == ("apiextensions.k8s.io",
                                                 "customresourcedefinitions"):
                m.setdefault("generation", 1)
            rv = self.store.next_rv()
            m["resourceVersion"] = str(rv)
            self.store.put(gr, key, stored, rv)
        if gr == ("apiextensions.k8s.io", "customresourcedefinitions"):
            self.refresh()
        return stored

    def put_objects(self, objs):
        """put_object for many objects at once (CRDs first), under one lock hold."""
        objs = sorted(objs, key=lambda o: o.get("kind") != "CustomResourceDefinition")
        crds = [o for o in objs if o.get("kind") == "CustomResourceDefinition"]
        for o in crds:
            self.put_object(o)
        rest = objs[len(crds):]
        self.store.begin_bulk()
        gc_was = gc.isenabled()
        gc.disable()
        try:
            return [self.put_object(o, copy=False) for o in rest]
        finally:
            if gc_was:
                gc.enable()
            self.store.end_bulk()

    def delete_object(self, api_version, kind, namespace, name):
        res = self.find_resource(api_version, kind)
        if res is None:
            raise st.bad_request("no resource is served for %s %s" % (api_version, kind))
        gr = self.storage_gr(res)
        key = self.key(res, namespace, name)
        with self.store.lock:
            rec = self.store.remove_now(gr, key)
        if rec is None:
            raise st.not_found(res, name)
        self._after_delete(gr, rec.obj)

    def key(self, res, ns, name):
        return "%s/%s" % (ns, name) if res.namespaced else name

    # ---- authorization ----------------------------------------------------------------------

    def authorize(self, user, verb, res, sub, ns, name):
        if user.master:
            return
        for rule in self.rbac.get(user.name, []):
            verbs = rule.get("verbs") or []
            groups = rule.get("apiGroups", [rule.get("group", "")])
            resources = rule.get("resources", [rule.get("resource", "")])
            want = res.plural + ("/" + sub if sub else "")
            if "*" not in verbs and verb not in verbs:
                continue
            if "*" not in groups and res.group not in groups:
                continue
            if "*" not in resources and want not in resources and \
                    not (sub and res.plural + "/*" in resources):
                continue
            if rule.get("namespaces") and ns not in rule["namespaces"]:
                continue
            if rule.get("resourceNames") and name not in rule["resourceNames"]:
                continue
            return
        r = res.plural + ("/" + sub if sub else "")
        if ns:
            why = 'User "%s" cannot %s resource "%s" in API group "%s" in the namespace "%s"' \
                % (user.name, verb, r, res.group, ns)
        else:
            why = 'User "%s" cannot %s resource "%s" in API group "%s" at the cluster scope' \
                % (user.name, verb, r, res.group)
        raise st.forbidden(res.group, res.plural, name, why)

    # ---- routing ------------------------------------------------------------------------------

    def route(self, group, version, rest):
        """(res, ns, name, sub) for the path after /api/v1 or /apis/G/V; raises 404."""
        if not self.served(group) or (group, version) not in self.by_gv:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            r = self.lookup(group, version, rest[2])
            if r is not None and r.namespaced:
                ns, rest = rest[1], rest[2:]
        res = self.lookup(group, version, rest[0]) if rest else None
        if res is None or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in res.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        if ns is None and res.namespaced and name is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        return res, ns, name, sub

    def verb(self, method, name, query):
        if method == "GET":
            if _qbool(query.get("watch")):
                return "watch"
            return "get" if name else "list"
        if method == "DELETE" and not name:
            return "deletecollection"
        return VERB_OF.get(method, method.lower())

    def handle(self, req, group, version, rest):
        res, ns, name, sub = self.route(group, version, rest)
        verb = self.verb(req.method, name, req.query)
        self.authorize(req.user, verb, res, sub, ns, name)
        fault = self.faults.take("error", res, verb)
        if fault is not None:
            e = st.generic(int(fault.get("code", 500)), fault.get("message"))
            if int(fault.get("code", 500)) == 429:
                ra = int(fault.get("retry_after", 1))
                e.details = {"retryAfterSeconds": ra}
                e.headers.append(("Retry-After", str(ra)))
            raise e
        if verb == "watch":
            if name:
                # The item-path form of a watch is a watch with a name field selector.
                sel = req.query.get("fieldSelector")
                req.query["fieldSelector"] = "metadata.name=%s" % name + ("," + sel if sel
                                                                          else "")
            return self.watch(req, res, ns)
        if verb == "list":
            return self.list(req, res, ns)
        if verb == "get":
            return self.get(req, res, ns, name, sub)
        if verb == "create":
            if name and sub == "binding":
                return self.bind(req, res, ns, name)
            if name:
                raise st.method_not_supported(res, "create")
            return self.create(req, res, ns)
        if verb == "update":
            if not name:
                raise st.method_not_supported(res, "update")
            return self.update(req, res, ns, name, sub)
        if verb == "patch":
            if not name:
                raise st.method_not_supported(res, "patch")
            return self.patch(req, res, ns, name, sub)
        if verb == "delete":
            return self.delete(req, res, ns, name)
        if verb == "deletecollection":
            return self.delete_collection(req, res, ns)
        raise ApiError(405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource", {})

    # ---- reads --------------------------------------------------------------------------------

    def _accepts_table(self, req):
        acc = req.headers.get("accept", "")
        return "as=Table" in acc

    def _selectors(self, req, res, ns):
        labels = kube_select.parse_labels(req.query.get("labelSelector"))
        fields = kube_select.parse_fields(res, req.query.get("fieldSelector"))

        def match(rec):
            o = rec.obj
            if ns is not None and (o.get("metadata") or {}).get("namespace") != ns:
                return False
            if labels and not kube_select.match_labels(labels, rec.labels):
                return False
            if fields and not kube_select.match_fields(fields, o):
                return False
            return True
        return match, bool(labels or fields)

    def _wait_rv(self, want):
        """Waits up to 3 s for the store to reach a resourceVersion (as the watch cache waits);
        raises the 504 Too large resource version."""
        deadline = time.time() + 3
        with self.store.lock:
            while self.store.rv < want:
                left = deadline - time.time()
                if left <= 0:
                    raise st.too_large_rv(want, self.store.rv)
                self.store.changed.wait(left)

    def _parse_rv(self, v):
        try:
            r = int(v)
            if r < 0:
                raise ValueError
            return r
        except (TypeError, ValueError):
            raise st.bad_request('resourceVersion: Invalid value: "%s": must be a valid '
                                 'resourceVersion' % v)

    def list(self, req, res, ns):
        q = req.query
        match, selective = self._selectors(req, res, ns)
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise st.bad_request("limit: Invalid value: must be a non-negative integer")
        cont = q.get("continue")
        gr = self.storage_gr(res)
        rv_param = q.get("resourceVersion")
        rvm = q.get("resourceVersionMatch")
        if cont and rv_param:
            raise st.invalid(None, "", [("resourceVersion", "FieldValueForbidden",
                                         "Forbidden: specifying resource version is not "
                                         "allowed when using continue")],
                             kind="ListOptions.meta.k8s.io")
        if rv_param == "0":
            limit = 0  # served from the watch cache, which ignores limit for "0"
        elif rv_param not in (None, "") and not rvm and limit:
            rvm = "Exact"  # the legacy exact match: a resourceVersion with a limit
        if rv_param not in (None, "", "0") and rvm != "Exact":
            self._wait_rv(self._parse_rv(rv_param))
        start = ""
        with self.store.lock:
            current = self.store.rv
            diff = {}
            list_rv = current
            if cont:
                try:
                    crv, start = decode_continue(cont)
                except ValueError as e:
                    raise st.bad_request(str(e))
                if self.faults.take("gone-list", res) is not None:
                    raise st.expired(st.CONTINUE_EXPIRED, encode_continue(-1, start))
                if crv != -1:
                    try:
                        diff = self.store.state_at(gr, crv)
                    except Expired:
                        raise st.expired(st.CONTINUE_EXPIRED, encode_continue(-1, start))
                    list_rv = crv
            elif rv_param not in (None, "", "0") and rvm == "Exact":
                want = self._parse_rv(rv_param)
                if want > current:
                    raise st.too_large_rv(want, current)
                try:
                    diff = self.store.state_at(gr, want)
                except Expired:
                    raise st.expired(st.LIST_EXPIRED)
                list_rv = want
            objs = self.store.items(gr)
            keys = self.store.keys(gr)
            prefix = ns + "/" if (ns is not None and res.namespaced) else ""
            lo = bisect.bisect_right(keys, start) if start else \
                bisect.bisect_left(keys, prefix)
            extra = sorted(k for k, v in diff.items() if v is not None and k not in objs and
                           k > start and k.startswith(prefix))
            items, last = [], None
            more = False
            i, j = lo, 0
            while i < len(keys) or j < len(extra):
                if j < len(extra) and (i >= len(keys) or extra[j] < keys[i]):
                    k = extra[j]
                    j += 1
                else:
                    k = keys[i]
                    i += 1
                if prefix and not k.startswith(prefix):
                    break
                rec = diff[k] if k in diff else objs[k]
                if rec is None or not match(rec):
                    continue
                if limit and len(items) >= limit:
                    more = True
                    break
                items.append(rec)
                last = k
            remaining = None
            if more and not selective:
                hi = bisect.bisect_left(keys, prefix + "\xff") if prefix else len(keys)
                after = bisect.bisect_right(keys, last)
                remaining = max(0, hi - after) + sum(1 for k in extra if k > last) - \
                    sum(1 for k, v in diff.items() if v is None and k > last and k in objs and
                        k.startswith(prefix))
        meta = {"resourceVersion": str(list_rv)}
        if more:
            meta["continue"] = encode_continue(list_rv, last)
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        if self._accepts_table(req):
            objs = [self.served_obj(res, r) for r in items]
            t = kube_present.table(res, objs, meta, req.query.get("includeObject", "Metadata"))
            return Response(200, dumps(t))
        body = b'{"kind":' + dumps(res.list_kind) + b',"apiVersion":' + \
            dumps(res.api_version) + b',"metadata":' + dumps(meta) + b',"items":[' + \
            b",".join(self.encode_item(res, r) for r in items) + b"]}"
        return Response(200, body)

    def get(self, req, res, ns, name, sub):
        rec = self.store.get(self.storage_gr(res), self.key(res, ns, name))
        if rec is None:
            raise st.not_found(res, name)
        if self._accepts_table(req):
            t = kube_present.table(res, [self.served_obj(res, rec)],
                                   {"resourceVersion": str(rec.rv)},
                                   req.query.get("includeObject", "Metadata"))
            return Response(200, dumps(t))
        return Response(200, self.encode(res, rec))

    def watch(self, req, res, ns):
        q = req.query
        match, _ = self._selectors(req, res, ns)
        rv_param = q.get("resourceVersion")
        send_initial = q.get("sendInitialEvents")
        bookmarks = _qbool(q.get("allowWatchBookmarks"))
        initial_end = False
        if send_initial is not None:
            if q.get("resourceVersionMatch") != "NotOlderThan":
                raise st.invalid(None, "", [("resourceVersionMatch", "FieldValueForbidden",
                                             "Forbidden: sendInitialEvents requires setting "
                                             "resourceVersionMatch to NotOlderThan")],
                                 kind="ListOptions.meta.k8s.io")
            if _qbool(send_initial) and not bookmarks:
                raise st.invalid(None, "", [("allowWatchBookmarks", "FieldValueRequired",
                                             "Required value: sendInitialEvents requires "
                                             "setting allowWatchBookmarks to true")],
                                 kind="ListOptions.meta.k8s.io")
        if _qbool(send_initial):
            initial, since = True, None
            initial_end = True
            if rv_param not in (None, "", "0"):
                self._wait_rv(self._parse_rv(rv_param))
        elif rv_param in (None, "", "0"):
            initial, since = True, None
        else:
            initial, since = False, self._parse_rv(rv_param)
            if since > self.store.rv:
                self._wait_rv(since)
        try:
            timeout = float(q.get("timeoutSeconds") or 0) or 1800.0
        except ValueError:
            raise st.bad_request("timeoutSeconds: must be a number")
        try:
            if self.faults.take("gone-watch", res) is not None:
                raise Expired(self.store.floor if since is None else max(since + 1,
                                                                         self.store.floor))
            watcher, start_rv = self.store.watch(self.storage_gr(res), match, since, initial)
        except Expired as e:
            # kube-apiserver answers 200 and then one ERROR event.
            watcher = None
            err = st.expired("too old resource version: %d (%d)" % (since or 0, e.args[0]))
            return ErrorWatch(err)
        f = self.faults.take("drop-watch", res)
        if f is not None:
            watcher.faults.append({"after": int(f.get("after_events", 0))})
        for f in self.faults.active("stall-watch"):
            if self.faults.matches_res(f, res) and time.time() < f.get("until", 0):
                watcher.stall_until = max(watcher.stall_until, f["until"])
        w = WatchResponse(self, res, watcher, timeout, bookmarks,
                          start_rv if initial_end else None, self._accepts_table(req),
                          q.get("includeObject", "Metadata"))
        return w

    # ---- writes: shared ------------------------------------------------------------------------

    def _decode_body(self, req, res):
        ctype = (req.headers.get("content-type") or "application/json").split(";")[0].strip()
        if ctype == "application/vnd.kubernetes.protobuf":
            try:
                return kube_proto.decode(req.body or b"", self.find_resource)
            except (kube_proto.ProtoError, ValueError, KeyError, IndexError) as e:
                raise st.bad_request("the object provided is unrecognized (must be of type %s): "
                                     "%s" % (res.kind, e))
        if ctype not in ("application/json", "application/apply-patch+yaml", "*/*", "") and \
                not ctype.endswith("+json"):
            raise st.unsupported_media(["application/json", "application/yaml",
                                        "application/vnd.kubernetes.protobuf"])
        try:
            obj = json.loads(req.body or b"null")
        except ValueError as e:
            raise st.bad_request("the object provided is unrecognized (must be of type %s): "
                                 "couldn't get version/kind; json parse error: %s"
                                 % (res.kind, e))
        if not isinstance(obj, dict):
            raise st.bad_request("the object provided is unrecognized (must be of type %s): "
                                 "couldn't get version/kind; json parse error: json: cannot "
                                 "unmarshal %s into Go value of type struct" % (res.kind,
                                                                                type(obj).__name__))
        return obj

    def _check_type(self, res, obj, create=False):
        av = obj.get("apiVersion")
        kind = obj.get("kind")
        if av is not None and av != res.api_version:
            raise st.bad_request("the API version in the data (%s) does not match the expected "
                                 "API version (%s)" % (av, res.api_version))
        if kind is not None and kind != res.kind:
            raise st.bad_request("%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" "
                                 "is registered for version \"%s\" in scheme"
                                 % (kind, res.version, res.kind, kind, res.api_version))
        obj["apiVersion"] = res.api_version
        obj["kind"] = res.kind

    def _field_validation(self, req, res, obj, what="decode", sub=None):
        """Prunes unknown fields by the schema of res; Strict raises, Warn warns."""
        directive = req.query.get("fieldValidation") or "Warn"
        if directive not in ("Ignore", "Warn", "Strict"):
            raise st.bad_request('fieldValidation: Unsupported value: "%s": supported values: '
                                 '"Ignore", "Strict", "Warn"' % directive)
        unknown = kube_schema.prune(obj, res.node())
        if not unknown:
            return
        if directive == "Strict":
            msg = ", ".join('unknown field "%s"' % u for u in unknown)
            if what == "patch":
                raise st.invalid(None, "", [("patch", "FieldValueInvalid",
                                             "Invalid value: \"...\": strict decoding error: "
                                             + msg)], kind="")
            raise st.bad_request('%s in version "%s" cannot be handled as a %s: strict decoding '
                                 "error: %s" % (res.kind, res.version, res.kind, msg))
        if directive == "Warn":
            for u in unknown:
                req.warnings.append('unknown field "%s"' % u)

    def _namespace_labels(self, ns):
        rec = self.store.get(("", "namespaces"), ns)
        return None if rec is None else rec.labels

    def _manager(self, req, operation, res, sub):
        mgr = req.query.get("fieldManager")
        if not mgr:
            ua = req.user_agent or ""
            mgr = ua.split("/")[0] if ua else "unknown"
        if len(mgr) > 128:
            mgr = mgr[:128]
        return kube_ssa.Manager(mgr, operation, res.api_version,
                                "status" if sub == "status" else "")

    def _keep(self, res, sub):
        if sub == "status":
            return kube_ssa.keep_for("status", res.status_keeps)
        if res.has_status:
            return kube_ssa.keep_for("main-with-status", None)
        return kube_ssa.keep_for("", None)

    def _dry_run(self, req):
        v = req.query.get("dryRun")
        if v and v != "All":
            raise st.bad_request('dryRun: Unsupported value: "%s": supported values: "All"' % v)
        return v == "All"

    def _admit(self, req, res, sub, op, ns, name, obj, old, options):
        """Mutating webhooks, validation, validating webhooks; returns the object to store."""
        cfg_m = [r.obj for r in self.store.items(("admissionregistration.k8s.io",
                                                  "mutatingwebhookconfigurations")).values()]
        cfg_v = [r.obj for r in self.store.items(("admissionregistration.k8s.io",
                                                  "validatingwebhookconfigurations")).values()]
        dry = self._dry_run(req)
        a = kube_admission.Attributes(res, sub, op, ns, name, obj, old, req.user, dry,
                                      options, self._namespace_labels)
        versions = self.versions_of(res)

        def conv(o, v):
            return self.to_version(res, o, v)

        def reprune(o):
            o = jcopy(o)
            kube_schema.prune(o, res.node())
            return o
        if obj is not None and cfg_m:
            obj = self.dispatcher.mutate(a, versions, conv, cfg_m, req.warnings,
                                         reprune if res.crd is not None else None)
            a.obj = obj
        if obj is not None:
            self._validate(res, sub, op, obj, old)
        if cfg_v:
            self.dispatcher.validate(a, obj, versions, conv, cfg_v, req.warnings)
        return obj

    def _validate(self, res, sub, op, obj, old):
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        errs = []
        if op == "CREATE":
            label = res.gr in (("", "namespaces"),)
            if name:
                errs += kube_strategy.name_errors(name, label=label)
        if res.gr == ("", "pods"):
            if op == "CREATE":
                errs += kube_strategy.pod_create_errors(obj)
            elif op == "UPDATE" and sub in (None, "resize"):
                errs += kube_strategy.pod_update_errors(old, obj, resize=sub == "resize")
        elif res.gr == ("apiextensions.k8s.io", "customresourcedefinitions"):
            errs += kube_strategy.crd_errors(obj)
        elif res.group == "admissionregistration.k8s.io":
            errs += kube_strategy.webhook_errors(obj)
        elif res.gr == ("scheduling.k8s.io", "priorityclasses"):
            if op == "UPDATE" and old is not None and old.get("value") != obj.get("value"):
                errs.append(("value", "FieldValueForbidden",
                             "Forbidden: may not be changed in an update."))
            kube_strategy.check_one_global_default(
                self.store.items(("scheduling.k8s.io", "priorityclasses")).values(), obj)
        if res.crd is not None:
            schema = res.openapi_schema()
            if schema:
                verrs = []
                kube_schema.validate(obj, schema, "", verrs)
                errs += verrs
        if errs:
            raise st.invalid(res, name, errs)

    def _system_meta(self, res, meta, old_meta, create):
        if create:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
                meta.pop(k, None)
        else:
            for k in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation", "namespace", "name"):
                if k in old_meta:
                    meta[k] = old_meta[k]
                else:
                    meta.pop(k, None)
            meta.pop("selfLink", None)

    def _generation(self, res, obj, old):
        if res.crd is None and res.gr != ("apiextensions.k8s.io", "customresourcedefinitions"):
            return
        meta = obj["metadata"]
        if old is None:
            meta["generation"] = 1
            return
        gen = old["metadata"].get("generation", 1)
        def body(o):
            return {k: v for k, v in o.items() if k not in ("metadata", "status", "apiVersion",
                                                           "kind")}
        if body(obj) != body(old):
            gen += 1
        meta["generation"] = gen

    def _strategy_create(self, res, obj, now):
        gr = res.gr
        if res.has_status and gr != ("", "nodes"):
            obj.pop("status", None)
        if gr == ("", "pods"):
            kube_strategy.default_pod(obj)
            self._priority(obj)
            obj["status"] = {"phase": "Pending",
                             "qosClass": kube_strategy.qos_class(obj.get("spec") or {})}
        elif gr == ("", "namespaces"):
            kube_strategy.default_namespace(obj)
        elif gr == ("scheduling.k8s.io", "priorityclasses"):
            kube_strategy.default_priority_class(obj)
        elif gr == ("apiextensions.k8s.io", "customresourcedefinitions"):
            kube_strategy.default_crd(obj)
            obj["status"] = kube_strategy.crd_status(obj, now)
        elif gr in (("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                    ("admissionregistration.k8s.io", "validatingwebhookconfigurations")):
            kube_strategy.default_webhooks(obj, "mutating" in res.plural)
        if res.crd is not None:
            schema = res.openapi_schema()
            if schema:
                kube_strategy.schema_defaults(obj, schema)

    def _priority(self, pod):
        spec = pod.setdefault("spec", {})
        pcs = self.store.items(("scheduling.k8s.io", "priorityclasses"))
        name = spec.get("priorityClassName")
        if name:
            rec = pcs.get(name)
            if rec is None:
                raise st.forbidden("", "pods", pod["metadata"].get("name", ""),
                                   "no PriorityClass with name %s was found" % name)
            spec["priority"] = rec.obj.get("value", 0)
            spec.setdefault("preemptionPolicy", rec.obj.get("preemptionPolicy",
                                                            "PreemptLowerPriority"))
            return
        for rec in pcs.values():
            if rec.obj.get("globalDefault"):
                spec["priorityClassName"] = rec.obj["metadata"]["name"]
                spec["priority"] = rec.obj.get("value", 0)
                spec.setdefault("preemptionPolicy", rec.obj.get("preemptionPolicy",
                                                                "PreemptLowerPriority"))
                return
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")

    def _strategy_update(self, res, sub, obj, old):
        """Main resources keep their status; status writes change only status."""
        if sub == "status":
            new = jcopy(old)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
            for keep in res.status_keeps:
                field = keep[1][2:]
                if field in (obj.get("metadata") or {}):
                    new["metadata"][field] = obj["metadata"][field]
                else:
                    new["metadata"].pop(field, None)
            new["metadata"]["managedFields"] = obj["metadata"].get("managedFields")
            new["metadata"]["resourceVersion"] = obj["metadata"].get("resourceVersion")
            return new
        if sub == "resize":
            new = jcopy(old)
            for key in ("containers", "initContainers"):
                olds = {c.get("name"): c for c in new.get("spec", {}).get(key) or []}
                for c in (obj.get("spec") or {}).get(key) or []:
                    if c.get("name") in olds:
                        olds[c["name"]]["resources"] = c.get("resources", {})
                        if "resizePolicy" in c:
                            olds[c["name"]]["resizePolicy"] = c["resizePolicy"]
            new["metadata"]["managedFields"] = obj["metadata"].get("managedFields")
            new["metadata"]["resourceVersion"] = obj["metadata"].get("resourceVersion")
            return new
        if res.has_status and res.gr != ("apiextensions.k8s.io", "customresourcedefinitions"):
            if "status" in old:
                obj["status"] = jcopy(old["status"])
            else:
                obj.pop("status", None)
        if res.gr == ("apiextensions.k8s.io", "customresourcedefinitions"):
            obj["status"] = jcopy(old.get("status")) or obj.get("status")
            obj["status"]["acceptedNames"] = jcopy(obj["spec"].get("names") or {})
            stored = set(obj["status"].get("storedVersions") or [])
            stored |= {v.get("name") for v in obj["spec"].get("versions", []) if v.get("storage")}
            obj["status"]["storedVersions"] = sorted(stored)
        if res.gr == ("", "pods"):
            kube_strategy.default_pod(obj, create=False)
        if res.gr in (("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
                      ("admissionregistration.k8s.io", "validatingwebhookconfigurations")):
            kube_strategy.default_webhooks(obj, "mutating" in res.plural)
        return obj

    def _response(self, res, rec, code=200):
        return Response(code, self.encode(res, rec))

    def _commit(self, res, ns, name, new_storage, expect_rv, dry, create=False,
                precondition=False):
        """Stores new_storage if the stored version still is expect_rv (None: absent).
        Returns (rec or None when it must retry)."""
        gr = self.storage_gr(res)
        key = self.key(res, ns, name)
        with self.store.lock:
            cur = self.store.get(gr, key)
            if create:
                if cur is not None:
                    raise st.already_exists(res, name)
            elif (cur.rv if cur else None) != expect_rv:
                if cur is None:
                    raise st.not_found(res, name)
                if precondition:
                    raise st.conflict(res, name)
                return None
            if dry:
                from kube_store import Rec
                o = jcopy(new_storage)
                return Rec(o, cur.rv if cur else self.store.rv, key)
            rv = self.store.next_rv()
            new_storage["metadata"]["resourceVersion"] = str(rv)
            rec = self.store.put(gr, key, new_storage, rv)
        self._after_write(res, new_storage)
        return rec

    def _after_write(self, res, obj):
        if res.gr == ("apiextensions.k8s.io", "customresourcedefinitions"):
            self.refresh()
        meta = obj.get("metadata") or {}
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._finalize(res, meta.get("namespace"), meta.get("name"))

    def _finalize(self, res, ns, name):
        gr = self.storage_gr(res)
        with self.store.lock:
            rec = self.store.remove_now(gr, self.key(res, ns, name))
        if rec is not None:
            self._after_delete(gr, rec.obj)
        return rec

    def _after_delete(self, gr, obj):
        """A deleted CRD takes its objects along; a deleted namespace its contents (what the
        namespace controller does, at once)."""
        if gr == ("apiextensions.k8s.io", "customresourcedefinitions"):
            spec = obj.get("spec") or {}
            ogr = (spec.get("group"), (spec.get("names") or {}).get("plural"))
            with self.store.lock:
                for key in list(self.store.items(ogr)):
                    self.store.remove_now(ogr, key)
            self.refresh()
        elif gr == ("", "namespaces"):
            ns = obj["metadata"]["name"]
            with self.store.lock:
                for ogr in list(self.store.objects):
                    for key, rec in list(self.store.items(ogr).items()):
                        if (rec.obj.get("metadata") or {}).get("namespace") == ns:
                            self.store.remove_now(ogr, key)

    # ---- create ------------------------------------------------------------------------------

    def create(self, req, res, ns, obj=None, manager_op="Update"):
        if obj is None:
            obj = self._decode_body(req, res)
            self._check_type(res, obj, create=True)
            self._field_validation(req, res, obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        if res.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise st.bad_request("the namespace of the provided object does not match the "
                                     "namespace sent on the request")
            meta["namespace"] = ns
            if self.store.get(("", "namespaces"), ns) is None:
                raise st.not_found_gr("", "namespaces", ns)
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + _rand_suffix()
            else:
                raise st.invalid(res, "", [("metadata.name", "FieldValueRequired",
                                            "Required value: name or generateName is required")])
        name = meta["name"]
        now = now_rfc3339()
        self._system_meta(res, meta, None, True)
        self._strategy_create(res, obj, now)
        self._generation(res, obj, None)
        meta.pop("resourceVersion", None)
        if manager_op == "Update":
            mgrs = kube_ssa.update(self._zero(res), self._strip_for_fields(obj), res.node(), {},
                                   self._manager(req, "Update", res, None), now,
                                   self._keep(res, None))
            self._set_managed(obj, mgrs)
        options = {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        if req.query.get("fieldManager"):
            options["fieldManager"] = req.query["fieldManager"]
        obj = self._admit(req, res, None, "CREATE", ns, name, obj, None, options)
        stored = kube_convert.to_storage(res, obj)
        rec = self._commit(res, ns, name, stored, None, self._dry_run(req), create=True)
        return self._response(res, rec, 201)

    def _zero(self, res):
        """The live object a create is compared against (Go's zero value for built-ins)."""
        return kube_schema.skeleton(res.node()) if res.builtin else {}

    def _strip_for_fields(self, obj):
        o = dict(obj)
        if "metadata" in o:
            o["metadata"] = {k: v for k, v in o["metadata"].items() if k != "managedFields"}
        return o

    def _set_managed(self, obj, managers):
        entries = kube_ssa.encode_managers(managers)
        if entries:
            obj["metadata"]["managedFields"] = entries
        else:
            obj["metadata"].pop("managedFields", None)

    def bind(self, req, res, ns, name):
        if res.gr != ("", "pods"):
            raise st.method_not_supported(res, "create")
        binding = json.loads(req.body or b"{}")
        target = (binding.get("target") or {}).get("name")
        if not target:
            raise st.invalid(None, name, [("target.name", "FieldValueRequired",
                                           "Required value")], kind="Binding")

        def compute(cur):
            pod = jcopy(cur)
            if (pod.get("spec") or {}).get("nodeName"):
                raise st.conflict(res, name, "pod %s is already assigned to node \"%s\""
                                  % (name, pod["spec"]["nodeName"]))
            pod.setdefault("spec", {})["nodeName"] = target
            conds = pod.setdefault("status", {}).setdefault("conditions", [])
            conds[:] = [c for c in conds if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True",
                          "lastProbeTime": None, "lastTransitionTime": now_rfc3339()})
            return pod
        self._modify(req, res, ns, name, None, compute, admit_sub="binding", raw=True)
        return Response(201, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "code": 201}))

    # ---- update / patch ---------------------------------------------------------------------------

    def _modify(self, req, res, ns, name, sub, compute, manager_op="Update", precond_rv=None,
                admit_sub=None, raw=False, allow_create=None):
        """The read-modify-write loop of update and patch: compute(current served object) gives
        the new served object; retried when the object changed meanwhile (unless the request
        carries a resourceVersion precondition)."""
        gr = self.storage_gr(res)
        key = self.key(res, ns, name)
        dry = self._dry_run(req)
        for _ in range(20):
            cur = self.store.get(gr, key)
            if cur is None:
                if allow_create is not None:
                    return allow_create()
                raise st.not_found(res, name)
            old = self.served_obj(res, cur)
            new = compute(jcopy(old))
            if raw:
                new_obj = new
            else:
                new_obj = self._prepare_update(req, res, sub, new, old, manager_op)
            precond = bool(precond_rv)
            if precond and precond_rv != str(cur.rv):
                raise st.conflict(res, name)
            if self._same(new_obj, old):
                return self._response(res, cur)
            options = {"kind": "UpdateOptions" if req.method == "PUT" else "PatchOptions",
                       "apiVersion": "meta.k8s.io/v1"}
            if req.query.get("fieldManager"):
                options["fieldManager"] = req.query["fieldManager"]
            admitted = self._admit(req, res, admit_sub if admit_sub else sub, "UPDATE", ns, name,
                                   new_obj, old, options)
            stored = kube_convert.to_storage(res, admitted)
            rec = self._commit(res, ns, name, stored, cur.rv, dry, precondition=precond)
            if rec is not None:
                return self._response(res, rec)
        raise st.conflict(res, name)

    def _same(self, a, b):
        def norm(o):
            o = jcopy(o)
            m = o.get("metadata") or {}
            m.pop("resourceVersion", None)
            for e in m.get("managedFields") or []:
                if isinstance(e, dict):
                    e.pop("time", None)
            return o
        return norm(a) == norm(b)

    def _prepare_update(self, req, res, sub, new, old, manager_op):
        meta = new.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise st.bad_request("metadata must be an object")
        old_meta = old.get("metadata") or {}
        if meta.get("name") not in (None, old_meta.get("name")):
            raise st.bad_request("the name of the object (%s) does not match the name on the URL "
                                 "(%s)" % (meta.get("name"), old_meta.get("name")))
        if res.namespaced and meta.get("namespace") not in (None, old_meta.get("namespace")):
            raise st.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
        now = now_rfc3339()
        managers = kube_ssa.decode_managers(old)
        req_mf = meta.get("managedFields")
        if req_mf is not None and req_mf != [] and \
                self._strip_times(req_mf) != self._strip_times(old_meta.get("managedFields")):
            # The client set managedFields explicitly: they replace the recorded ones.
            managers = kube_ssa.decode_managers(new)
        self._system_meta(res, meta, old_meta, False)
        new = self._strategy_update(res, sub, new, old)
        meta = new["metadata"]
        self._generation(res, new, old)
        if manager_op == "Update":
            managers = kube_ssa.update(self._strip_for_fields(old), self._strip_for_fields(new),
                                       res.node(), managers,
                                       self._manager(req, "Update", res, sub), now,
                                       self._keep(res, sub))
            self._set_managed(new, managers)
        return new

    def _strip_times(self, mf):
        out = []
        for e in mf or []:
            if isinstance(e, dict):
                out.append({k: v for k, v in e.items() if k != "time"})
        return out

    def update(self, req, res, ns, name, sub):
        body = self._decode_body(req, res)
        self._check_type(res, body)
        self._field_validation(req, res, body)
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise st.bad_request("the name of the object (%s) does not match the name on the URL "
                                 "(%s)" % (meta["name"], name))
        if sub == "finalize":
            sub = None
        return self._modify(req, res, ns, name, sub, lambda old: jcopy(body),
                            precond_rv=meta.get("resourceVersion"))

    def patch(self, req, res, ns, name, sub):
        ctype = (req.headers.get("content-type") or "").split(";")[0].strip()
        allowed = PATCH_TYPES_BUILTIN if res.builtin else PATCH_TYPES_CR
        if ctype not in allowed:
            raise st.unsupported_media(allowed)
        force = req.query.get("force")
        if ctype == "application/apply-patch+yaml":
            if not req.query.get("fieldManager"):
                raise st.invalid(None, "", [("fieldManager", "FieldValueRequired",
                                             "Required value: is required for apply requests")],
                                 kind="PatchOptions.meta.k8s.io")
            return self.apply(req, res, ns, name, sub, _qbool(force))
        if force is not None:
            raise st.invalid(None, "", [("force", "FieldValueForbidden",
                                         "Forbidden: may not be specified for non-apply patch")],
                             kind="PatchOptions.meta.k8s.io")
        try:
            if ctype == "application/json-patch+json":
                ops = kube_patch.decode_json_patch(req.body or b"")
                if len(ops) > 10000:
                    raise ApiError(413, "RequestEntityTooLarge",
                                   "Request entity too large: The allowed maximum operations "
                                   "in a JSON patch is 10000, got %d" % len(ops))
            else:
                patch = json.loads(req.body or b"")
        except kube_patch.PatchDecodeError as e:
            raise st.bad_request(str(e))
        except ValueError as e:
            raise st.bad_request("error decoding patch: %s" % e)
        if ctype != "application/json-patch+json" and not isinstance(patch, dict):
            raise st.bad_request("error decoding patch: json: cannot unmarshal %s into Go value "
                                 "of type map[string]interface {}" % type(patch).__name__)
        node = res.node()

        def compute(old):
            try:
                if ctype == "application/json-patch+json":
                    new = kube_patch.json_patch(old, ops)
                elif ctype == "application/merge-patch+json":
                    new = kube_patch.merge_patch(old, patch)
                else:
                    new = kube_patch.strategic_merge(old, patch, node)
            except kube_patch.PatchError:
                raise ApiError(422, "Invalid", "the server rejected our request due to an error "
                               "in our request", {})
            except kube_patch.PatchDecodeError as e:
                raise st.bad_request(str(e))
            if not isinstance(new, dict):
                raise ApiError(422, "Invalid", "the server rejected our request due to an error "
                               "in our request", {})
            self._check_type(res, new)
            self._field_validation(req, res, new, "patch")
            return new
        if ctype == "application/json-patch+json":
            rv = next((o.get("value") for o in ops if o.get("path") == "/metadata/resourceVersion"
                       and o.get("op") in ("replace", "add", "test")), None)
        else:
            rv = (patch.get("metadata") or {}).get("resourceVersion") \
                if isinstance(patch.get("metadata"), dict) else None
        return self._modify(req, res, ns, name, sub, compute, precond_rv=rv)

    def apply(self, req, res, ns, name, sub, force):
        try:
            config = json.loads(req.body or b"")
        except ValueError:
            raise st.bad_request("error decoding YAML: the test server reads apply patches as "
                                 "JSON (kubectl sends JSON)")
        if not isinstance(config, dict):
            raise st.bad_request("error decoding patch: json: cannot unmarshal %s into Go value "
                                 "of type map[string]interface {}" % type(config).__name__)
        if not config.get("kind"):
            raise st.bad_request("Object 'Kind' is missing in '%s'"
                                 % json.dumps(config, separators=(",", ":")))
        if config.get("apiVersion") != res.api_version or config.get("kind") != res.kind:
            raise st.bad_request("the API version in the data (%s) does not match the expected "
                                 "API version (%s)" % (config.get("apiVersion"),
                                                       res.api_version)
                                 if config.get("apiVersion") != res.api_version else
                                 "%s in version \"%s\" cannot be handled as a %s"
                                 % (config.get("kind"), res.version, res.kind))
        cmeta = config.setdefault("metadata", {})
        if cmeta.get("name") not in (None, name):
            raise st.bad_request("the name of the object (%s) does not match the name on the URL "
                                 "(%s)" % (cmeta.get("name"), name))
        if res.namespaced and cmeta.get("namespace") not in (None, ns):
            raise st.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
        self._field_validation(req, res, config, "patch")
        node = res.node()
        keep = self._keep(res, sub)
        now = now_rfc3339()
        actor = self._manager(req, "Apply", res, sub)

        def conflict_error(e):
            return ApiError(409, "Conflict", e.message(), {"causes": e.causes()})

        def create():
            if sub is not None:
                raise st.not_found(res, name)
            try:
                merged, mgrs = kube_ssa.apply(self._zero(res), self._strip_for_fields(config),
                                              node, {},
                                              actor, now, force, keep)
            except kube_ssa.ApplyConflict as e:
                raise conflict_error(e)
            obj = _drop_nulls(jcopy(merged)) if res.builtin else jcopy(merged)
            obj.setdefault("metadata", {})["name"] = name
            if res.namespaced:
                obj["metadata"]["namespace"] = ns
            obj["apiVersion"], obj["kind"] = res.api_version, res.kind
            self._set_managed(obj, mgrs)
            return self.create(req, res, ns, obj=obj, manager_op="Apply")

        def compute(old):
            managers = kube_ssa.decode_managers(old)
            base = self._strip_for_fields(old)
            try:
                merged, mgrs = kube_ssa.apply(base, self._strip_for_fields(config), node,
                                              managers, actor, now, force, keep)
            except kube_ssa.ApplyConflict as e:
                raise conflict_error(e)
            merged["metadata"] = dict(merged.get("metadata") or {})
            merged["metadata"]["resourceVersion"] = cmeta.get("resourceVersion")
            if not merged["metadata"]["resourceVersion"]:
                merged["metadata"].pop("resourceVersion")
            self._set_managed(merged, mgrs)
            return merged

        def compute_full(old):
            new = compute(old)
            return self._prepare_update(req, res, sub, new, old, "Apply")
        return self._modify(req, res, ns, name, sub, compute_full, raw=True,
                            allow_create=create, precond_rv=cmeta.get("resourceVersion"))

    # ---- delete ----------------------------------------------------------------------------------

    def _delete_options(self, req):
        if not req.body:
            opts = {}
        elif req.body.startswith(kube_proto.MAGIC):
            try:
                opts = kube_proto.decode(req.body, self.find_resource)
            except (kube_proto.ProtoError, ValueError, KeyError, IndexError) as e:
                raise st.bad_request("error decoding DeleteOptions: %s" % e)
        else:
            try:
                opts = json.loads(req.body)
            except ValueError as e:
                raise st.bad_request("error decoding DeleteOptions: %s" % e)
        if not isinstance(opts, dict):
            opts = {}
        for k in ("gracePeriodSeconds", "propagationPolicy", "dryRun"):
            if k in req.query and k not in opts:
                opts[k] = req.query[k]
        return opts

    def delete(self, req, res, ns, name, opts=None):
        if opts is None:
            opts = self._delete_options(req)
        gr = self.storage_gr(res)
        key = self.key(res, ns, name)
        dry = self._dry_run(req) or opts.get("dryRun") in ("All", ["All"])
        pre = opts.get("preconditions") or {}
        for _ in range(20):
            cur = self.store.get(gr, key)
            if cur is None:
                raise st.not_found(res, name)
            cmeta = cur.obj.get("metadata") or {}
            if pre.get("uid") and pre["uid"] != cmeta.get("uid"):
                raise st.conflict(res, name, "Precondition failed: UID in precondition: %s, UID "
                                  "in object meta: %s" % (pre["uid"], cmeta.get("uid")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != cmeta.get(
                    "resourceVersion"):
                raise st.conflict(res, name, "Precondition failed: ResourceVersion in "
                                  "precondition: %s, ResourceVersion in object meta: %s"
                                  % (pre["resourceVersion"], cmeta.get("resourceVersion")))
            old = self.served_obj(res, cur)
            options = dict({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}, **{
                k: v for k, v in opts.items() if k not in ("kind", "apiVersion")})
            self._admit(req, res, None, "DELETE", ns, name, None, old, options)
            if dry:
                return self._response(res, cur)
            finalizers = cmeta.get("finalizers") or []
            with self.store.lock:
                now = self.store.get(gr, key)
                if now is None or now.rv != cur.rv:
                    continue
                if finalizers:
                    if cmeta.get("deletionTimestamp"):
                        return self._response(res, cur, 202)
                    obj = jcopy(cur.obj)
                    obj["metadata"]["deletionTimestamp"] = now_rfc3339()
                    obj["metadata"]["deletionGracePeriodSeconds"] = 0
                    rv = self.store.next_rv()
                    obj["metadata"]["resourceVersion"] = str(rv)
                    rec = self.store.put(gr, key, obj, rv)
                    return self._response(res, rec, 202)
                rec = self.store.remove_now(gr, key)
            self._after_delete(gr, rec.obj)
            if res.gr in RETURN_DELETED:
                return self._response(res, rec)
            d = {"name": name}
            if res.group:
                d["group"] = res.group
            d.update(kind=res.plural, uid=rec.obj["metadata"].get("uid", ""))
            return Response(200, dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Success", "details": d}))
        raise st.conflict(res, name)

    def delete_collection(self, req, res, ns):
        match, _ = self._selectors(req, res, ns)
        opts = self._delete_options(req)
        gr = self.storage_gr(res)
        names = [(r.obj["metadata"].get("namespace"), r.obj["metadata"]["name"])
                 for r in list(self.store.items(gr).values()) if match(r)]
        items = []
        for n_ns, n in sorted(names, key=lambda x: (x[0] or "", x[1])):
            cur = self.store.get(gr, self.key(res, n_ns, n))
            try:
                self.delete(req, res, n_ns, n, opts)
            except ApiError as e:
                if e.code != 404:
                    raise
                continue
            if cur is not None:
                items.append(self.encode_item(res, cur))
        body = b'{"kind":' + dumps(res.list_kind) + b',"apiVersion":' + \
            dumps(res.api_version) + b',"metadata":{"resourceVersion":"' + \
            str(self.store.rv).encode() + b'"},"items":[' + b",".join(items) + b"]}"
        return Response(200, body)

    # ---- discovery and OpenAPI ------------------------------------------------------------------

    def discovery_resources(self, group, version):
        if not self.served(group) or (group, version) not in self.by_gv:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        gv = version if not group else group + "/" + version
        return kube_present.api_resource_list(gv, self.by_gv[(group, version)])

    def openapi_docs(self, group, version):
        return kube_present.openapi_gv(group, version, self.by_gv.get((group, version), []))

    def gvs(self):
        return [(g, v) for g, vs in self.groups() for v in vs]


class ErrorWatch:
    """A watch answered 200 with one ERROR event (a too old resourceVersion)."""

    def __init__(self, err):
        self.err = err
        self.ctype = "application/json"

    def body(self):
        return b'{"type":"ERROR","object":' + dumps(self.err.status()) + b"}\n"


def _drop_nulls(v):
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


def load_json_objects(path):
    gc_was = gc.isenabled()
    gc.disable()
    try:
        with open(path) as f:
            data = json.load(f)
    finally:
        if gc_was:
            gc.enable()
    if isinstance(data, dict) and (data.get("kind") == "List" or
                                   (data.get("kind", "").endswith("List") and "items" in data)):
        return list(data.get("items") or [])
    if isinstance(data, list):
        return data
    return [data]


def load_dir(path):
    out = []
    for name in sorted(os.listdir(path)):
        if name.endswith(".json"):
            out.extend(load_json_objects(os.path.join(path, name)))
    return out
