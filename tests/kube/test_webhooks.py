"""Admission webhooks: mutating JSONPatch responses applied (before validating webhooks),
validating denials, warnings, failurePolicy Fail/Ignore on a dead URL and on a timeout,
rules with subresources, namespace and object selectors, matchConditions (and a configuration
outside the CEL subset refused), service references mapped with --service-url."""
import base64
import json
import unittest

import kube_testlib
from kube_testlib import Server, Webhook, free_port, ns_path, pod

S = None
C = None
HOOK = None
SVC = None
CALLS = []
MWC = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


class _CertServer:
    dir = kube_testlib._cert_dir()


def handler(req, path):
    CALLS.append((path, req))
    if path.startswith("/mutate"):
        ops = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
        return {"patchType": "JSONPatch",
                "patch": base64.b64encode(json.dumps(ops).encode()).decode(),
                "warnings": ["mutated by the test webhook"]}
    if path.startswith("/deny"):
        return {"allowed": False, "status": {"message": "nope", "code": 403,
                                             "reason": "Forbidden"}}
    if path.startswith("/record"):
        return {}
    return {}


def setUpModule():
    global S, C, HOOK, SVC
    HOOK = Webhook(_CertServer, handler, require_client_cert=True)
    SVC = Webhook(_CertServer, handler)
    S = Server("--service-url", "hooks/svc=%s" % SVC.url)
    C = S.client()
    C.post("/api/v1/namespaces", {"metadata": {"name": "hooked", "labels": {"hooks": "on"}}})


def tearDownModule():
    S.stop()
    HOOK.stop()
    SVC.stop()


def webhook(name, path, rules, url=None, **kw):
    w = {"name": name, "clientConfig": {"url": (url or HOOK.url) + path,
                                        "caBundle": HOOK.ca_bundle},
         "rules": rules, "sideEffects": "None", "admissionReviewVersions": ["v1"],
         "namespaceSelector": {"matchLabels": {"hooks": "on"}}}
    w.update(kw)
    return w


def config(path, name, *hooks):
    kind = "MutatingWebhookConfiguration" if path == MWC else "ValidatingWebhookConfiguration"
    r = C.post(path, {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                      "metadata": {"name": name}, "webhooks": list(hooks)})
    assert r.status == 201, r.json
    return r


def rule(resources, ops=("CREATE",), groups=("",), versions=("v1",)):
    return {"operations": list(ops), "apiGroups": list(groups), "apiVersions": list(versions),
            "resources": list(resources)}


