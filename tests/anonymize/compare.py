#!/usr/bin/env python3
"""Compares `tally simulate -o json` of a snapshot and of its anonymized twin through the map.

    python3 tests/anonymize/compare.py MAP.json ORIGINAL.json ANONYMIZED.json [--leaks SNAPSHOT]

MAP is what `tally snapshot --anonymize --anonymize-map` wrote ({"original": "token"}).
ORIGINAL and ANONYMIZED are the two simulate outputs. They are equal when ANONYMIZED is
ORIGINAL with every string value and every key of an `accounted` map (AccountedResource
names; other keys are field and resource names) mapped (a string the map does not hold is
kept), lists in the same order, and each `message` a reading of the original message in
which quoted strings may be replaced by their tokens (fixed words of a message may also
be strings of the input, and names the engine joins, such as <pod>-<claim>, are renamed
part by part; tests/test_anonymize.c checks messages the same way).
With --leaks, also fails if the anonymized SNAPSHOT still holds a renamed original as a
string or a key. Exit 0 when equal, 1 with the first difference otherwise.
"""
import json
import sys


def alnum(c):
    return c.isascii() and c.isalnum()


def text_matches(m, s, a):
    """Whether a is s with some of the originals it quotes replaced by their tokens."""
    n, k = len(s), len(a)
    cands = {}
    for i in range(n + 1):
        if i == n or (i > 0 and alnum(s[i - 1])):
            continue
        cands[i] = [(e, m[s[i:e]]) for e in range(i + 1, n + 1)
                    if (e == n or not alnum(s[e])) and s[i:e] in m]
    reach = {(0, 0)}
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        nxt = []
        if i < n and j < k and s[i] == a[j]:
            nxt.append((i + 1, j + 1))
        for e, t in cands.get(i, ()):
            if a.startswith(t, j):
                nxt.append((e, j + len(t)))
        for p in nxt:
            if p not in reach:
                reach.add(p)
                todo.append(p)
    return (n, k) in reach


def compare(m, o, a, where):
    """The first difference between o mapped and a, or None."""
    if isinstance(o, dict):
        if not isinstance(a, dict):
            return "%s: an object became %r" % (where, a)
        # Keys are field names or resource names (kept), except AccountedResource names.
        key = (lambda x: m.get(x, x)) if where.endswith(".accounted") else (lambda x: x)
        ok, ak = [key(x) for x in o], list(a)
        if ok != ak:
            return "%s: keys %r, want %r" % (where, ak, ok)
        for x in o:
            d = compare(m, o[x], a[key(x)], "%s.%s" % (where, x))
            if d:
                return d
        return None
    if isinstance(o, list):
        if not isinstance(a, list) or len(o) != len(a):
            return "%s: %d items, want %d" % (where, len(a) if isinstance(a, list) else -1, len(o))
        for i, (x, y) in enumerate(zip(o, a)):
            d = compare(m, x, y, "%s[%d]" % (where, i))
            if d:
                return d
        return None
    if isinstance(o, str) and where.endswith(".message") and isinstance(a, str):
        return None if text_matches(m, o, a) else "%s: %r is not %r renamed" % (where, a, o)
    want = m.get(o, o) if isinstance(o, str) else o
    return None if want == a else "%s: %r, want %r" % (where, a, want)


LABEL_MAPS = ("labels", "annotations", "nodeSelector", "matchLabels", "nodeLabels")


def leaks(m, snapshot):
    """A renamed original still present in the anonymized snapshot (a string value, or a key
    of a labels-like map; other keys are field names, which may equal a renamed name), or None."""
    found = []

    def walk(v, key):
        if isinstance(v, dict):
            for k, x in v.items():
                if key in LABEL_MAPS and k in m:
                    found.append(k)
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif isinstance(v, str) and v in m:
            found.append(v)
    walk(snapshot, None)
    return found[0] if found else None


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--leaks"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    loads = []
    for p in argv[:3] + argv[4:]:
        with open(p) as f:
            loads.append(json.load(f))
    m, o, a = loads[:3]
    d = compare(m, o, a, "$")
    if d:
        print("differs: " + d)
        return 1
    if len(loads) == 4:
        leak = leaks(m, loads[3])
        if leak is not None:
            print("leaks: the anonymized snapshot still holds %r" % leak)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
