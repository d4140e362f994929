// Package helm owns every Helm SDK call of the operator: building charts out
// of the packages tree, pulling charts from Helm repositories, and the
// release actions. Reconcile code decides; this package only does.
package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// DigestLabel is stored on every release revision we write: the digest of
// the chart and the effective values. Equal digests mean nothing to do, which
// is how a restart produces no new revision.
const DigestLabel = "tenant.cozystack.io/digest"

// MaxHistory bounds the release Secrets kept per component.
const MaxHistory = 5

// ErrValuesRejected means the chart refused the values (schema or render).
var ErrValuesRejected = errors.New("values rejected by the chart")

// Release is the observed state of a Helm release.
type Release struct {
	Name, Namespace string
	Revision        int
	Status          release.Status
	Digest          string
	ChartName       string
	ChartVersion    string
	Manifest        string
	// Deployed is true when some revision of the history is deployed, which
	// decides between upgrade and (re)install after a failure.
	Deployed bool
}

// Pending reports a revision whose operation never finished: the writer died
// holding Helm's lock.
func (r *Release) Pending() bool { return r != nil && r.Status.IsPending() }

// Client runs Helm actions against one cluster.
type Client struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper

	mu      sync.Mutex
	actions map[string]*action.Configuration
	minor   string
}

// New returns a client for the cluster of cfg.
func New(cfg *rest.Config) (*Client, error) {
	dc, mapper, err := newDiscovery(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{config: cfg, discovery: dc, mapper: mapper, actions: map[string]*action.Configuration{}}, nil
}

// configuration returns the action configuration whose storage lives in ns.
func (c *Client) configuration(ns string) (*action.Configuration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg, ok := c.actions[ns]; ok {
		return cfg, nil
	}
	cfg := new(action.Configuration)
	getter := newRESTGetter(c.config, ns, c.discovery, c.mapper)
	if err := cfg.Init(getter, ns, "secret", func(string, ...any) {}); err != nil {
		return nil, err
	}
	c.actions[ns] = cfg
	return cfg, nil
}

// Observe returns the latest revision of a release, or nil when it has none.
func (c *Client) Observe(ns, name string) (*Release, error) {
	cfg, err := c.configuration(ns)
	if err != nil {
		return nil, err
	}
	hist, err := cfg.Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) || (err == nil && len(hist) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading history of %s/%s: %w", ns, name, err)
	}
	latest, deployed := hist[0], false
	for _, r := range hist {
		if r.Version > latest.Version {
			latest = r
		}
		deployed = deployed || r.Info.Status == release.StatusDeployed
	}
	return toRelease(latest, deployed), nil
}

func toRelease(r *release.Release, deployed bool) *Release {
	out := &Release{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Manifest: r.Manifest,
		Deployed: deployed || r.Info.Status == release.StatusDeployed}
	if r.Info != nil {
		out.Status = r.Info.Status
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		out.ChartName, out.ChartVersion = r.Chart.Metadata.Name, r.Chart.Metadata.Version
	}
	out.Digest = r.Labels[DigestLabel]
	return out
}

// Request is what an install or upgrade needs.
type Request struct {
	Namespace, Name string
	Chart           *Chart
	Values          map[string]any
	Digest          string
}

// Install installs a release. Replace lets it supersede a history that
// holds only failed revisions, so a failed first install is retried in place
// rather than uninstalled: a bootstrap component is never removed.
func (c *Client) Install(ctx context.Context, req Request) (*Release, error) {
	cfg, err := c.configuration(req.Namespace)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = req.Name, req.Namespace
	in.CreateNamespace = true
	in.Replace = true
	in.Labels = map[string]string{DigestLabel: req.Digest}
	ch, err := req.Chart.Load()
	if err != nil {
		return nil, err
	}
	rel, err := in.RunWithContext(ctx, ch, req.Values)
	return result(rel, err)
}

// Upgrade moves a release with a deployed revision to the requested state.
func (c *Client) Upgrade(ctx context.Context, req Request) (*Release, error) {
	cfg, err := c.configuration(req.Namespace)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = req.Namespace
	up.MaxHistory = MaxHistory
	up.ResetValues = true
	up.Labels = map[string]string{DigestLabel: req.Digest}
	ch, err := req.Chart.Load()
	if err != nil {
		return nil, err
	}
	rel, err := up.RunWithContext(ctx, req.Name, ch, req.Values)
	return result(rel, err)
}

func result(rel *release.Release, err error) (*Release, error) {
	if err != nil {
		if isValuesError(err) {
			return nil, fmt.Errorf("%w: %v", ErrValuesRejected, err)
		}
		if rel != nil {
			return toRelease(rel, false), err
		}
		return nil, err
	}
	return toRelease(rel, true), nil
}

// isValuesError recognises Helm's schema and template errors, which no retry
// can fix: only new values or a new chart can.
func isValuesError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "values don't meet the specifications of the schema") ||
		strings.Contains(msg, "execution error at") ||
		strings.Contains(msg, "parse error at")
}

// Unlock deletes the revision a dead writer left pending. That revision is a
// lock, not history: its operation never finished, so nothing may depend on
// it. The objects it created carry Helm's ownership annotations and are
// adopted by the install or upgrade that follows, which leaves no failed or
// pending revision behind. Only the leader calls this, so no live writer can
// hold the lock.
func (c *Client) Unlock(r *Release) error {
	if !r.Pending() {
		return nil
	}
	cfg, err := c.configuration(r.Namespace)
	if err != nil {
		return err
	}
	if _, err := cfg.Releases.Delete(r.Name, r.Revision); err != nil {
		return fmt.Errorf("removing stale %s revision %d of %s/%s: %w", r.Status, r.Revision, r.Namespace, r.Name, err)
	}
	return nil
}

// ManagedByLabel is the label Helm puts on every object it creates; the
// operator's cache watches workloads by it.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// Objects parses a release manifest into objects, defaulting the namespace
// of namespaced ones to the release namespace and stamping the ownership
// metadata Helm stamps at install time (it is not in the stored manifest).
// An object restored from these is therefore still Helm's and still seen by
// the cache.
func (c *Client) Objects(r *Release) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(r.Manifest)), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("parsing manifest of %s/%s: %w", r.Namespace, r.Name, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetNamespace() == "" {
			if namespaced, err := c.namespaced(u); err == nil && namespaced {
				u.SetNamespace(r.Namespace)
			}
		}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ManagedByLabel] = "Helm"
		u.SetLabels(labels)
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"] = r.Name, r.Namespace
		u.SetAnnotations(ann)
		out = append(out, u)
	}
}

func (c *Client) namespaced(u *unstructured.Unstructured) (bool, error) {
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}
