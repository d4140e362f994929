// Package apply is the one server-side-apply engine of the operator: CRDs at
// start, drift correction of rendered releases and the Flux manifests all go
// through it, so field ownership stays under one manager name.
package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the field manager of everything the operator applies.
const FieldOwner = "tenant-operator"

// Engine applies sets of objects with server-side apply.
type Engine struct {
	rm      *ssa.ResourceManager
	c       client.Client
	manager string
}

// New builds an engine on a client that must not read from a cache: the
// dry-run diff has to see the live object.
func New(c client.Client) *Engine { return NewFor(c, FieldOwner) }

// NewFor builds an engine that applies as another field manager: the
// management side's seed and the tenant admin's CLI own their fields under
// their own names, which is what decides who wins (see seed.Precedence).
func NewFor(c client.Client, manager string) *Engine {
	poller := polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{})
	rm := ssa.NewResourceManager(c, poller, ssa.Owner{Field: manager, Group: "tenant.cozystack.io"})
	rm.SetConcurrency(concurrency)
	return &Engine{rm: rm, c: c, manager: manager}
}

// concurrency is how many objects of one stage are diffed and applied at
// once. Each costs a GET, a dry-run and maybe an apply; one at a time, the
// operator's CRDs at start were nine round trips in a row before anything
// else could begin.
const concurrency = 4

// As is the same engine applying as another field manager.
func (e *Engine) As(manager string) *Engine { return NewFor(e.c, manager) }

// Release gives up every field this engine's manager owns on the object
// named by obj (type and name only): fields no other manager owns are
// removed. Never skipped by a dry-run diff, because giving up a field that
// another manager co-owns changes nothing visible but still matters.
func (e *Engine) Release(ctx context.Context, obj client.Object) error {
	bare := &unstructured.Unstructured{}
	bare.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	bare.SetName(obj.GetName())
	bare.SetNamespace(obj.GetNamespace())
	return e.c.Patch(ctx, bare, client.Apply, client.FieldOwner(e.manager), client.ForceOwnership)
}

// CreateOnlyAnnotation, set to CreateOnly on an object given to the engine,
// makes the engine create the object when it is absent and never patch it
// after that. It is kustomize-controller's annotation for the same rule, so
// a Flux Kustomization applying our exported manifests honours it too. The
// seed marks the operator's CRDs with it: the seed creates them so that the
// TenantBundle can be applied at once, but from then on they follow the
// operator's version, which re-applies them at every start; a seeder of
// another version must never patch them back.
const (
	CreateOnlyAnnotation = "kustomize.toolkit.fluxcd.io/ssa"
	CreateOnly           = "IfNotPresent"
)

func applyOptions() ssa.ApplyOptions {
	opts := ssa.DefaultApplyOptions()
	opts.IfNotPresentSelector = map[string]string{CreateOnlyAnnotation: CreateOnly}
	return opts
}

// ApplyStaged applies definitions (CRDs, Namespaces) first and waits until
// they are established, then everything else. Used where later objects need
// the earlier ones, e.g. CRDs before the controller that serves them starts.
func (e *Engine) ApplyStaged(ctx context.Context, objs []*unstructured.Unstructured, timeout time.Duration) (*ssa.ChangeSet, error) {
	opts := applyOptions()
	opts.WaitTimeout = timeout
	opts.WaitInterval = waitPoll
	cs, err := e.rm.ApplyAllStaged(ctx, objs, opts)
	if err != nil {
		return cs, fmt.Errorf("server-side apply: %w", err)
	}
	return cs, nil
}

// Correct re-applies objects that drifted from what they should be. Objects
// whose dry-run apply shows no change are skipped, so an in-sync set costs one
// dry-run request per object and no write. Immutable-field conflicts are
// resolved by recreating the object, as a controller restoring state must.
func (e *Engine) Correct(ctx context.Context, objs []*unstructured.Unstructured) (*ssa.ChangeSet, error) {
	opts := applyOptions()
	opts.Force = true
	cs, err := e.rm.ApplyAll(ctx, objs, opts)
	if err != nil {
		return cs, fmt.Errorf("server-side apply: %w", err)
	}
	return cs, nil
}

// ApplyObjects applies typed objects, TypeMeta set, like Correct.
func (e *Engine) ApplyObjects(ctx context.Context, objs ...client.Object) (*ssa.ChangeSet, error) {
	us := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		us = append(us, u)
	}
	return e.Correct(ctx, us)
}

// ToUnstructured converts a typed object for applying, without the empty
// status and null timestamps the converter writes: applied, they would
// make the operator claim fields it has no opinion on.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	return &unstructured.Unstructured{Object: m}, nil
}

// StatusPatch is obj reduced to what a server-side apply of its status
// sends: type, name, namespace and status. Status lists that are maps
// keyed by type (conditions) let several managers each own their entries.
func StatusPatch(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": m["apiVersion"], "kind": m["kind"], "status": m["status"],
	}}
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	return u, nil
}

// ConditionPatch is the server-side apply body that sets one condition of
// obj's status and nothing else: with conditions a map keyed by type, the
// manager that applies it owns exactly that entry.
func ConditionPatch(obj client.Object, gvk schema.GroupVersionKind, c metav1.Condition) (*unstructured.Unstructured, error) {
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{cond}}}}
	u.SetGroupVersionKind(gvk)
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	return u, nil
}

// ApplyCondition sets one condition of obj's status (see ConditionPatch)
// with server-side apply as owner, and returns the condition as the API
// server stored it.
func ApplyCondition(ctx context.Context, c client.StatusClient, obj client.Object, gvk schema.GroupVersionKind, cond metav1.Condition, owner string) (*metav1.Condition, error) {
	u, err := ConditionPatch(obj, gvk, cond)
	if err != nil {
		return nil, err
	}
	if err := c.Status().Patch(ctx, u, client.Apply, client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return nil, err
	}
	return storedCondition(u, cond.Type)
}

// storedCondition is the condition of type typ in the object the API
// server answered a status patch with (u, after the patch): as stored, with
// its times to the second, which is how the cache will return it.
func storedCondition(u *unstructured.Unstructured, typ string) (*metav1.Condition, error) {
	conds, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return nil, err
	}
	for _, raw := range conds {
		m, ok := raw.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		c := &metav1.Condition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, c); err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, fmt.Errorf("the API server's answer has no %s condition", typ)
}

// waitPoll is how often a staged apply (the seed's, on the management side)
// re-reads what it waits for, and how often a new resource's watch is
// probed (see waitServed): one is ready within tens of milliseconds, and
// what follows waits on it, so a coarse poll would sit on the critical path.
const waitPoll = 25 * time.Millisecond
