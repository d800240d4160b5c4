"""Helpers for the test API server's own tests: start a server in a temp dir, talk to it over
HTTPS (token or client certificate), read watch streams, run a tiny HTTPS admission webhook.
Every wait is bounded."""
import base64
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
QUEUES = "/apis/scheduling.run.ai/v2/queues"
RUNS = "/apis/kruntimes.io/v1alpha1/namespaces/default/runs"
APISERVER = os.path.join(HERE, "apiserver.py")
_CERTS = None  # a directory with certificates made once per test process


def _cert_dir():
    global _CERTS
    if _CERTS is None:
        _CERTS = tempfile.mkdtemp(prefix="kube-certs-")
        sys.path.insert(0, HERE)
        import apiserver
        apiserver.make_certs(_CERTS)
    return _CERTS


class Server:
    def __init__(self, *args, wait=15.0):
        self.dir = tempfile.mkdtemp(prefix="kube-test-")
        for f in os.listdir(_cert_dir()):
            shutil.copy(os.path.join(_cert_dir(), f), self.dir)
        self.proc = subprocess.Popen([sys.executable, APISERVER, "--dir", self.dir] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        ready = os.path.join(self.dir, "ready.json")
        deadline = time.time() + wait
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.time() > deadline:
                out = self.proc.stdout.read().decode() if self.proc.poll() is not None else ""
                self.stop()
                raise RuntimeError("the API server did not start: %s" % out)
            time.sleep(0.05)
        with open(ready) as f:
            self.ready = json.load(f)
        self.url = self.ready["url"]
        self.port = self.ready["port"]
        self.token = self.ready["token"]
        self.ca = self.ready["ca"]
        self.opened = []

    def stop(self):
        for c in self.opened:
            c.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def client(self, token=None, cert=None, **kw):
        return Client(self, token=self.token if token is None and cert is None else token,
                      cert=cert, **kw)

    def control(self, path, data=None, method="POST"):
        c = Client(self, token="")
        try:
            st, _, body = c.request(method, "/_test/" + path, data if data is not None else {})
        finally:
            c.close()
        if st != 200:
            raise RuntimeError("control %s: %s %s" % (path, st, body))
        return body


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.raw = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    def __iter__(self):
        return iter((self.status, self.headers, self.json if self.json is not None else self.raw))

    def warnings(self):
        return [v for k, v in self.headers if k.lower() == "warning"]


class Client:
    def __init__(self, server, token=None, cert=None, timeout=10.0, user_agent="kube-test/1.0"):
        self.server = server
        self.token = token
        self.timeout = timeout
        self.user_agent = user_agent
        ctx = ssl.create_default_context(cafile=server.ca)
        if cert:
            ctx.load_cert_chain(os.path.join(server.dir, cert + ".crt"),
                                os.path.join(server.dir, cert + ".key"))
        self.ctx = ctx
        self.conn = None
        server.opened.append(self)

    def _conn(self):
        if self.conn is None:
            self.conn = http.client.HTTPSConnection("127.0.0.1", self.server.port,
                                                    timeout=self.timeout, context=self.ctx)
        return self.conn

    def request(self, method, path, body=None, ctype="application/json", headers=None,
                query=None):
        if query:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(query)
        h = {"User-Agent": self.user_agent, "Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if body is not None:
            h["Content-Type"] = ctype
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
        h.update(headers or {})
        for attempt in range(2):
            try:
                c = self._conn()
                c.request(method, path, body=body, headers=h)
                r = c.getresponse()
                data = r.read()
                return Response(r.status, r.getheaders(), data)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body, **kw):
        return self.request("PUT", path, body, **kw)

    def patch(self, path, body, ptype="merge", **kw):
        ctype = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
                 "strategic": "application/strategic-merge-patch+json",
                 "apply": "application/apply-patch+yaml"}.get(ptype, ptype)
        return self.request("PATCH", path, body, ctype=ctype, **kw)

    def delete(self, path, body=None, **kw):
        return self.request("DELETE", path, body, **kw)

    def watch(self, path, query=None, timeout=5.0):
        return Watch(self, path, query, timeout)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Watch:
    """A watch stream: next() gives one event dict (or raises TimeoutError/EOFError)."""

    def __init__(self, client, path, query, timeout):
        q = dict(query or {})
        q.setdefault("watch", "true")
        path += ("&" if "?" in path else "?") + urllib.parse.urlencode(q)
        self.conn = http.client.HTTPSConnection("127.0.0.1", client.server.port, timeout=timeout,
                                                context=client.ctx)
        h = {"User-Agent": client.user_agent}
        if client.token:
            h["Authorization"] = "Bearer " + client.token
        client.server.opened.append(self)
        self.conn.request("GET", path, headers=h)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = self.resp.getheaders()

    def next(self, timeout=None):
        if timeout is not None:
            self.conn.sock.settimeout(timeout)
        try:
            line = self.resp.readline()
        except (TimeoutError, OSError) as e:
            if "timed out" in str(e) or isinstance(e, TimeoutError):
                raise TimeoutError("no watch event in time")
            raise EOFError(str(e))
        except http.client.IncompleteRead as e:
            raise EOFError("incomplete read: %r" % e.partial)
        if not line:
            raise EOFError("watch closed")
        if not line.endswith(b"\n"):
            raise EOFError("cut mid-event: %r" % line)
        return json.loads(line)

    def events(self, n, timeout=5.0, skip_bookmarks=True):
        out = []
        deadline = time.time() + timeout
        while len(out) < n:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("got %d of %d events: %r" % (len(out), n, out))
            ev = self.next(left)
            if skip_bookmarks and ev["type"] == "BOOKMARK":
                continue
            out.append(ev)
        return out

    def close(self):
        try:
            self.conn.close()
        except OSError:
            pass


