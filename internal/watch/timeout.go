package watch

import (
	"context"
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Watch timeouts of the operator's informers. client-go's reflector ends
// each watch after a random 5-10 minutes and opens a new one: one request
// per informer every 7.5 minutes on average, which for the ten informers
// of an idle operator with the full bundle (1.3 a minute) is more than the
// whole idle budget of one request a minute besides the Lease. 30-60 minutes is the API server's own range
// for a watch that names no timeout (--min-request-timeout=1800). A longer
// watch loses nothing: the server sends bookmarks on it every minute, so a
// new watch resumes from a recent resourceVersion, and client-go's HTTP/2
// health check (a ping after 30 s without a frame) notices a dead
// connection without waiting for the timeout.
const (
	MinWatchTimeout = 30 * time.Minute
	MaxWatchTimeout = 60 * time.Minute
)

// NewInformer is a cache.Options.NewInformer: client-go's informer whose
// watches ask for a timeout between MinWatchTimeout and MaxWatchTimeout.
// The reflector has such a setting, but neither client-go's shared informer
// nor controller-runtime passes it through.
func NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(longWatches{toolscache.ToListerWatcherWithContext(lw)}, obj, resync, indexers)
}

type longWatches struct {
	toolscache.ListerWatcherWithContext
}

func (l longWatches) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	return l.ListerWatcherWithContext.WatchWithContext(ctx, longer(opts))
}

func (l longWatches) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l longWatches) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// longer replaces a timeout the reflector chose; a watch that asks for none
// is left to the server, which applies the same range.
func longer(opts metav1.ListOptions) metav1.ListOptions {
	if opts.TimeoutSeconds == nil {
		return opts
	}
	span := MaxWatchTimeout - MinWatchTimeout
	t := int64((MinWatchTimeout + rand.N(span)).Seconds())
	opts.TimeoutSeconds = &t
	return opts
}
