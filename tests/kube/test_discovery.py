"""Discovery (legacy and aggregated), groups served later or omitted, resource.k8s.io versions
and their conversions, events.k8s.io over core Events, OpenAPI v3 for kubectl, Tables."""
import unittest

from kube_testlib import Server, ns_path, pod

S = None
C = None
AGG = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def setUpModule():
    global S, C
    S = Server("--omit-group", "kruntimes.io")
    C = S.client()


def tearDownModule():
    S.stop()


def resources(gv):
    return {r["name"]: r for r in C.get(gv).json["resources"]}


class DiscoveryTest(unittest.TestCase):
    def test_version(self):
        v = C.get("/version").json
        self.assertEqual((v["major"], v["minor"], v["gitVersion"]), ("1", "33", "v1.33.0"))

    def test_core(self):
        self.assertEqual(C.get("/api").json["versions"], ["v1"])
        rs = resources("/api/v1")
        self.assertEqual(rs["pods"]["shortNames"], ["po"])
        self.assertEqual(rs["pods"]["kind"], "Pod")
        self.assertTrue(rs["pods"]["namespaced"])
        self.assertEqual(rs["pods"]["singularName"], "pod")
        self.assertIn("watch", rs["pods"]["verbs"])
        self.assertEqual(rs["pods/status"]["verbs"], ["get", "patch", "update"])
        self.assertFalse(rs["nodes"]["namespaced"])
        self.assertIn("nodes/status", rs)

    def test_groups_and_custom_resources(self):
        groups = {g["name"]: g for g in C.get("/apis").json["groups"]}
        self.assertNotIn("kruntimes.io", groups)
        self.assertEqual(groups["scheduling.run.ai"]["preferredVersion"]["version"], "v2")
        self.assertEqual([v["version"] for v in groups["resource.k8s.io"]["versions"]],
                         ["v1", "v1beta2", "v1beta1"])
        self.assertEqual([v["version"] for v in groups["scheduling.run.ai"]["versions"]],
                         ["v2", "v2alpha2", "v1alpha1"])
        self.assertEqual(set(resources("/apis/scheduling.run.ai/v2")), {"queues", "queues/status"})
        self.assertEqual(set(resources("/apis/scheduling.run.ai/v1alpha1")),
                         {"queues", "queues/status", "accountedresources"})
        rs = resources("/apis/scheduling.run.ai/v2alpha2")
        self.assertEqual(rs["podgroups"]["shortNames"], ["pg"])
        self.assertEqual(C.get("/apis/kruntimes.io/v1alpha1/namespaces/default/runs").status, 404)
        S.control("serve-group", {"group": "kruntimes.io"})
        try:
            self.assertIn("runs/status", resources("/apis/kruntimes.io/v1alpha1"))
            self.assertEqual(C.get("/apis/kruntimes.io/v1alpha1/runs").status, 200)
        finally:
            S.control("omit-group", {"group": "kruntimes.io"})
        self.assertEqual(C.get("/apis/kruntimes.io/v1alpha1").status, 404)

    def test_aggregated(self):
        r = C.get("/apis", headers={"Accept": AGG + ",application/json"})
        self.assertEqual(dict((k.lower(), v) for k, v in r.headers)["content-type"], AGG)
        self.assertEqual(r.json["kind"], "APIGroupDiscoveryList")
        q = [g for g in r.json["items"] if g["metadata"]["name"] == "scheduling.run.ai"][0]
        v2 = [v for v in q["versions"] if v["version"] == "v2"][0]
        queues = [x for x in v2["resources"] if x["resource"] == "queues"][0]
        self.assertEqual((queues["scope"], queues["responseKind"]["kind"]), ("Cluster", "Queue"))
        self.assertEqual(queues["subresources"][0]["subresource"], "status")
        r = C.get("/api", headers={"Accept": AGG.replace("v=v2", "v=v2beta1")})
        self.assertEqual(r.json["apiVersion"], "apidiscovery.k8s.io/v2beta1")
        r = C.get("/apis", headers={"Accept": "application/json"})
        self.assertEqual(r.json["kind"], "APIGroupList")

    def test_openapi_v3(self):
        root = C.get("/openapi/v3").json["paths"]
        self.assertIn("api/v1", root)
        doc = C.get(root["apis/scheduling.run.ai/v2"]["serverRelativeURL"]).json
        patch = doc["paths"]["/apis/scheduling.run.ai/v2/queues/{name}"]["patch"]
        self.assertEqual(patch["x-kubernetes-group-version-kind"],
                         {"group": "scheduling.run.ai", "version": "v2", "kind": "Queue"})
        self.assertIn("fieldValidation", [p["name"] for p in patch["parameters"]])
        self.assertNotIn("application/strategic-merge-patch+json",
                         patch["requestBody"]["content"])
        core = C.get(root["api/v1"]["serverRelativeURL"]).json
        pp = core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
        self.assertIn("application/strategic-merge-patch+json", pp["requestBody"]["content"])

    def test_tables(self):
        C.post(ns_path("pods"), pod("tbl"))
        t = C.get(ns_path("pods"), headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}).json
        self.assertEqual(t["kind"], "Table")
        self.assertEqual([c["name"] for c in t["columnDefinitions"]][:5],
                         ["Name", "Ready", "Status", "Restarts", "Age"])
        row = t["rows"][0]
        self.assertEqual(row["cells"][:3], ["tbl", "0/1", "Pending"])
        self.assertEqual(row["object"]["kind"], "PartialObjectMetadata")
        C.post("/apis/scheduling.run.ai/v2/queues", {
            "apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "t"},
            "spec": {"priority": 3, "parentQueue": "root"}})
        t = C.get("/apis/scheduling.run.ai/v2/queues/t", headers={
            "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json
        self.assertEqual([c["name"] for c in t["columnDefinitions"]],
                         ["Name", "Priority", "Parent", "Children", "DisplayName", "Age"])
        self.assertEqual(t["rows"][0]["cells"][:4], ["t", "3", "root", None])


class VersionsTest(unittest.TestCase):
    def test_resource_claims_convert_between_versions(self):
        claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
                 "metadata": {"name": "c1"},
                 "spec": {"devices": {"requests": [{"name": "gpu",
                                                    "deviceClassName": "gpu.example.com",
                                                    "count": 2}]}}}
        r = C.post("/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims", claim)
        self.assertEqual(r.status, 201, r.json)
        v1 = C.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1").json
        self.assertEqual(v1["spec"]["devices"]["requests"][0],
                         {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                                                     "count": 2}})
        lst = C.get("/apis/resource.k8s.io/v1beta1/resourceclaims").json
        self.assertEqual(lst["items"][0]["spec"]["devices"]["requests"][0]["count"], 2)
        self.assertNotIn("kind", lst["items"][0])
        sl = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
              "metadata": {"name": "s1"},
              "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                       "pool": {"name": "p", "resourceSliceCount": 1, "generation": 1},
                       "devices": [{"name": "g0", "attributes": {"model": {"string": "H200"}},
                                    "capacity": {"memory": {"value": "141Gi"}}}]}}
        self.assertEqual(C.post("/apis/resource.k8s.io/v1/resourceslices", sl).status, 201)
        b1 = C.get("/apis/resource.k8s.io/v1beta1/resourceslices/s1").json
        self.assertEqual(b1["spec"]["devices"][0]["basic"]["capacity"]["memory"]["value"],
                         "141Gi")
        r = C.get("/apis/resource.k8s.io/v1beta1/resourceslices",
                  query={"fieldSelector": "spec.nodeName=n1"})
        self.assertEqual(len(r.json["items"]), 1)

    def test_only_some_dra_versions(self):
        s = Server("--dra-versions", "v1beta1")
        try:
            c = s.client()
            groups = {g["name"]: g for g in c.get("/apis").json["groups"]}
            self.assertEqual([v["version"] for v in groups["resource.k8s.io"]["versions"]],
                             ["v1beta1"])
            self.assertEqual(c.get("/apis/resource.k8s.io/v1/resourceclaims").status, 404)
            self.assertEqual(c.get("/apis/resource.k8s.io/v1beta1/resourceclaims").status, 200)
        finally:
            s.stop()

    def test_events_groups_share_storage(self):
        r = C.post(ns_path("events"), {"metadata": {"name": "e1"}, "reason": "Held",
                                       "message": "queue is full", "type": "Warning",
                                       "involvedObject": {"kind": "Pod", "name": "p",
                                                          "namespace": "default"}})
        self.assertEqual(r.status, 201, r.json)
        e = C.get("/apis/events.k8s.io/v1/namespaces/default/events/e1").json
        self.assertEqual((e["note"], e["regarding"]["name"], e["apiVersion"]),
                         ("queue is full", "p", "events.k8s.io/v1"))


if __name__ == "__main__":
    unittest.main()