class WebhookTest(unittest.TestCase):
    def tearDown(self):
        for path in (MWC, VWC):
            for item in C.get(path).json["items"]:
                C.delete(path + "/" + item["metadata"]["name"])
        del CALLS[:]

    def test_mutate_then_validate(self):
        config(MWC, "m", webhook("mutate.example.com", "/mutate", [rule(["pods"])]))
        config(VWC, "v", webhook("record.example.com", "/record", [rule(["pods"])]))
        r = C.post(ns_path("pods", "hooked"), pod("m1", "hooked"))
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(r.json["metadata"]["labels"], {"mutated": "yes"})
        self.assertEqual(r.warnings(), ['299 - "mutated by the test webhook"'])
        (p1, mreq), (p2, vreq) = CALLS
        self.assertEqual((p1, p2), ("/mutate?timeout=10s", "/record?timeout=10s"))
        self.assertEqual(mreq["operation"], "CREATE")
        self.assertEqual(mreq["kind"], {"group": "", "version": "v1", "kind": "Pod"})
        self.assertEqual(mreq["resource"], {"group": "", "version": "v1", "resource": "pods"})
        self.assertEqual((mreq["namespace"], mreq["name"]), ("hooked", "m1"))
        self.assertEqual(mreq["userInfo"]["username"], "admin")
        self.assertIsNone(mreq["oldObject"])
        self.assertEqual(mreq["options"]["kind"], "CreateOptions")
        self.assertEqual(vreq["object"]["metadata"]["labels"], {"mutated": "yes"})
        # The server presents its webhook client certificate (CN=kube-apiserver).
        self.assertEqual(HOOK.peers[-1], "kube-apiserver")
        # Objects outside the namespace selector are not sent.
        del CALLS[:]
        self.assertEqual(C.post(ns_path("pods"), pod("m2")).status, 201)
        self.assertEqual(CALLS, [])

    def test_deny_and_delete(self):
        config(VWC, "v", webhook("deny.example.com", "/deny", [rule(["pods"], ["DELETE"])]))
        self.assertEqual(C.post(ns_path("pods", "hooked"), pod("d1", "hooked")).status, 201)
        r = C.delete(ns_path("pods", "hooked", "d1"))
        self.assertEqual(r.status, 403)
        self.assertEqual(r.json["message"], 'admission webhook "deny.example.com" denied the '
                                            'request: nope')
        self.assertEqual(r.json["reason"], "Forbidden")
        _, req = CALLS[0]
        self.assertEqual((req["operation"], req["object"]), ("DELETE", None))
        self.assertEqual(req["oldObject"]["metadata"]["name"], "d1")
        self.assertEqual(req["options"]["kind"], "DeleteOptions")

    def test_failure_policy(self):
        port = free_port()
        config(VWC, "v", webhook("dead.example.com", "/x", [rule(["configmaps"])],
                                 url="https://127.0.0.1:%d" % port))
        r = C.post(ns_path("configmaps", "hooked"), {"metadata": {"name": "f1"}})
        self.assertEqual(r.status, 500)
        self.assertEqual(r.json["message"],
                         'Internal error occurred: failed calling webhook "dead.example.com": '
                         'failed to call webhook: Post "https://127.0.0.1:%d/x?timeout=10s": '
                         'dial tcp 127.0.0.1:%d: connect: connection refused' % (port, port))
        self.assertEqual(r.json["reason"], "InternalError")
        C.delete(VWC + "/v")
        config(VWC, "v", webhook("dead.example.com", "/x", [rule(["configmaps"])],
                                 url="https://127.0.0.1:%d" % port, failurePolicy="Ignore"))
        self.assertEqual(C.post(ns_path("configmaps", "hooked"),
                                {"metadata": {"name": "f2"}}).status, 201)

    def test_timeout(self):
        HOOK.delay = 1.5
        try:
            config(VWC, "v", webhook("slow.example.com", "/record", [rule(["configmaps"])],
                                     timeoutSeconds=1))
            r = C.post(ns_path("configmaps", "hooked"), {"metadata": {"name": "t1"}})
            self.assertEqual(r.status, 500)
            self.assertIn('failed calling webhook "slow.example.com": failed to call webhook: '
                          'Post "%s/record?timeout=1s": context deadline exceeded' % HOOK.url,
                          r.json["message"])
        finally:
            HOOK.delay = 0

    def test_subresource_rules_and_object_selector(self):
        config(VWC, "v", webhook("runs.example.com", "/record",
                                 [rule(["runs/status"], ["UPDATE"], ["kruntimes.io"],
                                       ["v1alpha1"])],
                                 objectSelector={"matchLabels": {"watch": "me"}}))
        runs = "/apis/kruntimes.io/v1alpha1/namespaces/hooked/runs"
        for name, labels in (("r1", {"watch": "me"}), ("r2", {})):
            C.post(runs, {"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                          "metadata": {"name": name, "labels": labels},
                          "spec": {"runtime": "python"}})
            C.patch(runs + "/" + name, {"spec": {"runtime": "bash"}})
            C.patch(runs + "/" + name + "/status", {"status": {"phase": "Scheduled"}})
        self.assertEqual(len(CALLS), 1)
        _, req = CALLS[0]
        self.assertEqual((req["subResource"], req["operation"], req["name"]),
                         ("status", "UPDATE", "r1"))
        self.assertEqual(req["oldObject"].get("status"), None)
        self.assertEqual(req["object"]["status"], {"phase": "Scheduled"})

    def test_match_conditions(self):
        config(VWC, "v", webhook("cond.example.com", "/deny", [rule(["configmaps"])],
                                 matchConditions=[
                                     {"name": "prefix",
                                      "expression": "object.metadata.name.startsWith('deny-')"},
                                     {"name": "labelled",
                                      "expression": "has(object.metadata.labels) && "
                                                    "object.metadata.labels['x'] == 'y' && "
                                                    "request.operation != 'DELETE'"}]))
        ok = C.post(ns_path("configmaps", "hooked"), {"metadata": {"name": "deny-no-label"}})
        self.assertEqual(ok.status, 201)
        r = C.post(ns_path("configmaps", "hooked"), {"metadata": {"name": "deny-1",
                                                                   "labels": {"x": "y"}}})
        self.assertEqual(r.status, 403)
        self.assertEqual(C.post(ns_path("configmaps", "hooked"), {
            "metadata": {"name": "other", "labels": {"x": "y"}}}).status, 201)
        # An evaluation error fails closed (failurePolicy Fail) without calling the webhook.
        C.delete(VWC + "/v")
        config(VWC, "v", webhook("err.example.com", "/record", [rule(["configmaps"])],
                                 matchConditions=[{"name": "e", "expression":
                                                   "object.metadata.labels['x'] == 'y'"}]))
        del CALLS[:]
        r = C.post(ns_path("configmaps", "hooked"), {"metadata": {"name": "nolabels"}})
        self.assertEqual(r.status, 403)
        self.assertEqual(r.json["message"], 'configmaps "nolabels" is forbidden: expression '
                                            "'object.metadata.labels['x'] == 'y'' resulted in "
                                            "error: no such key: labels")
        self.assertEqual(CALLS, [])
        # An expression outside the supported subset refuses the configuration.
        r = C.post(VWC, {"apiVersion": "admissionregistration.k8s.io/v1",
                         "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bad"},
                         "webhooks": [webhook("bad.example.com", "/deny", [rule(["pods"])],
                                              matchConditions=[{
                                                  "name": "m", "expression":
                                                  "object.metadata.labels.exists(k, k == 'a')"}])]})
        self.assertEqual(r.status, 422)
        self.assertIn("webhooks[0].matchConditions[0].expression", r.json["message"])
        self.assertIn("outside the supported CEL subset", r.json["message"])
        self.assertEqual(C.get(VWC + "/bad").status, 404)
        r = S.client(token="").request("POST", "/_test/put", {"object": {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bad"},
            "webhooks": [webhook("bad.example.com", "/deny", [rule(["pods"])], matchConditions=[
                {"name": "m", "expression": "authorizer.path('/x').check('get').allowed()"}])]}})
        self.assertEqual(r.status, 422)

    def test_service_reference(self):
        config(MWC, "m", {"name": "svc.example.com",
                          "clientConfig": {"service": {"namespace": "hooks", "name": "svc",
                                                       "path": "/mutate"},
                                           "caBundle": HOOK.ca_bundle},
                          "rules": [rule(["configmaps"])], "sideEffects": "None",
                          "admissionReviewVersions": ["v1"]})
        r = C.post(ns_path("configmaps"), {"metadata": {"name": "svc1"}})
        self.assertEqual(r.json["metadata"]["labels"], {"mutated": "yes"})


if __name__ == "__main__":
    unittest.main()
