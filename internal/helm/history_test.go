package helm

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// historyAPI answers lists of release Secrets from two places, as the API
// server does: its watch cache (resourceVersion "0") and etcd (consistent).
type historyAPI struct {
	metadata.ResourceInterface
	cache, etcd []metav1.PartialObjectMetadata
	consistent  int
}

func (h *historyAPI) Resource(schema.GroupVersionResource) metadata.Getter { return h }
func (h *historyAPI) Namespace(string) metadata.ResourceInterface          { return h }

func (h *historyAPI) List(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	if opts.ResourceVersion == "0" {
		return &metav1.PartialObjectMetadataList{Items: h.cache}, nil
	}
	h.consistent++
	return &metav1.PartialObjectMetadataList{Items: h.etcd}, nil
}

func revisions(rs ...revision) []metav1.PartialObjectMetadata {
	var out []metav1.PartialObjectMetadata
	for _, r := range rs {
		out = append(out, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name:   "sh.helm.release.v1.cilium.v" + strconv.Itoa(r.version),
			Labels: map[string]string{"owner": "helm", "name": "cilium", "version": strconv.Itoa(r.version), "status": r.status}}})
	}
	return out
}

func TestHistoryTrustsTheWatchCacheOnlyWhereItAgrees(t *testing.T) {
	v1 := revision{1, "deployed"}
	v2 := revision{2, "deployed"}
	v2pending := revision{2, "pending-upgrade"}
	wrote := func(r revision, err error) func(*Client) {
		return func(c *Client) {
			c.wrote("cozy-cilium", "cilium", &release.Release{Version: r.version, Info: &release.Info{Status: release.Status(r.status)}}, err)
		}
	}
	uninstalled := func(c *Client) { c.forget("cozy-cilium", "cilium") }
	cases := []struct {
		name       string
		known      *revision // what the client knows before the read; nil: nothing
		write      func(c *Client)
		cache      []revision
		etcd       []revision
		want       revision
		consistent int
		// then is how many consistent lists the next read makes once the
		// cache has caught up: 0 when what was read is known for certain.
		then int
	}{
		{name: "nothing known yet: consistent", cache: []revision{v1}, etcd: []revision{v1}, want: v1, consistent: 1},
		{name: "nothing known, no history: absent on the cache's word", want: revision{}},
		{name: "nothing known, a stale cache shows none: absent, and not known", etcd: []revision{v1}, want: revision{}, then: 1},
		{name: "cache agrees with what was read: no consistent list", known: &v1, cache: []revision{v1}, etcd: []revision{v1}, want: v1},
		{name: "our upgrade not in the cache yet", known: &v1, write: wrote(v2, nil), cache: []revision{v1}, etcd: []revision{v1, v2}, want: v2, consistent: 1},
		{name: "cache still shows our upgrade pending", known: &v1, write: wrote(v2, nil), cache: []revision{v1, v2pending}, etcd: []revision{v1, v2}, want: v2, consistent: 1},
		{name: "cache has our upgrade", known: &v1, write: wrote(v2, nil), cache: []revision{v1, v2}, etcd: []revision{v1, v2}, want: v2},
		{name: "someone else's revision is confirmed", known: &v1, cache: []revision{v1, v2}, etcd: []revision{v1, v2}, want: v2, consistent: 1},
		{name: "a failed write forgets", known: &v1, write: wrote(v2, errors.New("timed out")), cache: []revision{v1, v2}, etcd: []revision{v1, v2}, want: v2, consistent: 1},
		{name: "uninstalled: the cache is not believed until confirmed", known: &v1, write: uninstalled, cache: []revision{v1}, etcd: nil, want: revision{}, consistent: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &historyAPI{cache: revisions(tc.cache...), etcd: revisions(tc.etcd...)}
			c := &Client{metadata: api, known: map[string]revision{}, written: map[string]*Release{}}
			if tc.known != nil {
				c.known["cozy-cilium/cilium"] = *tc.known
			}
			if tc.write != nil {
				tc.write(c)
			}
			h, err := c.history(context.Background(), "cozy-cilium", "cilium")
			if err != nil {
				t.Fatal(err)
			}
			if got := h.revision(); got != tc.want {
				t.Errorf("latest = %+v, want %+v", got, tc.want)
			}
			if api.consistent != tc.consistent {
				t.Errorf("consistent lists = %d, want %d", api.consistent, tc.consistent)
			}
			// Whatever was read for certain is now known: the next read
			// agrees with the cache once the cache has caught up, and lists
			// nothing more. An absence believed on the cache's word is not
			// known: a revision appearing later is confirmed.
			api.cache, api.consistent = api.etcd, 0
			if _, err := c.history(context.Background(), "cozy-cilium", "cilium"); err != nil {
				t.Fatal(err)
			}
			if api.consistent != tc.then {
				t.Errorf("next read made %d consistent lists, want %d", api.consistent, tc.then)
			}
		})
	}
}
