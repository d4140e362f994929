// Package statuswritetest has what the tests of status writes share.
package statuswritetest

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Client is a fake client holding objs, with their status subresource, and
// a counter of the status writes made through it.
func Client(s *runtime.Scheme, objs ...client.Object) (client.Client, *int) {
	writes := new(int)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(objs...).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			*writes++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	return c, writes
}

// StaleRead is the scenario every status writer must pass: its object turns
// not Ready (written), then Ready again before the cache has seen that
// write. The write of Ready must reach the server although it equals the
// object read (stale); once the cache has caught up, nothing is written.
// get reads the object from the server; write writes the status wanted
// (Ready or not) computed from the object read.
func StaleRead[O conditions.Getter](t *testing.T, get func() O, write func(read O, ready bool), writes *int) {
	t.Helper()
	stale := get()
	write(stale, false)
	if *writes != 1 || conditions.IsReady(get()) {
		t.Fatalf("after turning not Ready: %d writes, Ready %v; want 1 write, not Ready", *writes, conditions.IsReady(get()))
	}
	write(stale, true)
	if *writes != 2 || !conditions.IsReady(get()) {
		t.Fatalf("Ready again, read from a cache that has not seen the last write: %d writes, Ready %v; want 2 writes, Ready", *writes, conditions.IsReady(get()))
	}
	write(get(), true)
	if *writes != 2 {
		t.Errorf("nothing new, read after the cache caught up: %d writes, want 2", *writes)
	}
}

// Reader reads obj as the server holds it now.
func Reader[O client.Object](t *testing.T, c client.Client, obj O) func() O {
	return func() O {
		got := obj.DeepCopyObject().(O)
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
}
