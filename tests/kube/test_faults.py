"""Fault injection (/_test/fault: drop-watch, stall-watch, close-watch, gone-watch, error,
gone-list, latency, clear), slow watchers closed at their queue bound, the request log."""
import time
import unittest

from kube_testlib import Server, ns_path

S = None
C = None


def setUpModule():
    global S, C
    S = Server("--watch-queue", "20", "--bookmark-interval", "0.3")
    C = S.client()


def tearDownModule():
    S.stop()


def rv():
    return C.get(ns_path("configmaps")).json["metadata"]["resourceVersion"]


def mk(name):
    S.control("put", {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": name, "namespace": "default"}}})


class WatchFaults(unittest.TestCase):
    def tearDown(self):
        S.control("fault", {"action": "clear"})

    def test_drop_watch_cuts_mid_event(self):
        w = C.watch(ns_path("configmaps"), {"resourceVersion": rv()})
        out = S.control("fault", {"action": "drop-watch", "resource": "configmaps", "count": 2,
                                  "after_events": 1})
        self.assertEqual(out["open_streams_cut"], 1)
        mk("d1")
        mk("d2")
        self.assertEqual(w.next(3)["object"]["metadata"]["name"], "d1")
        with self.assertRaises(EOFError) as e:
            w.next(3)
        self.assertIn("cut mid-event", str(e.exception))
        # The next stream opened is cut too (count 2), the one after is not.
        w = C.watch(ns_path("configmaps"), {"resourceVersion": rv()})
        mk("d3")
        mk("d3b")
        self.assertEqual(w.next(3)["object"]["metadata"]["name"], "d3")
        self.assertRaises(EOFError, w.next, 3)
        w = C.watch(ns_path("configmaps"), {"resourceVersion": rv()})
        mk("d4")
        self.assertEqual(w.next(3)["object"]["metadata"]["name"], "d4")
        w.close()

    def test_stall_watch_sends_nothing_then_resumes(self):
        w = C.watch(ns_path("configmaps"), {"resourceVersion": rv(),
                                             "allowWatchBookmarks": "true"})
        self.assertEqual(w.next(3)["type"], "BOOKMARK")
        S.control("fault", {"action": "stall-watch", "resource": "configmaps", "seconds": 1.2})
        t = time.time()
        mk("s1")
        ev = w.events(1, timeout=4)[0]
        self.assertGreater(time.time() - t, 1.0)
        self.assertEqual(ev["object"]["metadata"]["name"], "s1")
        w.close()

    def test_close_and_gone_watch(self):
        w = C.watch(ns_path("configmaps"), {"resourceVersion": rv()})
        time.sleep(0.2)
        self.assertEqual(S.control("fault", {"action": "close-watch",
                                             "resource": "configmaps"})["closed"], 1)
        self.assertRaises(EOFError, w.next, 3)
        S.control("fault", {"action": "gone-watch", "resource": "configmaps"})
        w = C.watch(ns_path("configmaps"), {"resourceVersion": rv()})
        ev = w.next(3)
        self.assertEqual((ev["type"], ev["object"]["code"], ev["object"]["reason"]),
                         ("ERROR", 410, "Expired"))

    def test_slow_watcher_is_closed(self):
        w = C.watch(ns_path("configmaps"), {"resourceVersion": rv()})
        S.control("fault", {"action": "stall-watch", "resource": "configmaps", "seconds": 1})
        S.control("churn", {"object": {"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "slow", "namespace": "default"}},
                            "count": 30})
        got = []
        with self.assertRaises(EOFError):
            while True:
                got.append(w.next(4))
        self.assertLessEqual(len(got), 20)
        self.assertNotEqual(got[-1:], [{"type": "ERROR"}])


class RequestFaults(unittest.TestCase):
    def tearDown(self):
        S.control("fault", {"action": "clear"})

    def test_error_answers(self):
        S.control("fault", {"action": "error", "resource": "configmaps", "verb": "list",
                            "code": 503, "count": 2})
        self.assertEqual(C.get(ns_path("configmaps", name="nope")).status, 404)
        r = C.get(ns_path("configmaps"))
        self.assertEqual((r.status, r.json["reason"], r.json["kind"]),
                         (503, "ServiceUnavailable", "Status"))
        self.assertEqual(C.get(ns_path("configmaps")).status, 503)
        self.assertEqual(C.get(ns_path("configmaps")).status, 200)
        S.control("fault", {"action": "error", "resource": "core/configmaps", "verb": "any",
                            "code": 429, "retry_after": 2})
        r = C.get(ns_path("configmaps", name="x"))
        self.assertEqual((r.status, r.json["reason"], r.json["details"]),
                         (429, "TooManyRequests", {"retryAfterSeconds": 2}))
        self.assertIn(("Retry-After", "2"), r.headers)
        S.control("fault", {"action": "error", "resource": "queues", "verb": "patch",
                            "code": 500})
        r = C.patch("/apis/scheduling.run.ai/v2/queues/x", {})
        self.assertEqual((r.status, r.json["reason"]), (500, "InternalError"))
        S.control("fault", {"action": "error", "resource": "pods", "verb": "watch", "code": 500})
        w = C.watch(ns_path("pods"), {"resourceVersion": rv()})
        self.assertEqual(w.status, 500)

    def test_gone_list(self):
        for i in range(3):
            mk("g%d" % i)
        r = C.get(ns_path("configmaps"), query={"limit": "1"})
        S.control("fault", {"action": "gone-list", "resource": "configmaps"})
        cont = r.json["metadata"]["continue"]
        r = C.get(ns_path("configmaps"), query={"limit": "1", "continue": cont})
        self.assertEqual((r.status, r.json["reason"]), (410, "Expired"))
        self.assertIn("continue", r.json["metadata"])
        r = C.get(ns_path("configmaps"), query={"limit": "1", "continue": cont})
        self.assertEqual(r.status, 200)

    def test_latency(self):
        S.control("fault", {"action": "latency", "ms": 300})
        t = time.time()
        C.get("/version")
        self.assertGreaterEqual(time.time() - t, 0.29)
        S.control("fault", {"action": "clear"})
        t = time.time()
        C.get("/version")
        self.assertLess(time.time() - t, 0.25)

    def test_request_log(self):
        S.control("requests/clear")
        C.get(ns_path("configmaps"), query={"limit": "1"})
        C.get("/api/v1/nope")
        log = S.control("requests", method="GET")["requests"]
        self.assertEqual([(r["method"], r["path"], r["query"], r["status"], r["user"])
                          for r in log],
                         [("GET", "/api/v1/namespaces/default/configmaps", "limit=1", 200,
                           "admin"), ("GET", "/api/v1/nope", "", 404, "admin")])
        self.assertEqual((log[0]["userAgent"], log[0]["contentType"]), ("kube-test/1.0", ""))
        self.assertGreater(log[0]["bytes"], 0)


if __name__ == "__main__":
    unittest.main()
