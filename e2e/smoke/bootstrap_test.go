package smoke

import (
	"fmt"
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/e2e/world"
)

const noCNILabel = "smoke.cozystack.io/no-cni"

// The specs follow one cluster through its bootstrap, so they are ordered.
var _ = Describe("A fresh tenant cluster", Ordered, func() {
	const ns = "bootstrap"
	cniPods := map[string]string{cniLabelKey: cniLabelValue}

	BeforeAll(func(ctx SpecContext) {
		createNamespace(ctx, ns)
	})

	It("runs hostNetwork pods on NotReady nodes but holds pod-network pods back", func(ctx SpecContext) {
		leases := map[string]time.Time{}
		for _, n := range nodeNames {
			lease := &coordinationv1.Lease{}
			Expect(k.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n}, lease)).To(Succeed())
			leases[n] = lease.Spec.RenewTime.Time
		}

		agent := daemonSet(ns, "node-agent", podSpec("registry.example/agent:v1", true, bootTolerations), nil)
		web := deployment(ns, "web", 2, podSpec("registry.example/web:v1", false, nil), nil)
		early := deployment(ns, "early", 1, podSpec("registry.example/early:v1", false, bootTolerations), nil)
		for _, obj := range []client.Object{agent, web, early} {
			Expect(k.Create(ctx, obj)).To(Succeed())
		}

		By("the hostNetwork DaemonSet becoming Ready on all three NotReady nodes")
		Eventually(func(g Gomega) {
			g.Expect(k.Get(ctx, client.ObjectKeyFromObject(agent), agent)).To(Succeed())
			g.Expect(agent.Status.DesiredNumberScheduled).To(BeEquivalentTo(3))
			g.Expect(agent.Status.NumberReady).To(BeEquivalentTo(3))
		}).WithContext(ctx).Should(Succeed())
		for _, pod := range listPods(ctx, ns, map[string]string{"app": "node-agent"}) {
			node := getNode(ctx, pod.Spec.NodeName)
			Expect(nodeCondition(node, corev1.NodeReady)).To(Equal(corev1.ConditionFalse))
			Expect(nodeCondition(node, corev1.NodeNetworkUnavailable)).To(Equal(corev1.ConditionTrue))
			Expect(hasTaint(node, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)).To(BeTrue())
			Expect(hasTaint(node, corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)).To(BeTrue())
			Expect(pod.Status.PodIP).To(Equal(internalIP(node)), "a hostNetwork pod has its node's IP")
		}

		By("pod-network pods staying Pending: unschedulable, or scheduled without a sandbox")
		// First the pods exist and the tolerating one is scheduled, so the
		// Consistently below holds on what stays, not on what is still coming.
		Eventually(func(g Gomega) {
			g.Expect(listPods(ctx, ns, map[string]string{"app": "web"})).To(HaveLen(2))
			earlyPods := listPods(ctx, ns, map[string]string{"app": "early"})
			g.Expect(earlyPods).To(HaveLen(1))
			g.Expect(earlyPods[0].Spec.NodeName).NotTo(BeEmpty())
		}).WithContext(ctx).Should(Succeed())
		Consistently(func(g Gomega) {
			webPods := listPods(ctx, ns, map[string]string{"app": "web"})
			g.Expect(webPods).To(HaveLen(2))
			for _, pod := range webPods {
				g.Expect(pod.Spec.NodeName).To(BeEmpty())
				g.Expect(pod.Status.Phase).To(Equal(corev1.PodPending))
			}
			earlyPods := listPods(ctx, ns, map[string]string{"app": "early"})
			g.Expect(earlyPods).To(HaveLen(1))
			g.Expect(earlyPods[0].Spec.NodeName).NotTo(BeEmpty())
			g.Expect(earlyPods[0].Annotations).NotTo(HaveKey(world.SandboxAnnotation))
			g.Expect(earlyPods[0].Status.Phase).To(Equal(corev1.PodPending))
			g.Expect(earlyPods[0].Status.PodIP).To(BeEmpty())
		}).WithContext(ctx).Should(Succeed())

		By("kwok renewing the Leases of NotReady nodes, so kcm never calls them Unknown")
		Eventually(func(g Gomega) {
			for n, before := range leases {
				lease := &coordinationv1.Lease{}
				g.Expect(k.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n}, lease)).To(Succeed())
				g.Expect(lease.Spec.RenewTime.Time).To(BeTemporally(">", before), "lease of %s", n)
				g.Expect(nodeCondition(getNode(ctx, n), corev1.NodeReady)).To(Equal(corev1.ConditionFalse))
			}
		}).WithContext(ctx).WithTimeout(45 * time.Second).Should(Succeed())
	})

	It("makes each node Ready only after the CNI pod on it is Ready, then runs pod-network pods", func(ctx SpecContext) {
		cni := podSpec("registry.example/cilium:v1", true, tolerateEverything)
		// Lets a later spec take the CNI away from one node without a rollout.
		cni.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: noCNILabel, Operator: corev1.NodeSelectorOpDoesNotExist}},
			}}},
		}}
		order := watchReadinessOrder(ctx, "kube-system", cniPods)
		Expect(k.Create(ctx, daemonSet("kube-system", "cilium", cni, cniPods))).To(Succeed())

		// Nodes are read before pods: a node seen Ready must then find its
		// CNI pod Ready, or readiness came first.
		Eventually(func(g Gomega) {
			var nodes corev1.NodeList
			g.Expect(k.List(ctx, &nodes)).To(Succeed())
			pods := listPods(ctx, "kube-system", cniPods)
			readyCNI := map[string]bool{}
			for i := range pods {
				if isPodReady(&pods[i]) {
					readyCNI[pods[i].Spec.NodeName] = true
				}
			}
			for i := range nodes.Items {
				node := &nodes.Items[i]
				if nodeCondition(node, corev1.NodeReady) == corev1.ConditionTrue && !readyCNI[node.Name] {
					StopTrying(fmt.Sprintf("node %s is Ready but no CNI pod on it is", node.Name)).Now()
				}
				g.Expect(nodeCondition(node, corev1.NodeReady)).To(Equal(corev1.ConditionTrue), node.Name)
				g.Expect(nodeCondition(node, corev1.NodeNetworkUnavailable)).To(Equal(corev1.ConditionFalse), node.Name)
			}
		}).WithContext(ctx).WithPolling(20 * time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) { order.expectCNIFirst(g, nodeNames) }).WithContext(ctx).Should(Succeed())

		By("kcm lifting the not-ready and network-unavailable taints")
		Eventually(func(g Gomega) {
			for _, n := range nodeNames {
				node := getNode(ctx, n)
				for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeNetworkUnavailable} {
					g.Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", key)), n)
				}
			}
		}).WithContext(ctx).Should(Succeed())

		By("the pod-network Deployments becoming available with pod IPs from their node's pod CIDR")
		for _, name := range []string{"web", "early"} {
			d := &appsv1.Deployment{}
			Eventually(func(g Gomega) {
				g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
				g.Expect(d.Status.ReadyReplicas).To(Equal(*d.Spec.Replicas))
			}).WithContext(ctx).Should(Succeed())
			for _, pod := range listPods(ctx, ns, map[string]string{"app": name}) {
				cidr := netip.MustParsePrefix(getNode(ctx, pod.Spec.NodeName).Spec.PodCIDR)
				Expect(cidr.Contains(netip.MustParseAddr(pod.Status.PodIP))).To(BeTrue(),
					"pod %s IP %s in %s", pod.Name, pod.Status.PodIP, cidr)
			}
		}
	})

	It("takes a node NotReady when its CNI pod goes away, and back when it returns", func(ctx SpecContext) {
		const victim = "smoke-3"
		setNoCNI := func(on bool) {
			node := getNode(ctx, victim)
			patch := client.MergeFrom(node.DeepCopy())
			if on {
				node.Labels[noCNILabel] = "true"
			} else {
				delete(node.Labels, noCNILabel)
			}
			Expect(k.Patch(ctx, node, patch)).To(Succeed())
		}
		setNoCNI(true)
		Eventually(func(g Gomega) {
			node := getNode(ctx, victim)
			g.Expect(nodeCondition(node, corev1.NodeReady)).To(Equal(corev1.ConditionFalse))
			g.Expect(nodeCondition(node, corev1.NodeNetworkUnavailable)).To(Equal(corev1.ConditionTrue))
			g.Expect(hasTaint(node, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())
		for _, n := range nodeNames[:2] {
			Expect(nodeCondition(getNode(ctx, n), corev1.NodeReady)).To(Equal(corev1.ConditionTrue), n)
		}

		setNoCNI(false)
		Eventually(func(g Gomega) {
			node := getNode(ctx, victim)
			g.Expect(nodeCondition(node, corev1.NodeReady)).To(Equal(corev1.ConditionTrue))
			g.Expect(node.Spec.Taints).NotTo(ContainElement(HaveField("Key", corev1.TaintNodeNotReady)))
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
			g.Expect(d.Status.ReadyReplicas).To(BeEquivalentTo(2))
		}).WithContext(ctx).Should(Succeed())
	})

	It("initialises nodes only once a cloud controller manager pod is Ready", func(ctx SpecContext) {
		const cloudNode = "smoke-cloud"
		Expect(w.AddNode(ctx, world.NodeSpec{Name: cloudNode, Uninitialized: true})).To(Succeed())
		Expect(w.StartCloudSimulator(ctx, w, "kube-system", map[string]string{"app": "ccm"},
			func(n *corev1.Node) string { return "kubevirt://" + n.Name })).To(Succeed())

		Consistently(func(g Gomega) {
			node := getNode(ctx, cloudNode)
			g.Expect(node.Spec.ProviderID).To(BeEmpty())
			g.Expect(hasTaint(node, world.TaintUninitialized, corev1.TaintEffectNoSchedule)).To(BeTrue())
		}).WithContext(ctx).Should(Succeed())

		ccm := deployment("kube-system", "ccm", 1, podSpec("registry.example/ccm:v1", true, tolerateEverything), nil)
		Expect(k.Create(ctx, ccm)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, n := range append([]string{cloudNode}, nodeNames...) {
				node := getNode(ctx, n)
				g.Expect(node.Spec.ProviderID).To(Equal("kubevirt://"+n), n)
				g.Expect(hasTaint(node, world.TaintUninitialized, corev1.TaintEffectNoSchedule)).To(BeFalse(), n)
			}
		}).WithContext(ctx).Should(Succeed())
		ccmPods := listPods(ctx, "kube-system", map[string]string{"app": "ccm"})
		Expect(ccmPods).To(HaveLen(1))
		Expect(isPodReady(&ccmPods[0])).To(BeTrue())
	})

	It("installs a Helm chart from the registry with the real Flux controllers", func(ctx SpecContext) {
		installChartWithFlux(ctx, ns)
	}, NodeTimeout(4*time.Minute))
})
