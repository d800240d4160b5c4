#!/usr/bin/env python3
"""A DRA-heavy cluster for `make bench` (issue 18, docs/performance.md "DRA allocation").

gen_dra_heavy.py SHAPE [NODES] [PODS] [SEED] > cluster.json

Writes one JSON object per line (tally reads a stream of JSON values). The
cluster is the same for every SHAPE: NODES nodes (default 1,000), each with
one ResourceSlice (resource.k8s.io/v1, driver gpu.nvidia.com, one pool per
node) of 8 GPUs made partitionable as MIG is: per GPU a counter set gpu-G
(memory 80Gi, slices 7) consumed by the whole GPU (80Gi, 7 slices), two
3g.40gb partitions (40Gi, 3 slices each) and seven 1g.10gb partitions
(10Gi, 1 slice each), so a whole GPU and its partitions overlap: 80 devices
a node. Attributes: productName (H100 on even nodes, A100 on odd ones),
type (gpu or mig), profile, index (the physical GPU), pcieRoot (pci-0 .. pci-3,
two GPUs each) and numa (0 for GPUs 0-3, 1 for 4-7); capacity memory.
DeviceClasses: gpu.nvidia.com (every device), gpu-whole, mig-1g, mig-3g.

SHAPE picks the PODS pending pods (one unlimited queue, cpu 1 each):
  mix      1-4 claims (ResourceClaimTemplates) per pod of several requests,
           drawn with SEED from: a whole GPU; two whole GPUs under
           matchAttribute pcieRoot; 2x 1g + 1x 3g on one physical GPU
           (matchAttribute index); firstAvailable [2 whole | 2x 3g | 4x 1g];
           4 whole GPUs under matchAttribute numa plus a 1g partition; and
           the shapes that fit nowhere: 9 whole GPUs (more than a node
           has), a GPU with 160Gi (no device), 3 whole GPUs under
           matchAttribute pcieRoot (a root has 2). About a fifth of the
           pods fit nowhere from the start; the rest fit until the
           cluster's counters run out, then fit nowhere.
           (With 1,000 nodes and 6,000 pods: 2,348 Bound, 3,292 Unschedulable,
           360 UnsupportedConstraint.)
  fit      pods drawn as mix's that fit, dropping claims until what they
           occupy (GPUs, whole or partitioned) is at most 6 of a node's 8:
           they fit an empty node together (the easy shape). mix keeps the
           combinations that do not: two numa-quad claims need all 8 whole
           GPUs and a partition besides, and such a pod fits nowhere.
  never    only mix's pods with a claim that fits nowhere.
  nodra    the pods of mix (same cpu, same order) without claims: the baseline.
  worst    the backtracking worst case under the bound: every pod has one
           claim of requests a (2x 3g), b (3x 1g), c (2 whole GPUs) under one
           matchAttribute pcieRoot: c needs both GPUs of a root whole, so a
           and b have no slice left on that root, and no combination works
           on any node; the search walks every combination of a and b with
           every try of c, 98,808 device trials a node (of the variants
           tried, the most under the bound), so every node is searched to
           the end, once (the engine's full scan reuses its bin-pack
           scan's searches), and the pod is Unschedulable.
  bound    a (2x 1g), b (2x 1g), c (2 whole GPUs) under matchAttribute
           pcieRoot: more combinations than tally's bound of 200,000 device
           trials, so the search stops on the first node it tries and the
           pod is UnsupportedConstraint.
"""
import json
import random
import sys

shape = sys.argv[1] if len(sys.argv) > 1 else "mix"
nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
pods = int(sys.argv[3]) if len(sys.argv) > 3 else 6000
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 42
if shape not in ("mix", "fit", "never", "nodra", "worst", "bound"):
    sys.exit("gen_dra_heavy.py: SHAPE is mix, fit, never, nodra, worst or bound")
DRV = "gpu.nvidia.com"
out = sys.stdout


def emit(o):
    out.write(json.dumps(o, separators=(",", ":")))
    out.write("\n")


def dev(name, attrs, mem, cset, slices):
    return {
        "name": name,
        "attributes": {k: ({"int": v} if isinstance(v, int) else {"string": v}) for k, v in attrs.items()},
        "capacity": {"memory": {"value": mem}},
        "consumesCounters": [{"counterSet": cset, "counters": {
            "memory": {"value": mem}, "slices": {"value": str(slices)}}}],
    }


