# The objects a `tally-gen pods` List refers to, added in front of its pods:
# the PriorityClass, the Queues and one PodGroup per (namespace, pod-group-name).
(.items | map({ns: .metadata.namespace, pg: .metadata.annotations["pod-group-name"]}) | unique) as $pgs
| ([.items[].metadata.labels["kai.scheduler/queue"]] | unique) as $queues
| .items = [{apiVersion: "scheduling.k8s.io/v1", kind: "PriorityClass", metadata: {name: "train"}, value: 50}]
  + ($queues | map({apiVersion: "scheduling.run.ai/v2", kind: "Queue", metadata: {name: .},
                    spec: {resources: {cpu: {quota: -1, limit: -1}, memory: {quota: -1, limit: -1}, gpu: {quota: -1, limit: -1}}}}))
  + ($pgs | map({apiVersion: "scheduling.run.ai/v2alpha2", kind: "PodGroup",
                 metadata: {name: .pg, namespace: .ns}, spec: {queue: .ns, minMember: 1}}))
  + .items
