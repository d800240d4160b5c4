"""Server-side apply: ownership in managedFields (fieldsV1), conflicts and force, list-map
merges by x-kubernetes-list-map-keys, fields an applier drops, apply to /status."""
import unittest

from kube_testlib import QUEUES, RUNS, ns_path, shared_server

S = C = None
setUpModule, tearDownModule = shared_server(__name__)


def apply(path, obj, manager, force=False, **kw):
    q = {"fieldManager": manager}
    if force:
        q["force"] = "true"
    return C.patch(path, obj, "apply", query=q, **kw)


def q(name, spec, **meta):
    m = {"name": name}
    m.update(meta)
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": m, "spec": spec}


def managers(obj):
    return {(m["manager"], m["operation"], m.get("subresource", "")): m["fieldsV1"]
            for m in obj["metadata"].get("managedFields", [])}


class ApplyTest(unittest.TestCase):
    def test_create_records_ownership(self):
        r = apply(QUEUES + "/a1", q("a1", {"priority": 1, "accountedResources": [
            {"resourceRef": "gpu", "limit": "4"}]}, labels={"x": "1"}), "alice")
        self.assertEqual(r.status, 201, r.json)
        self.assertEqual(managers(r.json)[("alice", "Apply", "")], {
            "f:metadata": {"f:labels": {"f:x": {}}},
            "f:spec": {"f:accountedResources": {'k:{"resourceRef":"gpu"}': {
                ".": {}, "f:limit": {}, "f:resourceRef": {}}}, "f:priority": {}}})
        e = r.json["metadata"]["managedFields"][0]
        self.assertEqual((e["apiVersion"], e["fieldsType"]), ("scheduling.run.ai/v2", "FieldsV1"))
        self.assertRegex(e["time"], r"Z$")

    def test_conflict_message_and_force(self):
        apply(QUEUES + "/a2", q("a2", {"priority": 1, "displayName": "A"}), "alice")
        r = apply(QUEUES + "/a2", q("a2", {"priority": 2}), "bob")
        self.assertEqual(r.status, 409)
        self.assertEqual(r.json["reason"], "Conflict")
        self.assertEqual(r.json["message"],
                         'Apply failed with 1 conflict: conflict with "alice": .spec.priority')
        self.assertEqual(r.json["details"]["causes"], [
            {"reason": "FieldManagerConflict", "message": 'conflict with "alice"',
             "field": ".spec.priority"}])
        # The same value is no conflict: both own it.
        r = apply(QUEUES + "/a2", q("a2", {"priority": 1}), "bob")
        self.assertEqual(r.status, 200, r.json)
        self.assertIn("f:priority", managers(r.json)[("bob", "Apply", "")]["f:spec"])
        self.assertIn("f:priority", managers(r.json)[("alice", "Apply", "")]["f:spec"])
        # Two conflicts with two managers, one an Update.
        C.patch(QUEUES + "/a2", {"spec": {"parentQueue": "p"}}, query={"fieldManager": "kubectl"})
        r = apply(QUEUES + "/a2", q("a2", {"priority": 5, "parentQueue": "o",
                                            "displayName": "B"}), "carol")
        self.assertEqual(r.status, 409)
        self.assertEqual(r.json["message"],
                         'Apply failed with 4 conflicts: conflicts with "alice":\n'
                         '- .spec.displayName\n- .spec.priority\n'
                         'conflicts with "bob":\n- .spec.priority\n'
                         'conflicts with "kubectl" using scheduling.run.ai/v2:\n'
                         '- .spec.parentQueue')
        r = apply(QUEUES + "/a2", q("a2", {"priority": 5}), "carol", force=True)
        self.assertEqual((r.status, r.json["spec"]["priority"]), (200, 5))
        m = managers(r.json)
        self.assertNotIn("f:priority", m[("alice", "Apply", "")]["f:spec"])
        self.assertNotIn(("bob", "Apply", ""), m)

    def test_list_map_merge_and_removal(self):
        apply(QUEUES + "/a3", q("a3", {"accountedResources": [
            {"resourceRef": "gpu", "limit": "4"}, {"resourceRef": "mem", "limit": "1Gi"}]}),
            "alice")
        r = apply(QUEUES + "/a3", q("a3", {"accountedResources": [
            {"resourceRef": "h200", "limit": "2"}]}), "bob")
        self.assertEqual([e["resourceRef"] for e in r.json["spec"]["accountedResources"]],
                         ["gpu", "mem", "h200"])
        # alice drops mem from her configuration: it goes; gpu stays.
        r = apply(QUEUES + "/a3", q("a3", {"accountedResources": [
            {"resourceRef": "gpu", "limit": "4"}]}), "alice")
        self.assertEqual([e["resourceRef"] for e in r.json["spec"]["accountedResources"]],
                         ["gpu", "h200"])
        # A field someone else also owns stays when one owner drops it.
        apply(QUEUES + "/a3", q("a3", {"displayName": "x"}), "bob")
        r = apply(QUEUES + "/a3", q("a3", {"displayName": "x", "accountedResources": [
            {"resourceRef": "gpu", "limit": "4"}]}), "alice")
        r = apply(QUEUES + "/a3", q("a3", {"accountedResources": [
            {"resourceRef": "gpu", "limit": "4"}]}), "alice")
        self.assertEqual(r.json["spec"]["displayName"], "x")
        # Atomic lists are replaced whole: Queue status conditions are a plain list.
        C.patch(QUEUES + "/a3/status", {"status": {"conditions": [
            {"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}})
        r = apply(QUEUES + "/a3/status", {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                                          "metadata": {"name": "a3"}, "status": {"conditions": [
                                              {"type": "C", "status": "True"}]}}, "tally",
                  force=True)
        self.assertEqual(r.json["status"]["conditions"], [{"type": "C", "status": "True"}])

    def test_status_apply_and_list_map_conditions(self):
        C.post(RUNS, {"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                      "metadata": {"name": "ar"}, "spec": {"runtime": "python"}})
        cond = {"type": "Scheduled", "status": "True", "reason": "Assigned",
                "message": "assigned to runtime pod rt-0",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}
        body = {"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run", "metadata": {"name": "ar"},
                "spec": {"runtime": "ignored"},
                "status": {"phase": "Scheduled", "assignedPod": "rt-0", "conditions": [cond]}}
        r = apply(RUNS + "/ar/status", body, "tally")
        self.assertEqual(r.status, 200, r.json)
        self.assertEqual(r.json["spec"]["runtime"], "python")
        self.assertEqual(r.json["status"]["phase"], "Scheduled")
        m = managers(r.json)[("tally", "Apply", "status")]
        self.assertEqual(set(m), {"f:status"})
        self.assertIn('k:{"type":"Scheduled"}', m["f:status"]["f:conditions"])
        # Another manager adds a condition of another type: merged by type.
        other = dict(cond, type="Running", reason="Claimed", message="claimed by runtimed")
        r = apply(RUNS + "/ar/status", {"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                                        "metadata": {"name": "ar"},
                                        "status": {"conditions": [other]}}, "runtimed")
        self.assertEqual([c["type"] for c in r.json["status"]["conditions"]],
                         ["Scheduled", "Running"])
        # The status subresource of a missing object is 404, not a create.
        r = apply(RUNS + "/missing/status", dict(body, metadata={"name": "missing"}), "tally")
        self.assertEqual(r.status, 404)

    def test_apply_requires_field_manager_and_matching_names(self):
        r = C.patch(QUEUES + "/a4", q("a4", {}), "apply")
        self.assertEqual(r.status, 422)
        self.assertEqual(r.json["message"], 'PatchOptions.meta.k8s.io "" is invalid: '
                                            'fieldManager: Required value: is required for '
                                            'apply requests')
        r = apply(QUEUES + "/a4", q("other", {}), "m")
        self.assertEqual(r.status, 400)
        r = C.patch(QUEUES + "/a4", {"spec": {}}, "merge", query={"force": "true"})
        self.assertEqual(r.status, 422)

    def test_update_managers_and_builtin_merge_keys(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ssa-pod"},
               "spec": {"containers": [{"name": "a", "image": "x"}]}}
        r = apply(ns_path("pods", name="ssa-pod"), pod, "deployer")
        self.assertEqual(r.status, 201, r.json)
        f = managers(r.json)[("deployer", "Apply", "")]
        self.assertIn('k:{"name":"a"}', f["f:spec"]["f:containers"])
        r = C.patch(ns_path("pods", name="ssa-pod"), {"metadata": {"labels": {"l": "1"}}},
                    query={"fieldManager": "labeler"})
        self.assertEqual(managers(r.json)[("labeler", "Update", "")],
                         {"f:metadata": {"f:labels": {".": {}, "f:l": {}}}})
        r = apply(ns_path("pods", name="ssa-pod"), dict(pod, metadata={
            "name": "ssa-pod", "labels": {"l": "2"}}), "deployer")
        self.assertEqual(r.status, 409)
        self.assertEqual(r.json["message"], 'Apply failed with 1 conflict: conflict with '
                                            '"labeler" using v1: .metadata.labels.l')


if __name__ == "__main__":
    unittest.main()
