#!/usr/bin/env python3
"""A Kubernetes API server for tally's tests (Python standard library only).

    python3 tests/kube/apiserver.py --dir DIR [options]

Serves HTTPS on --listen (default 127.0.0.1:0), writes DIR/ready.json once it accepts
connections, and DIR/kubeconfig with the contexts token, cert, cert-data, tokenfile, exec,
insecure and limited. Test control endpoints live under /_test/ on the same port. README.md next
to this file documents every flag, endpoint and what is faithful to kube-apiserver.
"""
import argparse
import base64
import json
import os
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import kube_api  # noqa: E402
import kube_present  # noqa: E402
import kube_status as st  # noqa: E402
from kube_status import ApiError  # noqa: E402
from kube_store import dumps  # noqa: E402

PUBLIC_PATHS = ("/version", "/healthz", "/livez", "/readyz")


# ---- certificates and kubeconfig -----------------------------------------------------------

def _openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_certs(d):
    """A CA, a server certificate for 127.0.0.1/localhost and client certificates
    (CN=tally-test O=system:masters, CN=limited, and CN=kube-apiserver, which the server
    presents to admission webhooks), once per directory."""
    if all(os.path.exists(os.path.join(d, f)) for f in
           ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key",
            "limited.crt", "limited.key", "webhook-client.crt", "webhook-client.key")):
        return
    p = lambda f: os.path.join(d, f)  # noqa: E731
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-days", "3650", "-subj", "/CN=tally-test-ca",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-keyout", p("ca.key"), "-out", p("ca.crt"))
    certs = [("server", "/CN=kube-apiserver",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
              "keyUsage=critical,digitalSignature,keyEncipherment\n"),
             ("client", "/O=system:masters/CN=tally-test",
              "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"),
             ("limited", "/CN=limited",
              "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"),
             ("webhook-client", "/CN=kube-apiserver",
              "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")]
    for name, subj, ext in certs:
        with open(p(name + ".ext"), "w") as f:
            f.write(ext)
        _openssl("req", *ec, "-subj", subj, "-keyout", p(name + ".key"), "-out", p(name + ".csr"))
        _openssl("x509", "-req", "-in", p(name + ".csr"), "-CA", p("ca.crt"), "-CAkey",
                 p("ca.key"), "-CAcreateserial", "-days", "3650", "-extfile", p(name + ".ext"),
                 "-out", p(name + ".crt"))
        os.remove(p(name + ".csr"))
        os.remove(p(name + ".ext"))


def _q(s):
    return json.dumps(s)


