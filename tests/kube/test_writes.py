"""Writes: create/update/delete with kube-apiserver's metadata and Status answers, optimistic
concurrency (two Lease updates at one resourceVersion: exactly one wins), status subresources,
the three patch types, pruning and field validation of custom resources, built-in defaults."""
import threading
import unittest

from kube_testlib import QUEUES, RUNS, ns_path, pod, shared_server

S = C = None
setUpModule, tearDownModule = shared_server(__name__)


def queue(name, **spec):
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name},
            "spec": spec}


class CreateTest(unittest.TestCase):
    def test_metadata_the_server_sets(self):
        st, _, o = C.post(ns_path("pods"), pod("meta-1"))
        self.assertEqual(st, 201, o)
        m = o["metadata"]
        self.assertRegex(m["uid"], r"^[0-9a-f-]{36}$")
        self.assertRegex(m["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertTrue(m["resourceVersion"].isdigit())
        self.assertEqual(m["managedFields"][0]["manager"], "kube-test")
        self.assertEqual(m["managedFields"][0]["operation"], "Update")
        # Defaults and the Pending status a created pod gets.
        self.assertEqual(o["spec"]["schedulerName"], "default-scheduler")
        self.assertEqual(o["status"], {"phase": "Pending", "qosClass": "BestEffort"})
        st, _, o = C.post(ns_path("pods"), pod("meta-2", containers=[
            {"name": "a", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]))
        self.assertEqual(o["spec"]["containers"][0]["resources"]["requests"],
                         {"cpu": "1", "memory": "1Gi"})
        self.assertEqual(o["status"]["qosClass"], "Guaranteed")

    def test_already_exists_and_not_found(self):
        C.post(ns_path("pods"), pod("dup"))
        st, _, o = C.post(ns_path("pods"), pod("dup"))
        self.assertEqual(st, 409)
        self.assertEqual(o, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Failure", "message": 'pods "dup" already exists',
                             "reason": "AlreadyExists",
                             "details": {"name": "dup", "kind": "pods"}, "code": 409})
        st, _, o = C.get(ns_path("pods", name="nope"))
        self.assertEqual((st, o["message"], o["reason"]), (404, 'pods "nope" not found',
                                                           "NotFound"))
        st, _, o = C.get(QUEUES + "/nope")
        self.assertEqual(o["message"], 'queues.scheduling.run.ai "nope" not found')
        self.assertEqual(o["details"], {"name": "nope", "group": "scheduling.run.ai",
                                        "kind": "queues"})

    def test_namespace_must_exist_and_match(self):
        st, _, o = C.post(ns_path("pods", "ghost"), pod("x", "ghost"))
        self.assertEqual((st, o["message"]), (404, 'namespaces "ghost" not found'))
        st, _, o = C.post(ns_path("pods"), pod("x", "kube-system"))
        self.assertEqual(st, 400)
        self.assertIn("does not match the namespace", o["message"])

    def test_invalid(self):
        st, _, o = C.post(ns_path("pods"), {"metadata": {"name": "Bad_Name"},
                                            "spec": {"containers": []}})
        self.assertEqual(st, 422)
        self.assertEqual(o["reason"], "Invalid")
        self.assertTrue(o["message"].startswith('Pod "Bad_Name" is invalid: ['))
        self.assertIn("spec.containers: Required value", o["message"])
        st, _, o = C.post(ns_path("pods"), {"metadata": {}, "spec": {}})
        self.assertEqual(o["message"], 'Pod "" is invalid: metadata.name: Required value: name '
                                       'or generateName is required')
        st, _, o = C.post(ns_path("pods"), {"metadata": {"generateName": "gen-"},
                                            "spec": {"containers": [{"name": "a",
                                                                     "image": "b"}]}})
        self.assertEqual(st, 201)
        self.assertRegex(o["metadata"]["name"], r"^gen-[a-z0-9]{5}$")

    def test_priority_class_admission(self):
        st, _, o = C.post(ns_path("pods"), pod("prio", priorityClassName="system-node-critical"))
        self.assertEqual(o["spec"]["priority"], 2000001000)
        st, _, o = C.post(ns_path("pods"), pod("prio2", priorityClassName="missing"))
        self.assertEqual(st, 403)
        self.assertEqual(o["message"], 'pods "prio2" is forbidden: no PriorityClass with name '
                                       'missing was found')

    def test_protobuf_bodies_are_read(self):
        # The envelope of a Namespace {metadata: {name: pb-ns}} as client-go writes it.
        meta = b"\x0a\x05pb-ns"
        ns = b"\x0a" + bytes([len(meta)]) + meta
        tm = b"\x0a\x02v1\x12\x09Namespace"
        unknown = b"\x0a" + bytes([len(tm)]) + tm + b"\x12" + bytes([len(ns)]) + ns
        st, _, o = C.post("/api/v1/namespaces", b"k8s\x00" + unknown,
                          ctype="application/vnd.kubernetes.protobuf")
        self.assertEqual(st, 201, o)
        self.assertEqual(o["metadata"]["name"], "pb-ns")
        self.assertEqual(o["status"], {"phase": "Active"})


class UpdateTest(unittest.TestCase):
    def test_stale_resource_version_conflicts(self):
        st, _, o = C.post(ns_path("configmaps"), {"metadata": {"name": "cf"}, "data": {"a": "1"}})
        o["data"]["a"] = "2"
        st, _, o2 = C.put(ns_path("configmaps", name="cf"), o)
        self.assertEqual(st, 200)
        self.assertNotEqual(o2["metadata"]["resourceVersion"], o["metadata"]["resourceVersion"])
        o["data"]["a"] = "3"
        st, _, e = C.put(ns_path("configmaps", name="cf"), o)
        self.assertEqual(st, 409)
        self.assertEqual(e["message"], 'Operation cannot be fulfilled on configmaps "cf": the '
                                       'object has been modified; please apply your changes to '
                                       'the latest version and try again')
        self.assertEqual(e["reason"], "Conflict")
        # A no-op update keeps the resourceVersion.
        st, _, o3 = C.put(ns_path("configmaps", name="cf"), o2)
        self.assertEqual(o3["metadata"]["resourceVersion"], o2["metadata"]["resourceVersion"])

    def test_concurrent_lease_updates_one_wins(self):
        path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
        st, _, lease = C.post(path, {"metadata": {"name": "tally"},
                                     "spec": {"holderIdentity": "nobody",
                                              "leaseDurationSeconds": 15}})
        self.assertEqual(st, 201)
        for round_ in range(5):
            lease = C.get(path + "/tally").json
            results = []

            def take(me):
                c = S.client()
                body = dict(lease, spec=dict(lease["spec"], holderIdentity=me))
                results.append((me, c.put(path + "/tally", body).status))
                c.close()
            ts = [threading.Thread(target=take, args=("h%d-%d" % (round_, i),))
                  for i in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(10)
            codes = sorted(code for _, code in results)
            self.assertEqual(codes, [200, 409, 409, 409], results)
            winner = [me for me, code in results if code == 200][0]
            self.assertEqual(C.get(path + "/tally").json["spec"]["holderIdentity"], winner)

    def test_main_resource_ignores_status_and_status_only_status(self):
        st, _, r = C.post(RUNS, {"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                                 "metadata": {"name": "st"}, "spec": {"runtime": "python"},
                                 "status": {"phase": "Running"}})
        self.assertEqual(st, 201, r)
        self.assertNotIn("status", r)
        self.assertEqual(r["metadata"]["generation"], 1)
        st, _, r = C.patch(RUNS + "/st", {"spec": {"runtime": "bash"},
                                          "status": {"phase": "Running"}})
        self.assertEqual((r["spec"]["runtime"], r.get("status")), ("bash", None))
        self.assertEqual(r["metadata"]["generation"], 2)
        st, _, r = C.patch(RUNS + "/st/status", {"spec": {"runtime": "go"},
                                                 "metadata": {"labels": {"a": "b"}},
                                                 "status": {"phase": "Scheduled",
                                                            "assignedPod": "rt-0"}})
        self.assertEqual(st, 200, r)
        self.assertEqual(r["spec"]["runtime"], "bash")
        self.assertNotIn("labels", r["metadata"])
        self.assertEqual(r["status"], {"phase": "Scheduled", "assignedPod": "rt-0"})
        self.assertEqual(r["metadata"]["generation"], 2)
        self.assertEqual(r["metadata"]["managedFields"][-1]["subresource"], "status")
        # Pods: a status write may change labels, not the spec.
        C.post(ns_path("pods"), pod("ps"))
        st, _, p = C.patch(ns_path("pods", name="ps", sub="status"),
                           {"metadata": {"labels": {"x": "y"}}, "spec": {"nodeName": "n"},
                            "status": {"phase": "Running"}})
        self.assertEqual((p["status"]["phase"], p["metadata"]["labels"],
                          p["spec"].get("nodeName")), ("Running", {"x": "y"}, None))
        st, _, p = C.patch(ns_path("pods", name="ps"), {"status": {"phase": "Failed"}})
        self.assertEqual(p["status"]["phase"], "Running")

    def test_pod_spec_is_immutable_but_gates_can_go(self):
        C.post(ns_path("pods"), pod("gated", schedulingGates=[{"name": "a"}, {"name": "b"}]))
        st, _, e = C.patch(ns_path("pods", name="gated"), {"spec": {"restartPolicy": "Never"}})
        self.assertEqual(st, 422)
        self.assertIn("spec: Forbidden: pod updates may not change fields", e["message"])
        st, _, p = C.patch(ns_path("pods", name="gated"),
                           [{"op": "test", "path": "/spec/schedulingGates/0/name", "value": "a"},
                            {"op": "remove", "path": "/spec/schedulingGates/0"}], "json")
        self.assertEqual((st, p["spec"]["schedulingGates"]), (200, [{"name": "b"}]))
        st, _, e = C.patch(ns_path("pods", name="gated"),
                           {"spec": {"schedulingGates": [{"name": "c"}]}}, "strategic")
        self.assertEqual(st, 422)
        self.assertIn("only deletion is allowed", e["message"])

    def test_binding_and_resize(self):
        C.post(ns_path("pods"), pod("bindme"))
        st, _, o = C.post(ns_path("pods", name="bindme", sub="binding"),
                          {"apiVersion": "v1", "kind": "Binding",
                           "metadata": {"name": "bindme"}, "target": {"name": "node-1"}})
        self.assertEqual(st, 201, o)
        self.assertEqual(C.get(ns_path("pods", name="bindme")).json["spec"]["nodeName"], "node-1")
        st, _, p = C.patch(ns_path("pods", name="bindme", sub="resize"),
                           {"spec": {"containers": [{"name": "main", "resources": {
                               "requests": {"cpu": "2"}}}]}}, "strategic")
        self.assertEqual(st, 200, p)
        self.assertEqual(p["spec"]["containers"][0]["resources"]["requests"], {"cpu": "2"})

    def test_finalizers_delay_deletion(self):
        C.post(ns_path("configmaps"), {"metadata": {"name": "fin", "finalizers": ["x/y"]}})
        st, _, o = C.delete(ns_path("configmaps", name="fin"))
        self.assertEqual(st, 202)
        self.assertIn("deletionTimestamp", o["metadata"])
        self.assertEqual(C.get(ns_path("configmaps", name="fin")).status, 200)
        C.patch(ns_path("configmaps", name="fin"), {"metadata": {"finalizers": None}})
        self.assertEqual(C.get(ns_path("configmaps", name="fin")).status, 404)

    def test_delete_preconditions(self):
        st, _, o = C.post(ns_path("configmaps"), {"metadata": {"name": "pre"}})
        st, _, e = C.delete(ns_path("configmaps", name="pre"),
                            {"preconditions": {"uid": "other"}})
        self.assertEqual(st, 409)
        self.assertEqual(e["message"], 'Operation cannot be fulfilled on configmaps "pre": '
                                       'Precondition failed: UID in precondition: other, UID in '
                                       'object meta: %s' % o["metadata"]["uid"])
        st, _, e = C.delete(ns_path("configmaps", name="pre"),
                            {"preconditions": {"resourceVersion": "1"}})
        self.assertEqual(st, 409)
        st, _, _ = C.delete(ns_path("configmaps", name="pre"),
                            {"preconditions": {"uid": o["metadata"]["uid"]}})
        self.assertEqual(st, 200)
        st, _, e = C.delete(ns_path("configmaps", name="pre"))
        self.assertEqual((st, e["message"]), (404, 'configmaps "pre" not found'))

    def test_dry_run_stores_nothing(self):
        st, _, o = C.post(ns_path("configmaps"), {"metadata": {"name": "dry"}},
                          query={"dryRun": "All"})
        self.assertEqual(st, 201)
        self.assertEqual(C.get(ns_path("configmaps", name="dry")).status, 404)


class PatchTest(unittest.TestCase):
    def test_json_patch_test_failure_is_422(self):
        C.post(QUEUES, queue("jp", priority=1))
        st, _, e = C.patch(QUEUES + "/jp", [{"op": "test", "path": "/spec/priority", "value": 2},
                                           {"op": "replace", "path": "/spec/priority",
                                            "value": 3}], "json")
        self.assertEqual(st, 422)
        self.assertEqual(e["message"], "the server rejected our request due to an error in our "
                                       "request")
        self.assertEqual(e["reason"], "Invalid")
        st, _, o = C.patch(QUEUES + "/jp", [{"op": "test", "path": "/spec/priority", "value": 1},
                                           {"op": "replace", "path": "/spec/priority",
                                            "value": 3}], "json")
        self.assertEqual((st, o["spec"]["priority"]), (200, 3))
        st, _, e = C.patch(QUEUES + "/jp", "{not json", "json")
        self.assertEqual(st, 400)

    def test_merge_patch_nulls_delete(self):
        C.post(QUEUES, queue("mp", priority=1, displayName="x"))
        st, _, o = C.patch(QUEUES + "/mp", {"spec": {"displayName": None, "parentQueue": "p"}})
        self.assertEqual(o["spec"], {"priority": 1, "parentQueue": "p"})

    def test_strategic_merge_on_custom_resources_is_415(self):
        C.post(QUEUES, queue("smp"))
        st, _, e = C.patch(QUEUES + "/smp", {"spec": {"priority": 2}}, "strategic")
        self.assertEqual(st, 415)
        self.assertEqual(e["reason"], "UnsupportedMediaType")
        self.assertEqual(e["message"], "the body of the request was in an unknown format - "
                                       "accepted media types include: application/json-patch+"
                                       "json, application/merge-patch+json, application/apply-"
                                       "patch+yaml")

    def test_strategic_merge_keys(self):
        C.post(ns_path("pods"), pod("smp", containers=[{"name": "a", "image": "x"},
                                                        {"name": "b", "image": "y"}]))
        cur = C.get(ns_path("pods", name="smp")).json
        tol = cur["spec"]["tolerations"] + [{"key": "k2", "operator": "Exists"}]
        st, _, o = C.patch(ns_path("pods", name="smp"), {
            "metadata": {"labels": {"l": "1"}, "finalizers": ["f/1", "f/2"]},
            "spec": {"containers": [{"name": "b", "image": "y2"}], "tolerations": tol}},
            "strategic")
        self.assertEqual(st, 200, o)
        a, b = o["spec"]["containers"]
        self.assertEqual((a["name"], a["image"], b["name"], b["image"]), ("a", "x", "b", "y2"))
        self.assertEqual(o["spec"]["tolerations"][-1]["key"], "k2")
        # Replacing the tolerations drops existing ones: the pod update validation refuses it.
        st, _, e = C.patch(ns_path("pods", name="smp"), {"spec": {"tolerations": [
            {"key": "k3", "operator": "Exists"}]}}, "strategic")
        self.assertEqual(st, 422)
        st, _, o = C.patch(ns_path("pods", name="smp"), {
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["f/1"]}}, "strategic")
        self.assertEqual(o["metadata"]["finalizers"], ["f/2"])
        C.patch(ns_path("pods", name="smp"), {"metadata": {"finalizers": None}})
        # Node conditions merge by type through the status subresource.
        C.post("/api/v1/nodes", {"metadata": {"name": "smp-node"}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]}})
        st, _, n = C.patch("/api/v1/nodes/smp-node/status", {"status": {"conditions": [
            {"type": "Ready", "status": "False"}]}}, "strategic")
        self.assertEqual({c["type"]: c["status"] for c in n["status"]["conditions"]},
                         {"Ready": "False", "MemoryPressure": "False"})

    def test_strategic_merge_directives(self):
        import kube_patch
        import kube_schema
        node = kube_schema.builtin().node("", "Pod")
        doc = {"spec": {"containers": [{"name": "a", "env": [{"name": "A", "value": "1"},
                                                             {"name": "B", "value": "2"}]}],
                        "volumes": [{"name": "v", "emptyDir": {}}]}}
        out = kube_patch.strategic_merge(doc, {"spec": {"containers": [
            {"name": "a", "env": [{"name": "B", "value": "3"}, {"name": "A", "$patch": "delete"},
                                  {"name": "C", "value": "4"}]}],
            "volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"],
                         "hostPath": {"path": "/x"}}]}}, node)
        self.assertEqual(out["spec"]["containers"][0]["env"],
                         [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
        self.assertEqual(out["spec"]["volumes"], [{"name": "v", "hostPath": {"path": "/x"}}])
        out = kube_patch.strategic_merge(doc, {"spec": {"containers": [
            {"name": "z"}, {"$patch": "replace"}]}}, node)
        self.assertEqual(out["spec"]["containers"], [{"name": "z"}])
        out = kube_patch.strategic_merge(doc, {"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "b"}]}}, node)
        self.assertEqual([c["name"] for c in out["spec"]["containers"]], ["b", "a"])


class PruningTest(unittest.TestCase):
    def test_unknown_fields_are_pruned_with_a_warning(self):
        r = C.post(QUEUES, queue("pr", priority=1, bogus=True))
        self.assertEqual(r.status, 201)
        self.assertNotIn("bogus", r.json["spec"])
        self.assertEqual(r.warnings(), ['299 - "unknown field \\"spec.bogus\\""'])
        r = C.patch(QUEUES + "/pr/status", {"status": {"accountedResources": [
            {"resourceRef": "gpu", "used": "1"}], "childQueues": ["a"]}})
        self.assertEqual(r.json["status"], {"childQueues": ["a"]})

    def test_strict_field_validation(self):
        r = C.post(QUEUES, queue("strict", bogus=1), query={"fieldValidation": "Strict"})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["message"], 'Queue in version "v2" cannot be handled as a Queue: '
                                            'strict decoding error: unknown field "spec.bogus"')
        r = C.post(QUEUES, queue("ignore", bogus=1), query={"fieldValidation": "Ignore"})
        self.assertEqual((r.status, r.warnings()), (201, []))
        r = C.post(ns_path("pods"), dict(pod("strictpod"), extra=1),
                   query={"fieldValidation": "Strict"})
        self.assertEqual(r.status, 400)
        self.assertIn('unknown field "extra"', r.json["message"])

    def test_preserve_unknown_and_schema_validation(self):
        r = C.post("/apis/kai.scheduler/v1/configs", {
            "apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "cfg"},
            "spec": {"global": {"schedulerName": "s", "anything": {"x": 1}}, "other": [1]}})
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(r.json["spec"]["global"]["anything"], {"x": 1})
        self.assertEqual(r.json["spec"]["other"], [1])
        r = C.post(QUEUES, queue("badtype", priority="high"))
        self.assertEqual(r.status, 422)
        self.assertIn("spec.priority: Invalid value: \"string\": spec.priority in body must be "
                      "of type integer", r.json["message"])

    def test_crd_added_later_is_served_and_patched_crd_keeps_fields(self):
        crd = C.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                    "queues.scheduling.run.ai").json
        self.assertEqual([c["type"] for c in crd["status"]["conditions"]],
                         ["NamesAccepted", "Established"])
        patch = [{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/status"
                  "/properties/accountedResources",
                  "value": {"type": "array", "items": {"type": "object",
                                                       "x-kubernetes-preserve-unknown-fields":
                                                       True}}}]
        r = C.patch("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                    "queues.scheduling.run.ai", patch, "json")
        self.assertEqual(r.status, 200, r.json)
        C.post(QUEUES, queue("after-patch"))
        r = C.patch(QUEUES + "/after-patch/status", {"status": {"accountedResources": [
            {"resourceRef": "gpu", "used": "1"}]}})
        self.assertEqual(r.json["status"]["accountedResources"][0]["used"], "1")
        r = C.patch("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                    "queues.scheduling.run.ai",
                    [{"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties"
                      "/status/properties/accountedResources"}], "json")
        self.assertEqual(r.status, 200)
        # A new CRD starts serving its group; deleting it stops serving and drops its objects.
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "widgets", "kind": "Widget"},
                        "versions": [{"name": "v1", "served": True, "storage": True,
                                      "schema": {"openAPIV3Schema": {
                                          "type": "object",
                                          "x-kubernetes-preserve-unknown-fields": True}}}]}}
        self.assertEqual(C.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                crd).status, 201)
        self.assertEqual(C.get("/apis/example.com/v1").status, 200)
        r = C.post("/apis/example.com/v1/namespaces/default/widgets",
                   {"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w"}, "spec": {"size": 3}})
        self.assertEqual(r.status, 201, r.json)
        C.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
        self.assertEqual(C.get("/apis/example.com/v1").status, 404)
        groups = [g["name"] for g in C.get("/apis").json["groups"]]
        self.assertNotIn("example.com", groups)


if __name__ == "__main__":
    unittest.main()
