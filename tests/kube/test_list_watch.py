"""LIST pagination, consistency and 410 Expired; WATCH events, bookmarks, selectors, 410 ERROR
events, timeouts; compaction and /_test/restart."""
import base64
import json
import time
import unittest

from kube_testlib import Server, ns_path, pod

S = None


def setUpModule():
    global S
    S = Server("--history", "50", "--bookmark-interval", "0.3")


def tearDownModule():
    S.stop()


class NamespacedTest(unittest.TestCase):
    """Tests in a namespace of their own on the module's server."""
    ns = None

    @classmethod
    def setUpClass(cls):
        cls.c = S.client()
        cls.c.post("/api/v1/namespaces", {"metadata": {"name": cls.ns}})


class ListTest(NamespacedTest):
    ns = "lists"

    @classmethod
    def setUpClass(cls):
        NamespacedTest.setUpClass.__func__(cls)
        for i in range(7):
            st, _, b = cls.c.post(ns_path("configmaps", cls.ns),
                                  {"metadata": {"name": "cm-%d" % i, "labels": {
                                      "i": str(i), "even": str(i % 2 == 0).lower()}},
                                   "data": {"i": str(i)}})
            assert st == 201, b

    def test_items_without_type_meta_and_list_metadata(self):
        r = self.c.get(ns_path("configmaps", self.ns))
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["kind"], "ConfigMapList")
        self.assertEqual(r.json["apiVersion"], "v1")
        self.assertNotIn("kind", r.json["items"][0])
        self.assertNotIn("apiVersion", r.json["items"][0])
        self.assertTrue(r.json["metadata"]["resourceVersion"].isdigit())
        self.assertTrue(any(k.lower() == "date" for k, _ in r.headers))

    def test_custom_resource_items_carry_type_meta(self):
        st, _, b = self.c.post("/apis/scheduling.run.ai/v2/queues",
                               {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                                "metadata": {"name": "list-q"}, "spec": {}})
        self.assertEqual(st, 201, b)
        r = self.c.get("/apis/scheduling.run.ai/v2/queues")
        item = [i for i in r.json["items"] if i["metadata"]["name"] == "list-q"][0]
        self.assertEqual(item["kind"], "Queue")
        self.assertEqual(item["apiVersion"], "scheduling.run.ai/v2")
        # The same object at the other served version.
        r = self.c.get("/apis/scheduling.run.ai/v1alpha1/queues/list-q")
        self.assertEqual(r.json["apiVersion"], "scheduling.run.ai/v1alpha1")

    def test_pages_are_consistent_and_count_the_rest(self):
        r = self.c.get(ns_path("configmaps", self.ns), query={"limit": "3"})
        names = [i["metadata"]["name"] for i in r.json["items"]]
        self.assertEqual(names, ["cm-0", "cm-1", "cm-2"])
        self.assertEqual(r.json["metadata"]["remainingItemCount"], 4)
        rv = r.json["metadata"]["resourceVersion"]
        cont = r.json["metadata"]["continue"]
        # Changes after the first page do not show up in later pages.
        self.c.delete(ns_path("configmaps", self.ns, "cm-4"))
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "cm-45"}})
        self.c.patch(ns_path("configmaps", self.ns, "cm-5"), {"data": {"i": "changed"}})
        r = self.c.get(ns_path("configmaps", self.ns), query={"limit": "3", "continue": cont})
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]],
                         ["cm-3", "cm-4", "cm-5"])
        self.assertEqual(r.json["items"][2]["data"], {"i": "5"})
        self.assertEqual(r.json["metadata"]["resourceVersion"], rv)
        r = self.c.get(ns_path("configmaps", self.ns), query={"limit": "3",
                                                               "continue": r.json["metadata"]
                                                               ["continue"]})
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["cm-6"])
        self.assertNotIn("continue", r.json["metadata"])
        # restore
        self.c.delete(ns_path("configmaps", self.ns, "cm-45"))
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "cm-4", "labels": {
            "i": "4", "even": "true"}}, "data": {"i": "4"}})
        self.c.patch(ns_path("configmaps", self.ns, "cm-5"), {"data": {"i": "5"}})

    def test_selectors(self):
        r = self.c.get(ns_path("configmaps", self.ns), query={"labelSelector": "even=true,i!=0"})
        self.assertEqual(sorted(i["metadata"]["name"] for i in r.json["items"]),
                         ["cm-2", "cm-4", "cm-6"])
        r = self.c.get(ns_path("configmaps", self.ns), query={"labelSelector": "i in (1,3)"})
        self.assertEqual(len(r.json["items"]), 2)
        r = self.c.get("/api/v1/configmaps", query={"fieldSelector": "metadata.name=cm-3"})
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["cm-3"])
        r = self.c.get("/api/v1/configmaps", query={"fieldSelector": "spec.foo=bar"})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json["message"], "field label not supported: spec.foo")
        # A limited, selective list has a continue token but no remainingItemCount.
        r = self.c.get(ns_path("configmaps", self.ns), query={"labelSelector": "even=true",
                                                               "limit": "2"})
        self.assertIn("continue", r.json["metadata"])
        self.assertNotIn("remainingItemCount", r.json["metadata"])

    def test_pod_field_selectors(self):
        self.c.post(ns_path("pods", self.ns), pod("p-on-a", self.ns, node="node-a"))
        self.c.post(ns_path("pods", self.ns), pod("p-none", self.ns))
        r = self.c.get("/api/v1/pods", query={"fieldSelector": "spec.nodeName=node-a"})
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["p-on-a"])
        r = self.c.get(ns_path("pods", self.ns), query={"fieldSelector": "spec.nodeName="})
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]], ["p-none"])
        r = self.c.get(ns_path("pods", self.ns), query={"fieldSelector": "status.phase=Pending"})
        self.assertEqual(len(r.json["items"]), 2)

    def test_exact_and_too_large_resource_versions(self):
        r = self.c.get(ns_path("configmaps", self.ns, "cm-1"))
        rv = int(r.json["metadata"]["resourceVersion"])
        r = self.c.get(ns_path("configmaps", self.ns),
                       query={"resourceVersion": str(rv), "resourceVersionMatch": "Exact"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json["metadata"]["resourceVersion"], str(rv))
        self.assertNotIn("cm-2", [i["metadata"]["name"] for i in r.json["items"]])
        r = self.c.get(ns_path("configmaps", self.ns),
                       query={"resourceVersion": "99999999", "resourceVersionMatch": "Exact"})
        self.assertEqual(r.status, 504)
        self.assertEqual(r.json["details"]["causes"][0]["reason"], "ResourceVersionTooLarge")
        r = self.c.get(ns_path("configmaps", self.ns), query={"continue": "garbage"})
        self.assertEqual(r.status, 400)
        # resourceVersion=0 is served from the watch cache, which ignores limit; a
        # resourceVersion with a limit is an exact read (the legacy exact match).
        r = self.c.get(ns_path("configmaps", self.ns), query={"resourceVersion": "0",
                                                               "limit": "2"})
        self.assertEqual(len(r.json["items"]), 7)
        self.assertNotIn("continue", r.json["metadata"])
        r = self.c.get(ns_path("configmaps", self.ns), query={"resourceVersion": str(rv),
                                                               "limit": "100"})
        self.assertEqual(r.json["metadata"]["resourceVersion"], str(rv))


class ExpiryTest(unittest.TestCase):
    """Runs against a server of its own: compaction and restart affect everything. Each test
    uses a namespace of its own."""

    @classmethod
    def setUpClass(cls):
        cls.s = Server("--history", "1000")
        cls.c = cls.s.client()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def setUp(self):
        self.ns = self.id().split(".")[-1].replace("_", "-")[5:40].strip("-")
        self.c.post("/api/v1/namespaces", {"metadata": {"name": self.ns}})
        for i in range(5):
            self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "e-%d" % i}})

    def test_continue_after_compaction_is_410_with_a_new_token(self):
        r = self.c.get(ns_path("configmaps", self.ns), query={"limit": "2"})
        cont = r.json["metadata"]["continue"]
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "e-9"}})
        self.s.control("compact")
        r = self.c.get(ns_path("configmaps", self.ns), query={"limit": "2", "continue": cont})
        self.assertEqual(r.status, 410)
        self.assertEqual(r.json["reason"], "Expired")
        self.assertTrue(r.json["message"].startswith(
            "The provided continue parameter is too old to display a consistent list result."))
        token = json.loads(base64.urlsafe_b64decode(r.json["metadata"]["continue"] + "=="))
        self.assertEqual(token["rv"], -1)
        # The inconsistent token continues at the latest state.
        r = self.c.get(ns_path("configmaps", self.ns), query={"limit": "10",
                                                      "continue": r.json["metadata"]["continue"]})
        self.assertEqual([i["metadata"]["name"] for i in r.json["items"]],
                         ["e-2", "e-3", "e-4", "e-9"])

    def test_watch_from_compacted_version_is_one_error_event(self):
        r = self.c.get(ns_path("configmaps", self.ns, name="e-0"))
        old = r.json["metadata"]["resourceVersion"]
        self.s.control("compact")
        w = self.c.watch(ns_path("configmaps", self.ns), {"resourceVersion": old})
        self.assertEqual(w.status, 200)
        ev = w.next(3)
        self.assertEqual(ev["type"], "ERROR")
        self.assertEqual(ev["object"]["code"], 410)
        self.assertEqual(ev["object"]["reason"], "Expired")
        self.assertRegex(ev["object"]["message"], r"^too old resource version: %s \(\d+\)$" % old)
        self.assertRaises(EOFError, w.next, 2)

    def test_restart_cuts_watches_and_jumps_resource_versions(self):
        r = self.c.get(ns_path("configmaps", self.ns))
        rv = int(r.json["metadata"]["resourceVersion"])
        w = self.c.watch(ns_path("configmaps", self.ns), {"resourceVersion": str(rv)})
        self.s.control("restart")
        self.assertRaises((EOFError, TimeoutError), w.events, 1, 3)
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "after"}})
        r = self.c.get(ns_path("configmaps", self.ns, name="after"))
        self.assertGreater(int(r.json["metadata"]["resourceVersion"]), rv + 100)
        w = self.c.watch(ns_path("configmaps", self.ns), {"resourceVersion": str(rv)})
        self.assertEqual(w.next(3)["object"]["code"], 410)

    def test_restart_with_restore_brings_back_the_snapshot(self):
        self.s.control("snapshot")
        self.c.delete(ns_path("configmaps", self.ns, name="e-0"))
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "new"}})
        self.s.control("restart", {"restore": True})
        names = [i["metadata"]["name"] for i in self.c.get(ns_path("configmaps", self.ns)).json["items"]]
        self.assertIn("e-0", names)
        self.assertNotIn("new", names)

    def test_history_limit_compacts(self):
        # The module's server keeps 50 events.
        c = S.client()
        c.post(ns_path("configmaps"), {"metadata": {"name": "h0"}})
        rv = c.get(ns_path("configmaps", name="h0")).json["metadata"]["resourceVersion"]
        for i in range(60):
            S.control("put", {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "h0", "namespace": "default"},
                                         "data": {"i": str(i)}}})
        w = c.watch(ns_path("configmaps"), {"resourceVersion": rv})
        self.assertEqual(w.next(3)["type"], "ERROR")
        w.close()


