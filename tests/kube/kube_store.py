"""The object store of the test API server: one global resourceVersion counter, an event
history for watches and consistent paginated lists, and the fan-out to watchers.

Every write happens under Store.lock; watchers receive events in resourceVersion order, each
exactly once, through bounded per-watch queues (a watcher that falls too far behind is closed,
as kube-apiserver's watch cache closes unresponsive watchers).
"""
import base64
import bisect
import json
import threading
import time


def jcopy(v):
    """A deep copy of JSON data (several times faster than copy.deepcopy)."""
    t = type(v)
    if t is dict:
        return {k: jcopy(x) for k, x in v.items()}
    if t is list:
        return [jcopy(x) for x in v]
    return v


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def body_of(obj):
    """The JSON of an object without apiVersion and kind: b'{"metadata":...}'."""
    return dumps({k: v for k, v in obj.items() if k not in ("apiVersion", "kind")})


def head(api_version, kind, builtin):
    if builtin:
        return b'{"kind":' + dumps(kind) + b',"apiVersion":' + dumps(api_version) + b","
    return b'{"apiVersion":' + dumps(api_version) + b',"kind":' + dumps(kind) + b","


def with_head(h, body):
    if body == b"{}":
        return h[:-1] + b"}"
    return h + body[1:]


class Rec:
    """One stored object version (immutable once stored)."""
    __slots__ = ("obj", "body", "rv", "key", "labels")

    def __init__(self, obj, rv, key):
        self.obj = obj
        self.rv = rv
        self.key = key
        self.body = body_of(obj)
        self.labels = (obj.get("metadata") or {}).get("labels") or {}

    def at_rv(self, rv):
        """This object's content carrying another resourceVersion."""
        obj = dict(self.obj)
        obj["metadata"] = dict(obj.get("metadata") or {}, resourceVersion=str(rv))
        return Rec(obj, rv, self.key)


class Event:
    __slots__ = ("rv", "gr", "type", "key", "rec", "prev")

    def __init__(self, rv, gr, type_, key, rec, prev):
        self.rv = rv
        self.gr = gr
        self.type = type_
        self.key = key
        self.rec = rec
        self.prev = prev


class Expired(Exception):
    pass


class Watcher:
    """A watch's queue. push() runs under Store.lock; the HTTP thread pops."""

    def __init__(self, gr, match, limit):
        self.gr = gr
        self.match = match  # rec -> bool
        self.limit = limit
        self.cond = threading.Condition()
        self.queue = []
        self.closed = False
        self.close_reason = None
        self.initial = []
        self.faults = []  # per-watch fault state dicts (drop-watch)
        self.stall_until = 0.0

    def push(self, ev):
        prev_ok = ev.prev is not None and self.match(ev.prev)
        cur_ok = ev.rec is not None and self.match(ev.rec)
        if ev.type == "DELETED":
            if not prev_ok:
                return
            out = ("DELETED", ev.rec)
        elif cur_ok and prev_ok:
            out = ("MODIFIED", ev.rec)
        elif cur_ok:
            out = ("ADDED", ev.rec)
        elif prev_ok:
            # The object stopped matching: a DELETED event with its previous content.
            out = ("DELETED", ev.prev.at_rv(ev.rv))
        else:
            return
        with self.cond:
            if self.closed:
                return
            if len(self.queue) >= self.limit:
                self.closed = True
                self.close_reason = "overflow"
            else:
                self.queue.append(out)
            self.cond.notify()

    def close(self, reason="closed"):
        with self.cond:
            if not self.closed:
                self.closed = True
                self.close_reason = reason
            self.cond.notify()


