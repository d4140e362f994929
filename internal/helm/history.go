package helm

import (
	"context"
	"fmt"
	"strconv"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// revision is what identifies the state of a release's history: its latest
// revision's number and status (0 and "" for no history).
type revision struct {
	version int
	status  string
}

// releaseHistory is what the storage Secrets' metadata says of a release.
type releaseHistory struct {
	latest   *metav1.PartialObjectMetadata
	version  int
	deployed bool
}

func (h releaseHistory) revision() revision {
	if h.latest == nil {
		return revision{}
	}
	return revision{version: h.version, status: h.latest.Labels["status"]}
}

// history lists the release's storage Secrets from the API server's watch
// cache (resourceVersion "0") and only falls back to a consistent list when
// that answer differs from what this client last knew for certain: the
// revision it wrote itself, or the one a consistent list returned. A
// consistent list of Secrets waits for the watch cache to catch up with
// etcd's latest revision, which every pod and node write moves on; while a
// bootstrap rolls out that wait was 50–90 ms per release and reconcile,
// on the critical path. The fallback keeps the answer exact where it
// matters: right after our own write, a cache that has not seen it yet
// disagrees and is not believed; anyone else's write is believed once a
// consistent list has confirmed it.
func (c *Client) history(ctx context.Context, ns, name string) (releaseHistory, error) {
	key := releaseKey(ns, name)
	c.mu.Lock()
	known, ok := c.known[key]
	c.mu.Unlock()
	if ok {
		h, err := c.listHistory(ctx, ns, name, "0")
		if err != nil || h.revision() == known {
			return h, err
		}
	} else {
		// A release never seen before is believed absent on the cache's
		// word, without recording it as known: the only thing "absent"
		// leads to is an install, and Helm's install lists the history
		// consistently itself and refuses a name still in use, which makes
		// the next read a consistent one. Confirming it here as well cost
		// the install ~90 ms: two consistent lists of Secrets within
		// 100 ms, and the API server requests the progress notification
		// the second one waits for at most every 100 ms.
		h, err := c.listHistory(ctx, ns, name, "0")
		if err != nil || h.latest == nil {
			return h, err
		}
	}
	h, err := c.listHistory(ctx, ns, name, "")
	if err != nil {
		return h, err
	}
	c.mu.Lock()
	c.known[key] = h.revision()
	c.mu.Unlock()
	return h, nil
}

func (c *Client) listHistory(ctx context.Context, ns, name, resourceVersion string) (releaseHistory, error) {
	list, err := c.metadata.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(ns).List(ctx,
		metav1.ListOptions{LabelSelector: "owner=helm,name=" + name, ResourceVersion: resourceVersion})
	if err != nil {
		return releaseHistory{}, fmt.Errorf("reading history of %s/%s: %w", ns, name, err)
	}
	h := releaseHistory{version: -1}
	for i := range list.Items {
		m := &list.Items[i]
		v, err := strconv.Atoi(m.Labels["version"])
		if err != nil {
			continue
		}
		h.deployed = h.deployed || m.Labels["status"] == string(release.StatusDeployed)
		if v > h.version {
			h.latest, h.version = m, v
		}
	}
	return h, nil
}

// wrote records the revision a write of ours left, so the next history read
// does not believe a cache that has not seen it, and keeps what it wrote for
// Observe. After a failed write nothing is known until a consistent list
// says so. It returns the install's or upgrade's result.
func (c *Client) wrote(ns, name string, rel *release.Release, err error) (*Release, error) {
	if err != nil || rel == nil || rel.Info == nil {
		c.forget(ns, name)
		return result(rel, err)
	}
	out, err := result(rel, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	key := releaseKey(ns, name)
	c.known[key] = revision{version: rel.Version, status: string(rel.Info.Status)}
	kept := *out
	c.written[key] = &kept
	return out, err
}

// forget drops what this client knew of a release's history, after a write
// that failed or removed revisions.
func (c *Client) forget(ns, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.known, releaseKey(ns, name))
	delete(c.written, releaseKey(ns, name))
}

func releaseKey(ns, name string) string { return ns + "/" + name }
