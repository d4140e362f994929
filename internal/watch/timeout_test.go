package watch

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestLongWatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout *int64
		wantSet bool
	}{
		{name: "the reflector's 5-10 minutes become 30-60", timeout: ptr.To[int64](347), wantSet: true},
		{name: "no timeout stays the server's to choose", timeout: nil, wantSet: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 100 {
				var sent metav1.ListOptions
				lw := &toolscache.ListWatch{WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
					sent = o
					return apiwatch.NewEmptyWatch(), nil
				}}
				opts := metav1.ListOptions{ResourceVersion: "42", TimeoutSeconds: tc.timeout}
				if _, err := (longWatches{toolscache.ToListerWatcherWithContext(lw)}).Watch(opts); err != nil {
					t.Fatal(err)
				}
				if sent.ResourceVersion != "42" {
					t.Fatalf("resourceVersion %q was not passed through", sent.ResourceVersion)
				}
				if !tc.wantSet {
					if sent.TimeoutSeconds != nil {
						t.Fatalf("timeout set to %d", *sent.TimeoutSeconds)
					}
					continue
				}
				got := time.Duration(*sent.TimeoutSeconds) * time.Second
				if got < MinWatchTimeout || got >= MaxWatchTimeout {
					t.Fatalf("timeout %s outside [%s, %s)", got, MinWatchTimeout, MaxWatchTimeout)
				}
			}
		})
	}
}