def _b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(d, url, token, exec_expiry):
    p = lambda f: os.path.abspath(os.path.join(d, f))  # noqa: E731
    plugin = os.path.join(HERE, "exec_plugin.py")
    users = [
        ("token", ["    token: %s" % _q(token)]),
        ("cert", ["    client-certificate: %s" % _q(p("client.crt")),
                  "    client-key: %s" % _q(p("client.key"))]),
        ("cert-data", ["    client-certificate-data: %s" % _b64(p("client.crt")),
                       "    client-key-data: %s" % _b64(p("client.key"))]),
        ("tokenfile", ["    tokenFile: %s" % _q(p("token"))]),
        ("exec", ["    exec:",
                  "      apiVersion: client.authentication.k8s.io/v1",
                  "      command: %s" % _q(sys.executable or "python3"),
                  "      args: [%s, %s, %s, %s, %s]" % (_q(plugin), _q("--dir"), _q(p("")),
                                                        _q("--expiry"), _q(str(exec_expiry))),
                  "      interactiveMode: Never",
                  "      provideClusterInfo: false"]),
        ("insecure", ["    token: %s" % _q(token)]),
        ("limited", ["    client-certificate: %s" % _q(p("limited.crt")),
                     "    client-key: %s" % _q(p("limited.key"))]),
    ]
    lines = ["apiVersion: v1", "kind: Config", "preferences: {}", "clusters:",
             "- name: test", "  cluster:", "    server: %s" % _q(url),
             "    certificate-authority: %s" % _q(p("ca.crt")),
             "- name: test-insecure", "  cluster:", "    server: %s" % _q(url),
             "    insecure-skip-tls-verify: true",
             "- name: test-data", "  cluster:", "    server: %s" % _q(url),
             "    certificate-authority-data: %s" % _b64(p("ca.crt")),
             "contexts:"]
    for name, _ in users:
        cluster = {"insecure": "test-insecure", "cert-data": "test-data"}.get(name, "test")
        lines += ["- name: %s" % name, "  context:", "    cluster: %s" % cluster,
                  "    user: %s" % name, "    namespace: default"]
    lines += ["current-context: token", "users:"]
    for name, body in users:
        lines += ["- name: %s" % name, "  user:"] + body
    tmp = p("kubeconfig.tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, p("kubeconfig"))


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# ---- authentication --------------------------------------------------------------------------

class Tokens:
    """Valid bearer tokens: the configured set plus the current content of DIR/token."""

    def __init__(self, admin, token_file):
        self.lock = threading.Lock()
        self.admin = admin
        self.valid = {admin}
        self.users = {}
        self.token_file = token_file
        self.file_token = None
        self.file_stamp = None

    def set(self, valid, users=None):
        with self.lock:
            self.valid = set(valid)
            self.users = dict(users or {})
            self.file_stamp = None

    def _file(self):
        try:
            s = os.stat(self.token_file)
            stamp = (s.st_mtime_ns, s.st_size, s.st_ino)
        except OSError:
            self.file_token, self.file_stamp = None, None
            return None
        if stamp != self.file_stamp:
            try:
                with open(self.token_file) as f:
                    self.file_token = f.read().strip() or None
            except OSError:
                self.file_token = None
            self.file_stamp = stamp
        return self.file_token

    def user(self, token):
        with self.lock:
            if token in self.valid or (token and token == self._file()):
                u = self.users.get(token) or {}
                return kube_api.User(u.get("user", "admin"),
                                     u.get("groups", ["system:masters"]) +
                                     ["system:authenticated"], u.get("uid", ""))
        return None


# ---- HTTP -----------------------------------------------------------------------------------

class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, state):
        self.state = state
        ThreadingHTTPServer.__init__(self, addr, Handler)

    def get_request(self):
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.state.tls.wrap_socket(sock, server_side=True,
                                          do_handshake_on_connect=False), addr

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, socket.timeout, TimeoutError)):
            return
        ThreadingHTTPServer.handle_error(self, request, client_address)


