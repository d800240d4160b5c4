"""Decoding of Kubernetes protobuf request bodies (application/vnd.kubernetes.protobuf), which
client-go's typed clients send (kubectl create namespace, configmap, priorityclass, ...). The
field numbers come from the protobuf struct tags recorded in builtin_types.json; values are
read by their wire type and Go type. Answers are always JSON (clients accept it)."""
import base64
import json
import struct

import kube_schema

MAGIC = b"k8s\x00"


class ProtoError(Exception):
    pass


def _varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ProtoError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(buf):
    """(number, wire type, value) for each field of a message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        elif wt == 2:
            n, i = _varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        else:
            raise ProtoError("unsupported wire type %d" % wt)
        yield num, wt, v


def _signed(v, bits=64):
    if v >= 1 << (bits - 1):
        v -= 1 << 64 if v >= 1 << 63 else 1 << bits
    return v


def _time(buf, micro=False):
    import time as _t
    secs = nanos = 0
    for num, _, v in fields(buf):
        if num == 1:
            secs = _signed(v)
        elif num == 2:
            nanos = v
    s = _t.strftime("%Y-%m-%dT%H:%M:%S", _t.gmtime(secs))
    if micro:
        return s + ".%06dZ" % (nanos // 1000)
    return s + "Z"


def _duration(ns):
    ns = _signed(ns)
    if ns == 0:
        return "0s"
    out, rest = "", ns / 1e9
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if h:
        out += "%dh" % h
    if h or m:
        out += "%dm" % m
    out += ("%g" % s) + "s"
    return out


class Decoder:
    def __init__(self):
        self.bt = kube_schema.builtin()

    def _resolve(self, ns, expr):
        """(kind, info) for a Go type: ('struct', (ns, type)), ('list', expr), ('map', val),
        ('leaf', name), ('scalar', go type)."""
        expr = expr.lstrip("*")
        if expr == "[]byte":
            return "scalar", "[]byte"
        if expr.startswith("[]"):
            return "list", expr[2:]
        if expr.startswith("map["):
            return "map", kube_schema.map_value(expr)
        if expr in self.bt.leaves:
            return "leaf", expr.split(".")[-1]
        if expr in self.bt.scalars:
            return "scalar", expr
        tns, name = ns, expr
        if expr.startswith("metav1."):
            tns, name = "meta", expr[7:]
        else:
            for p in self.bt.core_prefixes:
                if expr.startswith(p):
                    tns, name = "", expr[len(p):]
                    break
        t = self.bt.types.get(tns, {}).get(name)
        if t is None and tns != "meta":
            t = self.bt.types["meta"].get(name)
            tns = "meta" if t is not None else tns
        if t is None:
            return "scalar", "string"
        if "alias" in t:
            return self._resolve(tns, t["alias"])
        return "struct", (tns, name)

    def message(self, buf, ns, name):
        t = self.bt.types[ns][name]
        by_num = {}
        for inl in t.get("inline", []):
            k, info = self._resolve(ns, inl)
            if k == "struct":
                for fname, f in self.bt.types[info[0]][info[1]]["fields"].items():
                    if "pb" in f:
                        by_num[f["pb"][0]] = (fname, f, info[0])
        for fname, f in t["fields"].items():
            if "pb" in f:
                by_num[f["pb"][0]] = (fname, f, ns)
        out = {}
        for num, wt, v in fields(buf):
            if num not in by_num:
                continue
            fname, f, fns = by_num[num]
            kind, info = self._resolve(fns, f["type"])
            if kind == "list":
                ek, einfo = self._resolve(fns, info)
                lst = out.setdefault(fname, [])
                if wt == 2 and ek == "scalar" and einfo not in ("string", "[]byte"):
                    j = 0
                    while j < len(v):
                        x, j = _varint(v, j)
                        lst.append(self._scalar(einfo, 0, x))
                else:
                    lst.append(self.value(fns, info, wt, v))
            elif kind == "map":
                key = val = None
                for n2, w2, v2 in fields(v):
                    if n2 == 1:
                        key = v2.decode()
                    elif n2 == 2:
                        val = self.value(fns, info, w2, v2)
                if val is None:
                    val = self._zero(fns, info)
                out.setdefault(fname, {})[key or ""] = val
            else:
                out[fname] = self.value(fns, f["type"], wt, v)
        # Go's JSON encoding omits zero values of omitempty fields that protobuf carries.
        for fname, f, fns in by_num.values():
            if fname not in out or not f.get("omitempty") or f["type"].startswith("*"):
                continue
            v = out[fname]
            kind = self._resolve(fns, f["type"])[0]
            if (kind in ("list", "map") and not v) or \
                    (kind in ("scalar", "leaf") and (v is None or v in ("", 0) or v is False)):
                del out[fname]
        return out

    def _zero(self, ns, expr):
        kind, info = self._resolve(ns, expr)
        if kind == "scalar":
            return "" if info == "string" else 0
        if kind == "leaf" and info == "Quantity":
            return "0"
        return {} if kind == "struct" else None

    def _scalar(self, go, wt, v):
        if go == "bool":
            return bool(v)
        if go == "float64":
            return struct.unpack("<d", v)[0] if isinstance(v, bytes) else float(v)
        if go == "[]byte":
            return base64.b64encode(v).decode()
        if go == "string":
            return v.decode() if isinstance(v, bytes) else str(v)
        if isinstance(v, bytes):
            return v.decode()
        return _signed(v, 32 if go == "int32" else 64)

    def value(self, ns, expr, wt, v):
        kind, info = self._resolve(ns, expr)
        if kind == "struct":
            return self.message(v, info[0], info[1])
        if kind == "scalar":
            return self._scalar(info, wt, v)
        if kind == "leaf":
            if info in ("Time",):
                return _time(v)
            if info == "MicroTime":
                return _time(v, micro=True)
            if info == "Quantity":
                return next((x.decode() for n, _, x in fields(v) if n == 1), "0")
            if info == "IntOrString":
                d = {n: x for n, _, x in fields(v)}
                return _signed(d.get(2, 0), 32) if d.get(1, 0) == 0 else d.get(3, b"").decode()
            if info == "Duration":
                return _duration(next((x for n, _, x in fields(v) if n == 1), 0))
            if info in ("RawExtension", "JSON", "FieldsV1"):
                raw = next((x for n, _, x in fields(v) if n == 1), b"")
                return json.loads(raw) if raw else None
            if info in ("UID",):
                return v.decode()
            return v.decode(errors="replace") if isinstance(v, bytes) else v
        return None


def decode(body, find_resource):
    """The object (a dict with apiVersion and kind) in a protobuf envelope;
    find_resource(apiVersion, kind) gives its Resource."""
    if not body.startswith(MAGIC):
        raise ProtoError("provided data does not appear to be a protobuf message, expected "
                         "prefix [107 56 115 0]")
    type_meta, raw = {}, b""
    for num, _, v in fields(body[len(MAGIC):]):
        if num == 1:
            for n2, _, v2 in fields(v):
                type_meta[{1: "apiVersion", 2: "kind"}.get(n2, n2)] = v2.decode()
        elif num == 2:
            raw = v
    if type_meta.get("kind") in ("DeleteOptions", "CreateOptions", "UpdateOptions",
                                 "PatchOptions"):
        return Decoder().message(raw, "meta", type_meta["kind"])
    res = find_resource(type_meta.get("apiVersion", ""), type_meta.get("kind", ""))
    if res is None or not res.builtin:
        raise ProtoError("no kind %r is registered for version %r" % (type_meta.get("kind"),
                                                                      type_meta.get("apiVersion")))
    obj = Decoder().message(raw, res.go_ns, res.go_type)
    out = {"apiVersion": type_meta.get("apiVersion"), "kind": type_meta.get("kind")}
    out.update(obj)
    return out


# ---- encoding (the OpenAPI v2 document kubectl 1.27 and 1.28 download) -----------------------

def _enc_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, value):
    """One length-delimited field (strings, bytes and embedded messages)."""
    if isinstance(value, str):
        value = value.encode()
    return _enc_varint(num << 3 | 2) + _enc_varint(len(value)) + value


def openapi_v2(paths, title, version):
    """A gnostic openapi_v2.Document with, per path, a PATCH operation carrying the
    x-kubernetes-group-version-kind extension and the query parameters kubectl looks for.
    paths: [(path, {"group", "version", "kind"}, [query parameter names])]."""
    items = b""
    for path, gvk, params in paths:
        op = field(5, "patch" + gvk["kind"])
        for p in params:
            query = field(2, "query") + field(4, p) + field(6, "string")
            op += field(8, field(1, field(2, field(3, query))))
        yaml = "group: %s\nkind: %s\nversion: %s\n" % (json.dumps(gvk["group"]), gvk["kind"],
                                                       gvk["version"])
        op += field(13, field(1, "x-kubernetes-group-version-kind") + field(2, field(2, yaml)))
        items += field(2, field(1, path) + field(2, field(8, op)))
    return field(1, "2.0") + field(2, field(1, title) + field(2, version)) + field(8, items)
