package world

// Annotations the world and its kwok stages agree on.
const (
	// FakeNodeAnnotation marks a Node as one kwok manages (its Lease, its pods).
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
	// SandboxAnnotation on a Pod stands for "the runtime built the pod
	// sandbox": kwok only makes pods Running/Ready once it is "ready". The
	// node-network simulator sets it, and withholds it from pod-network pods
	// while the node's CNI is not ready, like a kubelet failing to set up the
	// sandbox.
	SandboxAnnotation = "world.cozystack.io/sandbox"
	SandboxReady      = "ready"
)

// kwokStages replaces kwok's defaults. The world owns Node status (addresses,
// capacity, conditions), so the node stage only refreshes heartbeat times: it
// names each condition by type and nothing else, and the strategic merge patch
// leaves status, reason and message as the simulator set them. Node Leases,
// which keep kcm from marking nodes Unknown, are renewed by kwok's lease
// controller for every managed node, Ready or not (it runs only when at least
// one node stage exists).
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: world-node-heartbeat
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ["True", "False"]
  delay:
    durationMilliseconds: 20000
    jitterDurationMilliseconds: 30000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range .status.conditions }}
      - type: {{ .type | Quote }}
        lastHeartbeatTime: {{ $now | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: world-pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchAnnotations:
      world.cozystack.io/sandbox: ready
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    # Running too: kcm marks pods NotReady when their node goes NotReady, and
    # the "kubelet" reports them Ready again.
    - key: '.status.phase'
      operator: In
      values: ["Pending", "Running"]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $started := or .status.startTime $now }}
      conditions:
      - type: PodReadyToStartContainers
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ range .spec.readinessGates }}
      - type: {{ .conditionType | Quote }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        imageID: ""
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $started | Quote }}
      {{ end }}
      {{ with .spec.initContainers }}
      initContainerStatuses:
      {{ range . }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        imageID: ""
        restartCount: 0
        {{ if eq (or .restartPolicy "") "Always" }}
        ready: true
        started: true
        state:
          running:
            startedAt: {{ $started | Quote }}
        {{ else }}
        ready: true
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $started | Quote }}
            finishedAt: {{ $started | Quote }}
        {{ end }}
      {{ end }}
      {{ end }}
      {{/* A pod readied again keeps its addresses: PodIPsWith would allocate new ones. */}}
      {{ if not .status.podIPs }}
      {{ with NodeIPsWith .spec.nodeName }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $started | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: world-pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: ["Running"]
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: ["Job"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $started := or .status.startTime $now }}
      conditions:
      - type: Ready
        status: "False"
        reason: PodCompleted
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "False"
        reason: PodCompleted
        lastTransitionTime: {{ $now | Quote }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        imageID: ""
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $started | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: world-pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    delete: true
`
