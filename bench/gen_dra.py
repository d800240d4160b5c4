#!/usr/bin/env python3
"""A DRA-heavy cluster for timing device selectors (docs/performance.md).

gen_dra.py [NODES] [PODS] > cluster.yaml: NODES nodes (half with 8 GB200
devices of 80Gi, half with 8 L4 devices of 24Gi, one ResourceSlice each),
one DeviceClass, four ResourceClaimTemplates whose selectors use the common
forms (attribute ==, int order, `in`, capacity compareTo), and PODS pending
pods of one unlimited queue cycling over the templates. Every pod is tried
on nodes until one fits, so each selector runs per device per candidate node.
"""
import sys

nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 100
pods = int(sys.argv[2]) if len(sys.argv) > 2 else 600
out = []
for n in range(nodes):
    gb = n % 2 == 0
    name = f"{'gb' if gb else 'l4'}-{n:04d}"
    out.append(f"""apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status:
  allocatable: {{cpu: "64", memory: 512Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]""")
    devs = "\n".join(
        f"  - {{name: gpu-{i}, attributes: {{productName: {{string: {'GB200' if gb else 'L4'}}}, "
        f"index: {{int: {i}}}, mig: {{bool: false}}, driverVersion: {{version: 550.54.{i}}}}}, "
        f"capacity: {{memory: {{value: {'80Gi' if gb else '24Gi'}}}}}}}"
        for i in range(8))
    out.append(f"""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpus}}
spec:
  driver: gpu.nvidia.com
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices:
{devs}""")
out.append("""apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.nvidia.com"'}""")
sels = {
    "gb200": 'device.attributes["gpu.nvidia.com"].productName == "GB200"',
    "low-index": '"index" in device.attributes["gpu.nvidia.com"] && device.attributes["gpu.nvidia.com"].index < 4 && !device.attributes["gpu.nvidia.com"].mig',
    "big": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "l4": 'device.attributes["gpu.nvidia.com"].productName == "L4" || device.attributes["gpu.nvidia.com"].productName == "T4"',
}
for t, e in sels.items():
    out.append(f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {t}, namespace: ns}}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly:
          deviceClassName: gpu.nvidia.com
          count: 2
          selectors:
          - cel: {{expression: '{e.replace("'", "''")}'}}""")
out.append("""apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec:
  resources:
    cpu: {quota: -1, limit: -1}
    memory: {quota: -1, limit: -1}
    gpu: {quota: -1, limit: -1}""")
names = list(sels)
for p in range(pods):
    t = names[p % len(names)]
    out.append(f"""apiVersion: v1
kind: Pod
metadata: {{name: p-{p:05d}, namespace: ns, labels: {{kai.scheduler/queue: team-a}}, creationTimestamp: "2026-11-29T10:00:00Z"}}
spec:
  schedulerName: kai-scheduler
  resourceClaims: [{{name: gpus, resourceClaimTemplateName: {t}}}]
  containers: [{{name: c, resources: {{requests: {{cpu: "1"}}, claims: [{{name: gpus}}]}}}}]""")
print("\n---\n".join(out))