class WatchTest(NamespacedTest):
    ns = "watches"

    def rv(self):
        return self.c.get(ns_path("configmaps", self.ns)).json["metadata"]["resourceVersion"]

    def test_events_in_order_with_type_meta(self):
        rv = self.rv()
        w = self.c.watch(ns_path("configmaps", self.ns), {"resourceVersion": rv})
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "w1"}})
        self.c.patch(ns_path("configmaps", self.ns, "w1"), {"data": {"a": "b"}})
        self.c.delete(ns_path("configmaps", self.ns, "w1"))
        evs = w.events(3)
        self.assertEqual([e["type"] for e in evs], ["ADDED", "MODIFIED", "DELETED"])
        self.assertEqual(evs[0]["object"]["kind"], "ConfigMap")
        self.assertEqual(evs[0]["object"]["apiVersion"], "v1")
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        self.assertEqual(rvs, sorted(rvs))
        self.assertEqual(len(set(rvs)), 3)
        w.close()

    def test_initial_events_for_rv_zero_and_unset(self):
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "init"}})
        for q in ({"resourceVersion": "0"}, {}):
            w = self.c.watch(ns_path("configmaps", self.ns), q)
            ev = w.events(1)[0]
            self.assertEqual(ev["type"], "ADDED")
            w.close()

    def test_bookmarks_and_initial_events_end(self):
        w = self.c.watch(ns_path("configmaps", self.ns),
                         {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
                          "allowWatchBookmarks": "true"})
        seen_end = None
        for _ in range(50):
            ev = w.next(3)
            if ev["type"] == "BOOKMARK":
                seen_end = ev
                break
        self.assertEqual(seen_end["object"]["metadata"]["annotations"],
                         {"k8s.io/initial-events-end": "true"})
        self.assertEqual(set(seen_end["object"]["metadata"]), {"resourceVersion",
                                                                "annotations"})
        # A periodic bookmark within the bookmark interval (0.3 s here).
        ev = w.next(3)
        self.assertEqual(ev["type"], "BOOKMARK")
        self.assertEqual(set(ev["object"]["metadata"]), {"resourceVersion"})
        self.assertEqual(ev["object"]["kind"], "ConfigMap")
        w.close()
        r = self.c.get(ns_path("configmaps", self.ns),
                       query={"watch": "1", "sendInitialEvents": "true"})
        self.assertEqual(r.status, 422)

    def test_label_selector_transitions(self):
        rv = self.rv()
        w = self.c.watch(ns_path("configmaps", self.ns),
                         {"resourceVersion": rv, "labelSelector": "sel=yes"})
        self.c.post(ns_path("configmaps", self.ns), {"metadata": {"name": "s1"}})
        self.c.patch(ns_path("configmaps", self.ns, "s1"), {"metadata": {"labels": {"sel": "yes"}}})
        self.c.patch(ns_path("configmaps", self.ns, "s1"), {"data": {"x": "1"}})
        self.c.patch(ns_path("configmaps", self.ns, "s1"), {"metadata": {"labels": {"sel": "no"}}})
        evs = w.events(3)
        self.assertEqual([e["type"] for e in evs], ["ADDED", "MODIFIED", "DELETED"])
        # The DELETED event of an object leaving the selector carries its previous content
        # at the new resourceVersion.
        self.assertEqual(evs[2]["object"]["metadata"]["labels"], {"sel": "yes"})
        w.close()

    def test_timeout_seconds_ends_cleanly(self):
        t = time.time()
        w = self.c.watch(ns_path("configmaps", self.ns), {"resourceVersion": self.rv(),
                                                           "timeoutSeconds": "1"})
        self.assertRaises(EOFError, w.next, 4)
        self.assertLess(time.time() - t, 3.5)

    def test_watch_of_a_custom_resource(self):
        rv = self.c.get("/apis/scheduling.run.ai/v2/queues").json["metadata"]["resourceVersion"]
        w = self.c.watch("/apis/scheduling.run.ai/v1alpha1/queues", {"resourceVersion": rv})
        self.c.post("/apis/scheduling.run.ai/v2/queues",
                    {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                     "metadata": {"name": "wq"}, "spec": {"priority": 1}})
        ev = w.events(1)[0]
        self.assertEqual(ev["object"]["apiVersion"], "scheduling.run.ai/v1alpha1")
        self.assertEqual(ev["object"]["kind"], "Queue")

    def test_put_and_delete_control_emit_events(self):
        rv = self.rv()
        w = self.c.watch(ns_path("pods", self.ns), {"resourceVersion": rv})
        p = pod("direct", self.ns)
        p["status"] = {"phase": "Running"}
        S.control("put", {"object": p})
        ev = w.events(1)[0]
        self.assertEqual((ev["type"], ev["object"]["status"]["phase"]), ("ADDED", "Running"))
        S.control("delete", {"apiVersion": "v1", "kind": "Pod", "namespace": self.ns,
                             "name": "direct"})
        self.assertEqual(w.events(1)[0]["type"], "DELETED")

    def test_many_events_arrive_exactly_once(self):
        rv = self.rv()
        w = self.c.watch(ns_path("configmaps", self.ns), {"resourceVersion": rv})
        for i in range(100):
            S.control("put", {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "many", "namespace": self.ns},
                                         "data": {"i": str(i)}}})
        evs = w.events(100, timeout=20)
        self.assertEqual([e["object"]["data"]["i"] for e in evs], [str(i) for i in range(100)])


if __name__ == "__main__":
    unittest.main()
