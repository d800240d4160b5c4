"""Admission webhooks for the test API server: Mutating- and ValidatingWebhookConfigurations
matched and called as kube-apiserver calls them (AdmissionReview v1 over HTTPS)."""
import base64
import errno
import http.client
import json
import os
import socket
import ssl
import urllib.parse
import uuid

import kube_cel
import kube_patch
import kube_select
from kube_status import ApiError, internal, forbidden


class Attributes:
    """One admission request: what is written, by whom."""

    def __init__(self, res, subresource, operation, namespace, name, obj, old, user,
                 dry_run, options, namespace_labels):
        self.res = res
        self.subresource = subresource or ""
        self.operation = operation
        self.namespace = namespace or ""
        self.name = name or ""
        self.obj = obj
        self.old = old
        self.user = user
        self.dry_run = dry_run
        self.options = options
        self.namespace_labels = namespace_labels  # callable ns -> labels or None


def _rule_matches(rule, a, version):
    res = a.res
    ops = rule.get("operations") or []
    if "*" not in ops and a.operation not in ops:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and res.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and version not in versions:
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and res.namespaced:
        return False
    if scope == "Namespaced" and not res.namespaced:
        return False
    for r in rule.get("resources") or []:
        rr, _, sub = r.partition("/")
        if (rr == "*" or rr == res.plural) and (sub == "*" or sub == a.subresource):
            return True
    return False


class Webhook:
    def __init__(self, cfg_name, w, mutating, index):
        self.cfg_name = cfg_name
        self.w = w
        self.name = w.get("name", "")
        self.mutating = mutating
        self.index = index
        self.conditions = []
        for mc in w.get("matchConditions") or []:
            # Compiled when the configuration is stored; refused there when outside the subset.
            self.conditions.append((mc.get("expression"),
                                    kube_cel.compile_expr(mc.get("expression"))))

    @property
    def failure_policy(self):
        return self.w.get("failurePolicy") or "Fail"

    def match_version(self, a, served_versions):
        """The version to call the webhook at (None: no match)."""
        rules = self.w.get("rules") or []
        for r in rules:
            if _rule_matches(r, a, a.res.version):
                return a.res.version
        if (self.w.get("matchPolicy") or "Equivalent") == "Equivalent":
            for v in served_versions:
                if v != a.res.version and any(_rule_matches(r, a, v) for r in rules):
                    return v
        return None

    def selectors_match(self, a):
        ns_sel = self.w.get("namespaceSelector")
        if a.res.namespaced and ns_sel:
            labels = a.namespace_labels(a.namespace)
            if labels is None:
                labels = {}
            if not kube_select.match_selector(ns_sel, labels):
                return False
        elif a.res.plural == "namespaces" and a.res.group == "" and ns_sel:
            o = a.obj or a.old or {}
            if not kube_select.match_selector(ns_sel, (o.get("metadata") or {}).get("labels")):
                return False
        obj_sel = self.w.get("objectSelector")
        if obj_sel:
            ok = False
            for o in (a.obj, a.old):
                if o is not None and kube_select.match_selector(
                        obj_sel, (o.get("metadata") or {}).get("labels") or {}):
                    ok = True
            if not ok:
                return False
        return True