for n in range(nodes):
    name = f"node-{n:04d}"
    product = "H100" if n % 2 == 0 else "A100"
    emit({"apiVersion": "v1", "kind": "Node",
          "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
          "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                     "conditions": [{"type": "Ready", "status": "True"}]}})
    devices, counters = [], []
    for g in range(8):
        base = {"productName": product, "index": g, "pcieRoot": f"pci-{g // 2}", "numa": g // 4}
        cset = f"gpu-{g}"
        counters.append({"name": cset, "counters": {"memory": {"value": "80Gi"}, "slices": {"value": "7"}}})
        devices.append(dev(f"gpu-{g}", dict(base, type="gpu", profile="full"), "80Gi", cset, 7))
        for k in range(2):
            devices.append(dev(f"gpu-{g}-3g-{k}", dict(base, type="mig", profile="3g.40gb"), "40Gi", cset, 3))
        for k in range(7):
            devices.append(dev(f"gpu-{g}-1g-{k}", dict(base, type="mig", profile="1g.10gb"), "10Gi", cset, 1))
    emit({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
          "metadata": {"name": f"{name}-gpus"},
          "spec": {"driver": DRV, "nodeName": name,
                   "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                   "sharedCounters": counters, "devices": devices}})


def attr(a):
    return f'device.attributes["{DRV}"].{a}'


classes = {
    DRV: f'device.driver == "{DRV}"',
    "gpu-whole": f'{attr("type")} == "gpu"',
    "mig-1g": f'{attr("profile")} == "1g.10gb"',
    "mig-3g": f'{attr("profile")} == "3g.40gb"',
}
for c, e in classes.items():
    emit({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": c},
          "spec": {"selectors": [{"cel": {"expression": e}}]}})


def req(name, cls, count, sels=()):
    ex = {"deviceClassName": cls, "count": count}
    if sels:
        ex["selectors"] = [{"cel": {"expression": s}} for s in sels]
    return {"name": name, "exactly": ex}


def fa(name, subs):
    return {"name": name, "firstAvailable": [
        {"name": s, "deviceClassName": c, "count": k} for s, c, k in subs]}


def match(attribute, reqs=None):
    c = {"matchAttribute": f"{DRV}/{attribute}"}
    if reqs:
        c["requests"] = reqs
    return c


# name -> (requests, constraints)
templates = {
    "whole-1": ([req("gpu", "gpu-whole", 1)], []),
    "root-pair": ([req("a", "gpu-whole", 1), req("b", "gpu-whole", 1)], [match("pcieRoot")]),
    "mig-same-gpu": ([req("small", "mig-1g", 2), req("big", "mig-3g", 1)], [match("index")]),
    "fa-any": ([fa("gpu", [("whole", "gpu-whole", 2), ("half", "mig-3g", 2), ("slices", "mig-1g", 4)])], []),
    "numa-quad": ([req("gpus", "gpu-whole", 4), req("slice", "mig-1g", 1)], [match("numa", ["gpus"])]),
    # fit nowhere
    "nine": ([req("gpus", "gpu-whole", 9)], []),
    "huge-mem": ([req("gpu", DRV, 1, [f'device.capacity["{DRV}"].memory.compareTo(quantity("160Gi")) >= 0'])], []),
    "root-triple": ([req("gpus", "gpu-whole", 3)], [match("pcieRoot")]),
    # the backtracking worst cases
    "worst": ([req("a", "mig-3g", 2), req("b", "mig-1g", 3), req("c", "gpu-whole", 2)], [match("pcieRoot")]),
    "bound": ([req("a", "mig-1g", 2), req("b", "mig-1g", 2), req("c", "gpu-whole", 2)], [match("pcieRoot")]),
}
for t, (rs, cs) in templates.items():
    spec = {"devices": {"requests": rs}}
    if cs:
        spec["devices"]["constraints"] = cs
    emit({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
          "metadata": {"name": t, "namespace": "ns"}, "spec": {"spec": spec}})
emit({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "team-a"},
      "spec": {"resources": {r: {"quota": -1, "limit": -1} for r in ("cpu", "memory", "gpu")}}})

rng = random.Random(seed)
fits = ["whole-1", "root-pair", "mig-same-gpu", "fa-any", "numa-quad"]
never = ["nine", "huge-mem", "root-triple"]
weight = {"whole-1": 1, "root-pair": 2, "mig-same-gpu": 1, "fa-any": 2, "numa-quad": 5}
for p in range(pods):
    if shape in ("worst", "bound"):
        tl = [shape]
    elif shape == "never" or (shape != "fit" and rng.random() < 0.2):
        tl = [rng.choice(never)] + [rng.choice(fits) for _ in range(rng.randint(0, 2))]
        rng.shuffle(tl)
    else:
        tl = [rng.choice(fits) for _ in range(rng.choice((1, 1, 2, 2, 3, 4)))]
        # fit: only pods whose claims fit an empty node together (GPUs they occupy, at most 6)
        while shape == "fit" and sum(weight[t] for t in tl) > 6:
            tl.pop()
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"p-{p:05d}", "namespace": "ns", "labels": {"kai.scheduler/queue": "team-a"},
                        "creationTimestamp": "2026-11-29T10:00:00Z"},
           "spec": {"schedulerName": "kai-scheduler",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    if shape != "nodra":
        pod["spec"]["resourceClaims"] = [{"name": f"c{i}", "resourceClaimTemplateName": t}
                                         for i, t in enumerate(tl)]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": f"c{i}"} for i in range(len(tl))]
    emit(pod)
