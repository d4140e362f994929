package readiness

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// deployment is a Deployment at generation gen whose controller has seen
// observed; rolled out when both are equal.
func deployment(uid types.UID, gen, observed int64) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns", UID: uid, Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: observed, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}},
		},
	}
}

// counting counts the reads that reach it.
type counting struct {
	client.Reader
	reads int
}

func (c *counting) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func TestCheckerAfterOwnWrite(t *testing.T) {
	manifest := []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "kube-system", "name": "coredns"},
	}}}
	type read struct {
		live       bool
		cached     *appsv1.Deployment // what the cache holds at this read
		ready      bool
		liveReads  int // reads that reached the API server, cumulative
		liveObject *appsv1.Deployment
	}
	rolledOut, upgraded, upgradedDone := deployment("a", 1, 1), deployment("a", 2, 1), deployment("a", 2, 2)
	recreated, recreatedNew := deployment("b", 1, 1), deployment("b", 1, 1)
	recreatedNew.Status = appsv1.DeploymentStatus{ObservedGeneration: 1} // no pod yet
	tests := []struct {
		name  string
		reads []read
	}{
		{"no write of ours: the cache alone decides", []read{
			{cached: rolledOut, liveObject: upgraded, ready: true, liveReads: 0},
		}},
		{"upgrade: the cache still holds the previous, rolled-out generation", []read{
			{live: true, cached: rolledOut, liveObject: upgraded, ready: false, liveReads: 1},
			{cached: rolledOut, liveObject: upgraded, ready: false, liveReads: 2},
			{cached: upgraded, liveObject: upgradedDone, ready: false, liveReads: 2},
			{cached: upgradedDone, liveObject: upgradedDone, ready: true, liveReads: 2},
		}},
		{"the cache caught up: the floor is dropped", []read{
			{live: true, cached: rolledOut, liveObject: upgradedDone, ready: true, liveReads: 1},
			{cached: upgradedDone, liveObject: upgradedDone, ready: true, liveReads: 1},
			{cached: upgradedDone, liveObject: upgradedDone, ready: true, liveReads: 1},
		}},
		{"recreated: the cache still holds the deleted object", []read{
			{live: true, cached: rolledOut, liveObject: recreatedNew, ready: false, liveReads: 1},
			{cached: rolledOut, liveObject: recreated, ready: true, liveReads: 2},
			{cached: recreated, liveObject: recreated, ready: true, liveReads: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := &counting{}
			c := &Checker{Live: live}
			for i, r := range tt.reads {
				c.Reader = fake.NewClientBuilder().WithObjects(r.cached.DeepCopy()).Build()
				live.Reader = fake.NewClientBuilder().WithObjects(r.liveObject.DeepCopy()).Build()
				check := c.Check
				if r.live {
					check = c.CheckLive
				}
				res, err := check(context.Background(), manifest)
				if err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
				if res.Ready != r.ready || live.reads != r.liveReads {
					t.Fatalf("read %d: ready %v (%s), %d live reads; want ready %v, %d live reads", i, res.Ready, res.Message, live.reads, r.ready, r.liveReads)
				}
			}
		})
	}
}