class State:
    def __init__(self, args):
        self.args = args
        self.dir = os.path.abspath(args.dir)
        cert = (args.webhook_client_cert or os.path.join(self.dir, "webhook-client.crt"),
                args.webhook_client_key or os.path.join(self.dir, "webhook-client.key"))
        self.api = kube_api.Api(dra_versions=args.dra_versions, omit_groups=args.omit_group,
                                history=args.history, watch_queue=args.watch_queue,
                                service_urls=args.service_urls,
                                aggregated_discovery=not args.no_aggregated_discovery,
                                webhook_client_cert=None if args.no_webhook_client_cert
                                else cert)
        self.log_lock = threading.Lock()
        self.log = []
        self.inflight = {}
        self.log_file = open(args.log, "a") if args.log else None
        self.tokens = None
        self.tls = None
        self.url = None
        self.streams = set()
        self.streams_lock = threading.Lock()

    def record(self, rec):
        with self.log_lock:
            self.log.append(rec)
            if self.log_file:
                self.log_file.write(json.dumps(rec, separators=(",", ":")) + "\n")
                self.log_file.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        BaseHTTPRequestHandler.setup(self)
        self.connection.settimeout(10)
        try:
            self.connection.do_handshake()
        except (ssl.SSLError, OSError):
            self.close_connection = True
            raise ConnectionError("handshake failed")
        self.connection.settimeout(None)

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    # -- helpers --

    def _user(self, state):
        cert = None
        try:
            cert = self.connection.getpeercert()
        except (ValueError, ssl.SSLError):
            cert = None
        if cert:
            cn, groups = "", []
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        groups.append(v)
            return kube_api.User(cn, groups + ["system:authenticated"]), True
        auth = self.headers.get("Authorization")
        if auth:
            if not auth.startswith("Bearer "):
                return None, False
            u = state.tokens.user(auth[7:].strip())
            return u, u is not None
        return None, True

    def _send(self, code, body, ctype="application/json", headers=(), state=None, rec=None):
        if self.command == "HEAD":
            body = b""
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", self._audit)
        for k, v in headers:
            self.send_header(k, v)
        try:
            self.end_headers()
            self.wfile.write(body)
        finally:
            # Recorded even when the client has gone (killed between its request and the
            # answer): what the server did happened, and the request log must show it.
            if rec is not None:
                rec["status"] = code
                rec["bytes"] = len(body)
                state.record(rec)

    def _status(self, e, state, rec, extra=()):
        self._send(e.code, dumps(e.status()), headers=list(e.headers) + list(extra), state=state,
                   rec=rec)

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        return self.rfile.read(n) if n else b""

    def dispatch(self):
        state = self.server.state
        self._audit = kube_api.uuid.uuid4().hex
        u = urllib.parse.urlsplit(self.path)
        path = u.path
        query = {k: v[0] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        body = self._read_body()
        if path.startswith("/_test/"):
            return self.control(state, path, body)
        ua = self.headers.get("User-Agent", "")
        rec = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) +
               ".%03dZ" % (int(time.time() * 1000) % 1000), "method": self.command,
               "path": path, "query": u.query, "user": None, "userAgent": ua,
               "contentType": self.headers.get("Content-Type", "")}
        user, ok = self._user(state)
        if not ok or (user is None and path not in PUBLIC_PATHS):
            return self._status(st.unauthorized(), state, rec)
        if user is None:
            user = kube_api.User("system:anonymous", ["system:unauthenticated"])
        rec["user"] = user.name
        headers = {k.lower(): v for k, v in self.headers.items()}
        req = kube_api.Request(self.command, path, query, headers, body, user, ua)
        # How many requests of this method on this resource (and subresource) were being
        # handled when this one came, itself included: shows whether a client sends its
        # writes in parallel (tests/cli/gating.sh). Only the test's record; nothing answers by it.
        parts = [p for p in path.split("/") if p]
        sub = parts[-1] if len(parts) > 4 and parts[-1] in ("status", "binding", "resize") else None
        flight = (self.command, parts[-3] if sub else (parts[-2] if len(parts) > 1 else path), sub)
        with state.log_lock:
            n = state.inflight.get(flight, 0) + 1
            state.inflight[flight] = n
        rec["inflight"] = n
        try:
            ms = state.api.faults.latency_ms(None)
            if ms:
                time.sleep(ms / 1000.0)
            out = self.route(state, req, path)
        except ApiError as e:
            return self._status(e, state, rec, self._warnings(req))
        except Exception as e:  # a bug in the server: answer as kube-apiserver would
            import traceback
            traceback.print_exc()
            return self._status(st.internal(repr(e)), state, rec)
        finally:
            with state.log_lock:
                state.inflight[flight] -= 1
        if isinstance(out, kube_api.WatchResponse):
            return self.stream(state, out, rec)
        if isinstance(out, kube_api.ErrorWatch):
            return self._send(200, out.body(), state=state, rec=rec)
        self._send(out.code, out.body, out.ctype, out.headers + self._warnings(req), state, rec)

    def _warnings(self, req):
        return [("Warning", '299 - %s' % json.dumps(w)) for w in req.warnings]

    def route(self, state, req, path):
        api = state.api
        parts = [p for p in path.split("/") if p]
        if path in ("/healthz", "/livez", "/readyz"):
            return kube_api.Response(200, b"ok", ctype="text/plain; charset=utf-8")
        if path == "/version":
            return kube_api.Response(200, dumps(kube_present.VERSION_INFO))
        if req.method not in ("GET", "HEAD") and (len(parts) < 3 or
                                                  (parts[0] == "apis" and len(parts) < 4)):
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on "
                           "the requested resource", {})
        accept = req.headers.get("accept", "")
        if parts == ["api"]:
            agg = self._aggregated(api, accept)
            if agg:
                return kube_api.Response(200, dumps(kube_present.aggregated(
                    [("", ["v1"])], api.by_gv, agg == kube_present.AGG_V2BETA1)), ctype=agg)
            return kube_api.Response(200, dumps(kube_present.api_versions(
                "%s:%d" % self.server.server_address[:2])))
        if parts == ["apis"]:
            groups = [(g, vs) for g, vs in api.groups() if g]
            agg = self._aggregated(api, accept)
            if agg:
                return kube_api.Response(200, dumps(kube_present.aggregated(
                    groups, api.by_gv, agg == kube_present.AGG_V2BETA1)), ctype=agg)
            return kube_api.Response(200, dumps(kube_present.api_group_list(groups)))
        if parts == ["api", "v1"]:
            return kube_api.Response(200, dumps(api.discovery_resources("", "v1")))
        if len(parts) == 2 and parts[0] == "apis":
            for g, vs in api.groups():
                if g == parts[1] and g:
                    doc = kube_present.api_group(g, vs)
                    doc.update(kind="APIGroup", apiVersion="v1")
                    return kube_api.Response(200, dumps(doc))
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        if len(parts) == 3 and parts[0] == "apis":
            return kube_api.Response(200, dumps(api.discovery_resources(parts[1], parts[2])))
        if parts[:1] == ["openapi"]:
            return self.openapi(api, parts)
        if parts[:2] == ["api", "v1"]:
            return api.handle(req, "", "v1", parts[2:])
        if parts[:1] == ["apis"] and len(parts) >= 4:
            return api.handle(req, parts[1], parts[2], parts[3:])
        raise ApiError(404, "NotFound", "the server could not find the requested resource", {})

    def _aggregated(self, api, accept):
        if not api.aggregated_discovery:
            return None
        for part in accept.split(","):
            p = part.replace(" ", "")
            if p.startswith(kube_present.AGG_V2):
                return kube_present.AGG_V2
            if p.startswith(kube_present.AGG_V2BETA1):
                return kube_present.AGG_V2BETA1
            if p.startswith("application/json") and "as=" not in p:
                return None
        return None

    def openapi(self, api, parts):
        if parts == ["openapi", "v2"]:
            doc = kube_present.openapi_v2([r for r in api.all_resources() if api.served(r.group)])
            return kube_api.Response(200, doc, ctype="application/octet-stream")
        if parts == ["openapi", "v3"]:
            return kube_api.Response(200, dumps(kube_present.openapi_root(
                api.gvs(), api.openapi_docs)))
        rest = parts[2:]
        if rest[:2] == ["api", "v1"] and len(rest) == 2:
            g, v = "", "v1"
        elif rest[:1] == ["apis"] and len(rest) == 3:
            g, v = rest[1], rest[2]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        if (g, v) not in api.gvs():
            raise ApiError(404, "NotFound", "the server could not find the requested resource",
                           {})
        return kube_api.Response(200, dumps(api.openapi_docs(g, v)),
                                 headers=[("Cache-Control", "public, immutable"),
                                          ("Etag", '"%s"' % kube_present._doc_hash(
                                              api.openapi_docs(g, v)))])

    # -- watch streams --

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def stream(self, state, w, rec):
        args = state.args
        rec["status"] = 200
        rec["bytes"] = 0
        rec["stream"] = True
        state.record(rec)
        with state.streams_lock:
            state.streams.add(w)
        sock = self.connection
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", self._audit)
        self.end_headers()
        watcher = w.watcher
        deadline = time.time() + w.timeout
        interval = args.bookmark_interval
        next_bookmark = time.time() + interval
        sent = 0
        abort = False

        def emit(lines):
            """Writes event lines, honouring a drop-watch fault; False once cut."""
            nonlocal sent
            buf = []
            for line in lines:
                cut = None
                for f in watcher.faults:
                    if sent >= f["after"]:
                        cut = f
                if cut is not None:
                    if buf:
                        self._chunk(b"".join(buf))
                    self._chunk(line[:max(1, len(line) // 2)])
                    self.wfile.flush()
                    return False
                buf.append(line)
                sent += 1
                if len(buf) >= 512:
                    self._chunk(b"".join(buf))
                    buf = []
            if buf:
                self._chunk(b"".join(buf))
            return True

        try:
            initial = watcher.initial
            watcher.initial = []
            for i in range(0, len(initial), 512):
                if not emit([w.encode("ADDED", r) for r in initial[i:i + 512]]):
                    abort = True
                    break
            if not abort and w.initial_end_rv is not None:
                self._chunk(w.bookmark(w.initial_end_rv, True))
            while not abort:
                now = time.time()
                if now >= deadline:
                    break
                if watcher.stall_until > now:
                    wait = min(watcher.stall_until, deadline) - now
                    time.sleep(min(wait, 0.5))
                    next_bookmark = max(next_bookmark, watcher.stall_until)
                    continue
                with watcher.cond:
                    if not watcher.queue and not watcher.closed:
                        timeout = min(deadline, next_bookmark if w.bookmarks else deadline,
                                      now + 0.5) - now
                        watcher.cond.wait(max(0.0, timeout))
                    items = watcher.queue
                    watcher.queue = []
                    closed = watcher.closed
                    reason = watcher.close_reason
                if watcher.stall_until > time.time():
                    with watcher.cond:
                        watcher.queue[0:0] = items
                    continue
                if items:
                    if not emit([w.encode(t, r) for t, r in items]):
                        abort = True
                        break
                if closed:
                    if reason == "restart":
                        abort = True
                    break
                if self._peer_closed(sock):
                    abort = True
                    break
                if w.bookmarks and time.time() >= next_bookmark:
                    with state.api.store.lock:
                        with watcher.cond:
                            empty = not watcher.queue
                        rv = state.api.store.rv
                    if empty:
                        self._chunk(w.bookmark(rv))
                    next_bookmark = time.time() + interval
                self.wfile.flush()
            if not abort:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            else:
                self.close_connection = True
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        except (OSError, ssl.SSLError, ValueError):
            self.close_connection = True
        finally:
            w.close()
            with state.streams_lock:
                state.streams.discard(w)

    def _peer_closed(self, sock):
        try:
            r, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(r)

    # -- control endpoints --

    def control(self, state, path, body):
        try:
            data = json.loads(body) if body else {}
            out = control(state, self.command, path, data)
        except ApiError as e:
            return self._send(e.code, dumps(e.status()))
        except (ValueError, KeyError, TypeError) as e:
            return self._send(400, dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        if out is None:
            return self._send(404, dumps({"error": "no such control endpoint: %s %s"
                                          % (self.command, path)}))
        self._send(200, dumps(out))


def control(state, method, path, data):
    api = state.api
    store = api.store
    if method == "GET" and path == "/_test/requests":
        with state.log_lock:
            return {"requests": list(state.log)}
    if method == "GET" and path == "/_test/state":
        with store.lock:
            items = []
            for gr in sorted(store.objects):
                for key in store.keys(gr):
                    items.append(store.objects[gr][key].obj)
            return {"resourceVersion": str(store.rv), "items": items}
    if method == "GET" and path == "/_test/watches":
        with state.streams_lock:
            return {"watches": [{"group": w.res.group, "resource": w.res.plural,
                                 "version": w.res.version} for w in state.streams]}
    if method != "POST":
        return None
    if path == "/_test/requests/clear":
        with state.log_lock:
            state.log = []
        return {}
    if path == "/_test/compact":
        return {"resourceVersion": str(store.compact())}
    if path == "/_test/snapshot":
        return {"resourceVersion": str(store.save_snapshot())}
    if path == "/_test/restart":
        rv = store.restart(int(data.get("jump", 1000)), bool(data.get("restore")))
        api.refresh()
        return {"resourceVersion": str(rv)}
    if path == "/_test/fault":
        return fault(state, data)
    if path == "/_test/tokens":
        state.tokens.set(data.get("valid", []), data.get("users"))
        return {}
    if path == "/_test/rbac":
        api.rbac[data["user"]] = list(data.get("allow") or [])
        return {}
    if path == "/_test/omit-group":
        api.omitted.add(data["group"])
        return {}
    if path == "/_test/serve-group":
        api.omitted.discard(data["group"])
        return {}
    if path == "/_test/put":
        if "objects" in data:
            api.put_objects(data["objects"])
            return {"resourceVersion": str(store.rv)}
        obj = api.put_object(data["object"], copy=False)
        return {"object": obj}
    if path == "/_test/churn":
        return churn(api, data)
    if path == "/_test/delete":
        api.delete_object(data["apiVersion"], data["kind"], data.get("namespace"), data["name"])
        return {}
    return None


def churn(api, data):
    """Writes one object `count` times as fast as the store takes it (a benchmark source of
    watch events): {"object": {...}, "count": N, "field": "data.i"}."""
    obj = data["object"]
    n = int(data.get("count", 1000))
    t = time.time()
    for i in range(n):
        o = json.loads(json.dumps(obj))
        cur = o
        parts = data.get("field", "metadata.annotations.churn").split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = str(i)
        api.put_object(o)
    return {"count": n, "seconds": round(time.time() - t, 3)}


def fault(state, data):
    api = state.api
    action = data.get("action")
    if action not in ("drop-watch", "stall-watch", "error", "gone-list", "gone-watch", "latency",
                      "clear", "close-watch"):
        raise ValueError("unknown action %r" % action)
    rule = dict(data)
    rule.setdefault("count", 1)
    with state.streams_lock:
        streams = [w for w in state.streams if api.faults.matches_res(rule, w.res)]
    if action == "drop-watch":
        # Open streams first, then the next ones opened.
        for w in streams:
            if rule["count"] <= 0:
                break
            w.watcher.faults.append({"after": int(rule.get("after_events", 0))})
            rule["count"] -= 1
        if rule["count"] > 0:
            api.faults.add(rule)
        return {"open_streams_cut": int(data.get("count", 1)) - rule["count"]}
    if action == "stall-watch":
        until = time.time() + float(rule.get("seconds", 5))
        rule["until"] = until
        rule["count"] = 1 << 30
        for w in streams:
            w.watcher.stall_until = max(w.watcher.stall_until, until)
        api.faults.add(rule)
        return {"stalled": len(streams)}
    if action == "close-watch":
        for w in streams:
            w.watcher.close("closed")
        return {"closed": len(streams)}
    if action == "latency":
        rule["count"] = 1 << 30
    api.faults.add(rule)
    return {}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--crds", default=os.path.join(HERE, "crds"))
    ap.add_argument("--seed", action="append", default=[])
    ap.add_argument("--dra-versions", default="v1,v1beta2,v1beta1")
    ap.add_argument("--omit-group", action="append", default=[])
    ap.add_argument("--bookmark-interval", type=float, default=1.0)
    ap.add_argument("--history", type=int, default=10000)
    ap.add_argument("--watch-queue", type=int, default=100000)
    ap.add_argument("--log")
    ap.add_argument("--service-url", action="append", default=[])
    ap.add_argument("--exec-expiry", type=int, default=3600)
    ap.add_argument("--no-aggregated-discovery", action="store_true")
    ap.add_argument("--webhook-client-cert")
    ap.add_argument("--webhook-client-key")
    ap.add_argument("--no-webhook-client-cert", action="store_true")
    args = ap.parse_args(argv)
    args.dra_versions = [v for v in args.dra_versions.split(",") if v]
    args.service_urls = {}
    for s in args.service_url:
        k, _, v = s.partition("=")
        args.service_urls[k] = v
    return args


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    os.makedirs(args.dir, exist_ok=True)
    d = os.path.abspath(args.dir)
    make_certs(d)
    state = State(args)
    token_path = os.path.join(d, "token")
    admin = base64.b32encode(os.urandom(20)).decode().lower().rstrip("=")
    with open(os.path.join(d, "admin-token"), "w") as f:
        f.write(admin + "\n")
    write_atomic(token_path, admin + "\n")
    state.tokens = Tokens(admin, token_path)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(os.path.join(d, "server.crt"), os.path.join(d, "server.key"))
    ctx.load_verify_locations(os.path.join(d, "ca.crt"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    state.tls = ctx
    api = state.api
    if args.crds and os.path.isdir(args.crds):
        for crd in kube_api.load_dir(args.crds):
            api.put_object(crd)
    for path in args.seed:
        # CRDs first, so that objects of their kinds can be stored.
        api.put_objects(kube_api.load_json_objects(path))
    api.store.trim()
    # Seeded objects live as long as the server: keep the collector from scanning them.
    import gc
    gc.collect()
    gc.freeze()
    host, _, port = args.listen.rpartition(":")
    server = Server((host or "127.0.0.1", int(port or 0)), state)
    port = server.server_address[1]
    url = "https://%s:%d" % (host or "127.0.0.1", port)
    state.url = url
    write_kubeconfig(d, url, admin, args.exec_expiry)
    stop = threading.Event()

    def on_term(signum, frame):
        threading.Thread(target=lambda: (server.shutdown(), stop.set()), daemon=True).start()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    t.start()
    write_atomic(os.path.join(d, "ready.json"), json.dumps({
        "url": url, "port": port, "pid": os.getpid(), "ca": os.path.join(d, "ca.crt"),
        "token": admin, "kubeconfig": os.path.join(d, "kubeconfig")}) + "\n")
    stop.wait()
    t.join(5)
    server.server_close()
    with state.streams_lock:
        for w in list(state.streams):
            w.watcher.close("shutdown")
    try:
        os.remove(os.path.join(d, "ready.json"))
    except OSError:
        pass
    sys.stdout.flush()
    os._exit(0)  # daemon threads may still hold sockets: do not wait for them


if __name__ == "__main__":
    sys.exit(main())