class Dispatcher:
    def __init__(self, service_urls=None, client_cert=None):
        self.service_urls = service_urls or {}
        self.client_cert = client_cert  # (cert, key) files presented to webhooks, or None

    def hooks(self, configs, mutating):
        """Webhooks of the stored configurations, in kube-apiserver's order (configurations
        by name, webhooks in their order)."""
        out = []
        for cfg in sorted(configs, key=lambda c: c["metadata"]["name"]):
            for i, w in enumerate(cfg.get("webhooks") or []):
                if isinstance(w, dict):
                    out.append(Webhook(cfg["metadata"]["name"], w, mutating, i))
        return out

    def url_for(self, w):
        cc = w.w.get("clientConfig") or {}
        if cc.get("url"):
            return cc["url"]
        svc = cc.get("service") or {}
        key = "%s/%s" % (svc.get("namespace", ""), svc.get("name", ""))
        base = self.service_urls.get(key)
        path = svc.get("path") or ""
        if base is None:
            return "https://%s.%s.svc:%s%s" % (svc.get("name", ""), svc.get("namespace", ""),
                                               svc.get("port", 443), path)
        return base.rstrip("/") + path if path else base

    def mutate(self, a, served_versions, convert, mutating_cfgs, warnings, reprune):
        """Runs the mutating webhooks in order; returns the possibly patched object.
        convert(obj, version) gives obj at another served version."""
        obj = a.obj
        for w in self.hooks(mutating_cfgs, True):
            obj = self._call(w, a, obj, served_versions, convert, warnings, reprune)
        return obj

    def validate(self, a, obj, served_versions, convert, validating_cfgs, warnings):
        """Runs the validating webhooks (in order; the first denial or failure wins)."""
        for w in self.hooks(validating_cfgs, False):
            self._call(w, a, obj, served_versions, convert, warnings, None)

    def _call(self, w, a, obj, served_versions, convert, warnings, reprune):
        version = w.match_version(a, served_versions)
        if version is None or not w.selectors_match(a):
            return obj
        view_obj = convert(obj, version) if obj is not None else None
        view_old = convert(a.old, version) if a.old is not None else None
        req = self._request(w, a, view_obj, view_old, version)
        if w.conditions:
            env = {"object": view_obj, "oldObject": view_old, "request": req}
            errors = []
            for expr, ast in w.conditions:
                try:
                    if not kube_cel.evaluate_bool(ast, env):
                        return obj
                except kube_cel.CelError as e:
                    errors.append("expression '%s' resulted in error: %s" % (expr, e))
            if errors:
                if w.failure_policy == "Ignore":
                    return obj
                raise forbidden(a.res.group, a.res.plural, a.name, errors[0] if len(errors) == 1
                                else "[" + ", ".join(errors) + "]")
        if a.dry_run and w.w.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise ApiError(400, "BadRequest",
                           'admission webhook "%s" does not support dry run' % w.name)
        try:
            resp = self._post(w, req)
        except WebhookCallError as e:
            if w.failure_policy == "Ignore":
                return obj
            raise internal('failed calling webhook "%s": %s' % (w.name, e))
        for text in resp.get("warnings") or []:
            warnings.append(text)
        if not resp.get("allowed"):
            st = dict(resp.get("status") or {})
            code = st.get("code") or 0
            if code < 400:
                code = 400
            msg = 'admission webhook "%s" denied the request' % w.name
            if st.get("message"):
                msg += ": " + st["message"]
            elif st.get("reason"):
                msg += ": " + st["reason"]
            else:
                msg += " without explanation"
            raise ApiError(code, st.get("reason") or "", msg, st.get("details"))
        if w.mutating and resp.get("patch"):
            if resp.get("patchType") != "JSONPatch":
                raise internal('failed calling webhook "%s": unsupported patch type "%s"'
                               % (w.name, resp.get("patchType")))
            try:
                ops = json.loads(base64.b64decode(resp["patch"]))
                patched = kube_patch.json_patch(view_obj, ops)
            except (ValueError, kube_patch.PatchError) as e:
                raise internal("JSON Patch: %s" % e)
            obj = convert(patched, a.res.version)
            if reprune is not None:
                obj = reprune(obj)
        return obj

    def _request(self, w, a, obj, old, version):
        res = a.res
        kind = {"group": res.group, "version": version, "kind": res.kind}
        resource = {"group": res.group, "version": version, "resource": res.plural}
        req = {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "requestKind": {"group": res.group, "version": res.version, "kind": res.kind},
            "requestResource": {"group": res.group, "version": res.version,
                                "resource": res.plural},
            "name": a.name,
            "operation": a.operation,
            "userInfo": {"username": a.user.name, "groups": list(a.user.groups)},
            "object": obj,
            "oldObject": old,
            "dryRun": bool(a.dry_run),
            "options": a.options,
        }
        if a.subresource:
            req["subResource"] = a.subresource
            req["requestSubResource"] = a.subresource
        if a.namespace:
            req["namespace"] = a.namespace
        if a.user.uid:
            req["userInfo"]["uid"] = a.user.uid
        return req

    def _post(self, w, req):
        url = self.url_for(w)
        timeout = w.w.get("timeoutSeconds") or 10
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "request": req}).encode()
        u = urllib.parse.urlsplit(url)
        full = url + ("&" if u.query else "?") + "timeout=%ds" % timeout
        shown = 'Post "%s"' % full
        if u.scheme != "https":
            raise WebhookCallError("failed to call webhook: %s: unsupported protocol scheme "
                                   '"%s"' % (shown, u.scheme))
        ctx = ssl.create_default_context()
        ca = (w.w.get("clientConfig") or {}).get("caBundle")
        if ca:
            try:
                ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
            except (ValueError, ssl.SSLError):
                raise WebhookCallError("could not get REST client: unable to load root "
                                       "certificates: unable to parse bytes as PEM block")
        if self.client_cert and all(os.path.exists(f) for f in self.client_cert):
            ctx.load_cert_chain(*self.client_cert)
        host = u.hostname or ""
        port = u.port or 443
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
        try:
            path = (u.path or "/") + "?" + (u.query + "&" if u.query else "") + \
                "timeout=%ds" % timeout
            conn.request("POST", path, body=body,
                         headers={"Content-Type": "application/json",
                                  "Accept": "application/json, */*"})
            r = conn.getresponse()
            data = r.read()
        except socket.timeout:
            raise WebhookCallError("failed to call webhook: %s: context deadline exceeded"
                                   % shown)
        except ssl.SSLCertVerificationError as e:
            why = "x509: certificate signed by unknown authority" if "self" in str(e) or \
                "unable to get local issuer" in str(e) else "x509: %s" % e.verify_message
            raise WebhookCallError("failed to call webhook: %s: tls: failed to verify "
                                   "certificate: %s" % (shown, why))
        except ConnectionRefusedError:
            raise WebhookCallError("failed to call webhook: %s: dial tcp %s:%d: connect: "
                                   "connection refused" % (shown, host, port))
        except socket.gaierror:
            raise WebhookCallError("failed to call webhook: %s: dial tcp: lookup %s: no such "
                                   "host" % (shown, host))
        except (OSError, http.client.HTTPException) as e:
            if getattr(e, "errno", None) == errno.ECONNRESET:
                raise WebhookCallError("failed to call webhook: %s: read: connection reset by "
                                       "peer" % shown)
            raise WebhookCallError("failed to call webhook: %s: %s" % (shown, e))
        finally:
            conn.close()
        if r.status != 200:
            raise WebhookCallError("failed to call webhook: an error on the server (\"%s\") has "
                                   "prevented the request from succeeding"
                                   % data.decode(errors="replace").strip()[:200])
        try:
            review = json.loads(data)
        except ValueError as e:
            raise WebhookCallError("received invalid webhook response: %s" % e)
        if not isinstance(review, dict) or review.get("kind") != "AdmissionReview" or \
                review.get("apiVersion") != "admission.k8s.io/v1":
            raise WebhookCallError("received invalid webhook response: expected webhook "
                                   "response of admission.k8s.io/v1, Kind=AdmissionReview, "
                                   "got %s, Kind=%s" % (review.get("apiVersion") if
                                                        isinstance(review, dict) else "",
                                                        review.get("kind") if
                                                        isinstance(review, dict) else ""))
        resp = review.get("response")
        if not isinstance(resp, dict):
            raise WebhookCallError("received invalid webhook response: webhook response was "
                                   "absent")
        if resp.get("uid") != req["uid"]:
            raise WebhookCallError('received invalid webhook response: expected '
                                   'response.uid="%s", got "%s"' % (req["uid"], resp.get("uid")))
        return resp


class WebhookCallError(Exception):
    pass
