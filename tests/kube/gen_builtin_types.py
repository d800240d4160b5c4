#!/usr/bin/env python3
"""Developer tool (not run by the tests): derives tests/kube/builtin_types.json, the field table of
the built-in kinds the test API server serves, from the Go API types of a Kubernetes checkout.

    python3 tests/kube/gen_builtin_types.py API_REPO APIMACHINERY_REPO APIEXTENSIONS_REPO > tests/kube/builtin_types.json

Each argument is a git directory (bare is fine); the files are read from HEAD. The table records,
per Go struct, each JSON field with its type and its list semantics (+listType, +listMapKey,
patchStrategy, patchMergeKey), which is what pruning, strict field validation, strategic merge
patch and server-side apply need. It holds facts about the API, no code.
"""
import json
import re
import subprocess
import sys

FILES = {
    0: [("", "core/v1/types.go"), ("coordination.k8s.io", "coordination/v1/types.go"),
        ("scheduling.k8s.io", "scheduling/v1/types.go"), ("events.k8s.io", "events/v1/types.go"),
        ("admissionregistration.k8s.io", "admissionregistration/v1/types.go"),
        ("resource.k8s.io/v1", "resource/v1/types.go"),
        ("resource.k8s.io/v1beta2", "resource/v1beta2/types.go"),
        ("resource.k8s.io/v1beta1", "resource/v1beta1/types.go")],
    1: [("meta", "pkg/apis/meta/v1/types.go")],
    2: [("apiextensions.k8s.io", "pkg/apis/apiextensions/v1/types.go"),
        ("apiextensions.k8s.io", "pkg/apis/apiextensions/v1/types_jsonschema.go")],
}
# Package-qualified names that are leaves (scalars or free-form JSON) whatever their Go type.
LEAVES = {"resource.Quantity": "quantity", "intstr.IntOrString": "intorstring",
          "metav1.Time": "string", "metav1.MicroTime": "string", "Time": "string",
          "MicroTime": "string", "metav1.Duration": "string", "Duration": "string",
          "runtime.RawExtension": "any", "JSON": "any", "JSONSchemaPropsOrArray": "any",
          "JSONSchemaPropsOrBool": "any", "JSONSchemaPropsOrStringArray": "any",
          "FieldsV1": "any", "types.UID": "string", "UID": "string",
          "metav1.FieldsV1": "any", "apiresource.Quantity": "quantity"}
SCALARS = {"string", "bool", "int", "int32", "int64", "float64", "byte", "uint64", "[]byte"}
# Package prefixes that name the core group from another package.
CORE_PREFIXES = ["v1.", "corev1.", "apiv1."]


def show(repo, path):
    return subprocess.run(["git", "--git-dir", repo, "show", "HEAD:" + path], check=True,
                          capture_output=True, text=True).stdout


def tags(comments):
    out = {}
    for c in comments:
        m = re.match(r"//\s*\+(listType|listMapKey|mapType|structType)=(\S+)", c)
        if m:
            out.setdefault(m.group(1), []).append(m.group(2))
    return out


def parse(src, ns, types):
    lines = src.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^type (\w+) struct \{", line)
        if m:
            name = m.group(1)
            st = {"fields": {}, "inline": []}
            pre = tags([l.strip() for l in lines[max(0, i - 12):i] if l.strip().startswith("//")])
            if pre.get("structType") == ["atomic"]:
                st["atomic"] = True
            comments = []
            i += 1
            while i < len(lines) and not lines[i].startswith("}"):
                l = lines[i].strip()
                if l.startswith("//"):
                    comments.append(l)
                elif l:
                    fm = re.match(r"^(?:(\w+)\s+)?(\S+)\s+`(.*)`", l)
                    if fm:
                        goname, gotype, tag = fm.groups()
                        if goname is None:
                            goname, gotype = gotype, gotype
                        jm = re.search(r'json:"([^"]*)"', tag)
                        jname = jm.group(1).split(",")[0] if jm else goname
                        inline = jm and ",inline" in jm.group(1)
                        t = tags(comments)
                        ps = re.search(r'patchStrategy:"([^"]*)"', tag)
                        pk = re.search(r'patchMergeKey:"([^"]*)"', tag)
                        if jname == "-":
                            pass
                        elif inline or jname == "":
                            st["inline"].append(gotype.lstrip("*"))
                        else:
                            f = {"type": gotype}
                            if jm and ",omitempty" in jm.group(1):
                                f["omitempty"] = True
                            pb = re.search(r'protobuf:"(\w+),(\d+),(\w+)', tag)
                            if pb:
                                f["pb"] = [int(pb.group(2)), pb.group(1), pb.group(3) == "rep"]
                            pv = re.search(r'protobuf_val:"(\w+),', tag)
                            if pv:
                                f["pbval"] = pv.group(1)
                            if "listType" in t:
                                f["listType"] = t["listType"][0]
                            if "listMapKey" in t:
                                f["keys"] = t["listMapKey"]
                            if "mapType" in t:
                                f["mapType"] = t["mapType"][0]
                            if ps:
                                f["patchStrategy"] = ps.group(1)
                            if pk:
                                f["patchMergeKey"] = pk.group(1)
                            st["fields"][jname] = f
                    comments = []
                i += 1
            types.setdefault(ns, {})[name] = st
            continue
        m = re.match(r"^type (\w+) (\[\]\S+|map\[\S+\]\S+|\*?[\w.]+)\s*$", line)
        if m and m.group(2) not in ("struct",):
            types.setdefault(ns, {})[m.group(1)] = {"alias": m.group(2)}
        i += 1


def main():
    repos = sys.argv[1:4]
    types = {}
    for idx, files in FILES.items():
        for ns, path in files:
            parse(show(repos[idx], path), ns, types)
    json.dump({"leaves": LEAVES, "scalars": sorted(SCALARS), "core_prefixes": CORE_PREFIXES,
               "types": types}, sys.stdout,
              indent=None, sort_keys=True, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
