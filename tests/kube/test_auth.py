"""Authentication (bearer tokens, token rotation, the token file, client certificates, the exec
plugin) and authorization (system:masters, /_test/rbac rules, 403 messages)."""
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

from kube_testlib import HERE, Client, Server, ns_path

S = None

UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def count_lines(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return f.read().count("\n")


def setUpModule():
    global S
    S = Server()


def tearDownModule():
    S.stop()


class AuthnTest(unittest.TestCase):
    def tearDown(self):
        S.control("tokens", {"valid": [S.token]})
        with open(os.path.join(S.dir, "token"), "w") as f:
            f.write(S.token + "\n")

    def test_tokens_and_anonymous(self):
        self.assertEqual(S.client().get("/api/v1/pods").status, 200)
        r = S.client(token="wrong").get("/api/v1/pods")
        self.assertEqual((r.status, r.json), (401, UNAUTHORIZED))
        r = S.client(token="").get("/api/v1/pods")
        self.assertEqual((r.status, r.json), (401, UNAUTHORIZED))
        r = S.client(token="").get("/version")
        self.assertEqual((r.status, r.json["gitVersion"]), (200, "v1.33.0"))

    def test_client_certificates(self):
        r = S.client(cert="client").get("/api/v1/namespaces")
        self.assertEqual(r.status, 200)
        d = tempfile.mkdtemp()
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                        "/CN=stranger", "-keyout", os.path.join(d, "x.key"), "-out",
                        os.path.join(d, "x.crt")], check=True, capture_output=True)
        ctx = ssl.create_default_context(cafile=S.ca)
        ctx.load_cert_chain(os.path.join(d, "x.crt"), os.path.join(d, "x.key"))
        c = Client(S, token="")
        c.ctx = ctx
        with self.assertRaises((ssl.SSLError, ConnectionError, OSError)):
            c.get("/api/v1/namespaces")
        c.close()

    def test_rotation(self):
        S.control("tokens", {"valid": ["t1"]})
        self.assertEqual(S.client(token="t1").get("/api/v1/pods").status, 200)
        # The token file still holds the admin token: it stays valid through the file.
        self.assertEqual(S.client().get("/api/v1/pods").status, 200)
        with open(os.path.join(S.dir, "token.new"), "w") as f:
            f.write("t-file-2\n")
        os.replace(os.path.join(S.dir, "token.new"), os.path.join(S.dir, "token"))
        self.assertEqual(S.client(token="t-file-2").get("/api/v1/pods").status, 200)
        self.assertEqual(S.client().get("/api/v1/pods").status, 401)
        self.assertEqual(S.client(token="t1").get("/api/v1/pods").status, 200)

    def test_token_users(self):
        S.control("tokens", {"valid": [S.token, "lim"],
                             "users": {"lim": {"user": "limited", "groups": ["dev"]}}})
        r = S.client(token="lim").get("/api/v1/pods")
        self.assertEqual(r.status, 403)
        self.assertIn('User "limited"', r.json["message"])

    def test_kubeconfig_contexts(self):
        with open(os.path.join(S.dir, "kubeconfig")) as f:
            text = f.read()
        ctxs = re.findall(r"^- name: (\S+)\n  context:", text, re.M)
        self.assertEqual(ctxs, ["token", "cert", "cert-data", "tokenfile", "exec", "insecure",
                                "limited"])
        self.assertIn("current-context: token", text)
        self.assertIn("insecure-skip-tls-verify: true", text)
        self.assertIn("tokenFile: %s" % json.dumps(os.path.join(S.dir, "token")), text)

    def test_exec_plugin(self):
        cmd = [sys.executable, os.path.join(HERE, "exec_plugin.py"), "--dir", S.dir,
               "--expiry", "60"]
        log = os.path.join(S.dir, "exec.log")
        before = count_lines(log)
        out = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
        self.assertEqual(out["apiVersion"], "client.authentication.k8s.io/v1")
        self.assertEqual(out["kind"], "ExecCredential")
        self.assertEqual(out["status"]["token"], S.token)
        exp = time.mktime(time.strptime(out["status"]["expirationTimestamp"],
                                        "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        self.assertAlmostEqual(exp - time.time(), 60, delta=5)
        with open(os.path.join(S.dir, "exec.json"), "w") as f:
            json.dump({"token": "other", "expiry_seconds": 5}, f)
        out = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
        self.assertEqual(out["status"]["token"], "other")
        os.remove(os.path.join(S.dir, "exec.json"))
        self.assertEqual(count_lines(log), before + 2)


class AuthzTest(unittest.TestCase):
    def setUp(self):
        self.lim = S.client(cert="limited")

    def tearDown(self):
        S.control("rbac", {"user": "limited", "allow": []})

    def test_forbidden_messages(self):
        r = self.lim.get("/api/v1/pods")
        self.assertEqual(r.status, 403)
        self.assertEqual(r.json, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'pods is forbidden: User "limited" cannot list resource "pods" in API '
                       'group "" at the cluster scope',
            "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403})
        r = self.lim.get(ns_path("pods", name="x"))
        self.assertEqual(r.json["message"], 'pods "x" is forbidden: User "limited" cannot get '
                                            'resource "pods" in API group "" in the namespace '
                                            '"default"')
        r = self.lim.patch(ns_path("pods", name="x", sub="status"), {})
        self.assertEqual(r.json["message"], 'pods "x" is forbidden: User "limited" cannot patch '
                                            'resource "pods/status" in API group "" in the '
                                            'namespace "default"')
        r = self.lim.get("/apis/scheduling.run.ai/v2/queues")
        self.assertEqual(r.json["message"], 'queues.scheduling.run.ai is forbidden: User '
                                            '"limited" cannot list resource "queues" in API '
                                            'group "scheduling.run.ai" at the cluster scope')
        self.assertEqual(r.json["details"], {"group": "scheduling.run.ai", "kind": "queues"})
        # Discovery stays open to any authenticated user.
        self.assertEqual(self.lim.get("/apis").status, 200)

    def test_rules(self):
        S.control("rbac", {"user": "limited", "allow": [
            {"verbs": ["list", "watch"], "group": "", "resource": "pods"},
            {"verbs": ["patch"], "apiGroups": [""], "resources": ["pods/status"],
             "namespaces": ["default"]}]})
        self.assertEqual(self.lim.get("/api/v1/pods").status, 200)
        self.assertEqual(self.lim.get(ns_path("pods", name="x")).status, 403)
        w = self.lim.watch("/api/v1/pods", {"resourceVersion": "0", "timeoutSeconds": "1"})
        self.assertEqual(w.status, 200)
        w.close()
        self.assertEqual(self.lim.patch(ns_path("pods", name="x", sub="status"), {}).status, 404)
        self.assertEqual(self.lim.patch(ns_path("pods", "kube-system", name="x", sub="status"),
                                        {}).status, 403)
        self.assertEqual(self.lim.patch(ns_path("pods", name="x"), {}).status, 403)


if __name__ == "__main__":
    unittest.main()