class Store:
    def __init__(self, history=10000, watch_queue=100000):
        self.lock = threading.RLock()
        self.rv = 0
        self.floor = 0  # watches and continues from a resourceVersion below this get 410
        self.history_limit = history
        self.history = []
        self.hist_rvs = []
        self.objects = {}  # gr -> {key: Rec}
        self.sorted = {}  # gr -> sorted list of keys
        self.watchers = {}  # gr -> set(Watcher)
        self.watch_queue = watch_queue
        self.changed = threading.Condition(self.lock)
        self.snapshot = None
        self.bulk = False  # while loading many objects: keys are sorted once at the end
        self.unsorted = set()

    def begin_bulk(self):
        self.lock.acquire()
        self.bulk = True

    def end_bulk(self):
        for gr in self.unsorted:
            self.sorted[gr].sort()
        self.unsorted = set()
        self.bulk = False
        self.lock.release()

    # ---- reads ---------------------------------------------------------------------------

    def get(self, gr, key):
        return self.objects.get(gr, {}).get(key)

    def items(self, gr):
        return self.objects.get(gr, {})

    def keys(self, gr):
        return self.sorted.get(gr, [])

    # ---- writes (caller holds the lock) ------------------------------------------------

    def next_rv(self):
        self.rv += 1
        return self.rv

    def put(self, gr, key, obj, rv, type_=None):
        """Stores obj (already carrying metadata.resourceVersion == str(rv))."""
        objs = self.objects.setdefault(gr, {})
        prev = objs.get(key)
        rec = Rec(obj, rv, key)
        objs[key] = rec
        if prev is None:
            keys = self.sorted.setdefault(gr, [])
            if self.bulk:
                keys.append(key)
                self.unsorted.add(gr)
            else:
                bisect.insort(keys, key)
        self._event(Event(rv, gr, type_ or ("MODIFIED" if prev else "ADDED"), key, rec, prev))
        return rec

    def remove(self, gr, key, final_obj, rv):
        objs = self.objects.get(gr, {})
        prev = objs.pop(key, None)
        if prev is None:
            return None
        keys = self.sorted[gr]
        i = bisect.bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            keys.pop(i)
        rec = Rec(final_obj, rv, key)
        self._event(Event(rv, gr, "DELETED", key, rec, prev))
        return rec

    def remove_now(self, gr, key):
        """Deletes the object at a new resourceVersion (caller holds the lock); returns the
        DELETED record or None."""
        cur = self.get(gr, key)
        if cur is None:
            return None
        rv = self.next_rv()
        final = jcopy(cur.obj)
        final["metadata"]["resourceVersion"] = str(rv)
        return self.remove(gr, key, final, rv)

    def _event(self, ev):
        self.history.append(ev)
        self.hist_rvs.append(ev.rv)
        if len(self.history) > self.history_limit:
            self._trim(self.history_limit)
        for w in list(self.watchers.get(ev.gr, ())):
            if w.closed:
                self.watchers[ev.gr].discard(w)
                continue
            w.push(ev)
        self.changed.notify_all()

    def _trim(self, keep):
        drop = len(self.history) - keep
        if drop <= 0:
            return
        self.floor = max(self.floor, self.history[drop - 1].rv)
        del self.history[:drop]
        del self.hist_rvs[:drop]

    def trim(self):
        """Applies the history bound exactly (compaction keeps the newest N events)."""
        with self.lock:
            self._trim(self.history_limit)

    def compact(self):
        with self.lock:
            self.floor = self.rv
            self.history = []
            self.hist_rvs = []
            return self.rv

    def restart(self, jump, restore=False):
        with self.lock:
            for ws in self.watchers.values():
                for w in ws:
                    w.close("restart")
            self.watchers = {}
            if restore and self.snapshot is not None:
                self.objects = {gr: dict(objs) for gr, objs in self.snapshot.items()}
                self.sorted = {gr: sorted(objs) for gr, objs in self.objects.items()}
            self.rv += jump
            self.floor = self.rv
            self.history = []
            self.hist_rvs = []
            return self.rv

    def save_snapshot(self):
        with self.lock:
            self.snapshot = {gr: dict(objs) for gr, objs in self.objects.items()}
            return self.rv

    # ---- watches --------------------------------------------------------------------------

    def watch(self, gr, match, since, initial):
        """Registers a watcher. since: replay events with rv > since (None: none);
        initial: also queue the current objects as ADDED first. Raises Expired(floor)."""
        with self.lock:
            if since is not None and since < self.floor:
                raise Expired(self.floor)
            w = Watcher(gr, match, self.watch_queue)
            if initial:
                w.initial = [r for k, r in sorted(self.objects.get(gr, {}).items())
                             if match(r)]
            if since is not None:
                i = bisect.bisect_right(self.hist_rvs, since)
                for ev in self.history[i:]:
                    if ev.gr == gr:
                        w.push(ev)
            self.watchers.setdefault(gr, set()).add(w)
            return w, self.rv

    def unwatch(self, w):
        with self.lock:
            self.watchers.get(w.gr, set()).discard(w)

    def watchers_of(self, gr=None):
        with self.lock:
            if gr is None:
                return [w for ws in self.watchers.values() for w in ws]
            return list(self.watchers.get(gr, ()))

    # ---- consistent lists -----------------------------------------------------------------

    def state_at(self, gr, rv):
        """{key: Rec or None} for keys whose state at rv differs from now (None: absent then).
        Raises Expired when rv is older than the history."""
        if rv < self.floor:
            raise Expired(self.floor)
        out = {}
        i = bisect.bisect_right(self.hist_rvs, rv)
        for ev in self.history[i:]:
            if ev.gr == gr and ev.key not in out:
                out[ev.key] = ev.prev
        return out


def encode_continue(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start},
                     separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_continue(token):
    pad = "=" * (-len(token) % 4)
    try:
        d = json.loads(base64.urlsafe_b64decode(token + pad))
        if d.get("v") != "meta.k8s.io/v1" or not isinstance(d.get("rv"), int) or \
                not isinstance(d.get("start"), str):
            raise ValueError
        return d["rv"], d["start"]
    except (ValueError, TypeError, json.JSONDecodeError):
        raise ValueError("continue key is not valid: incorrect encoded start resourceVersion "
                         "(version meta.k8s.io/v1)")


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