class Webhook:
    """A tiny HTTPS admission webhook: handler(review request dict, path) -> response dict
    (merged into {"uid": ..., "allowed": True}). Uses the API server's certificate for
    127.0.0.1; ca_bundle is the base64 CA for clientConfig.caBundle."""

    def __init__(self, server, handler, delay=0.0, require_client_cert=False):
        outer = self
        self.peers = []
        self.handler = handler
        self.delay = delay
        self.calls = []

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                review = json.loads(self.rfile.read(n))
                cert = self.connection.getpeercert() or {}
                outer.peers.append(dict(x[0] for x in cert.get("subject", ())).get("commonName"))
                outer.calls.append((self.path, review["request"]))
                if outer.delay:
                    time.sleep(outer.delay)
                resp = {"uid": review["request"]["uid"], "allowed": True}
                resp.update(outer.handler(review["request"], self.path) or {})
                data = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                   "kind": "AdmissionReview", "response": resp}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Quiet(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # the API server hung up (a timeout test)

        self.httpd = Quiet(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(server.dir, "server.crt"),
                            os.path.join(server.dir, "server.key"))
        if require_client_cert:
            ctx.load_verify_locations(os.path.join(server.dir, "ca.crt"))
            ctx.verify_mode = ssl.CERT_REQUIRED
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = "https://127.0.0.1:%d" % self.port
        with open(os.path.join(server.dir, "ca.crt"), "rb") as f:
            self.ca_bundle = base64.b64encode(f.read()).decode()
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def shared_server(module_name, *args):
    """setUpModule and tearDownModule for a test module whose tests share one server, set as
    the module's globals S (the Server) and C (an admin client)."""
    def setup():
        mod = sys.modules[module_name]
        mod.S = Server(*args)
        mod.C = mod.S.client()

    def teardown():
        sys.modules[module_name].S.stop()
    return setup, teardown


def ns_path(resource, ns="default", name=None, group=None, sub=None):
    base = "/api/v1" if group is None else "/apis/" + group
    p = "%s/namespaces/%s/%s" % (base, ns, resource)
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


def pod(name, ns="default", labels=None, node=None, **spec):
    s = {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    if node:
        s["nodeName"] = node
    s.update(spec)
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p
