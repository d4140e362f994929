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
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
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
	// parsed is Manifest as objects, shared by every copy of this
	// revision's Release (see Objects).
	parsed *parsedManifest
}

type decodedRevision struct {
	id      string // the storage Secret's UID and resourceVersion
	release *Release
}

// parsedManifest holds a revision's objects once they are parsed: the
// bootstrap judges readiness from them on every reconcile, and parsing the
// YAML of a CNI's manifest each time was most of the operator's time between
// a workload turning Ready and its reaction to it.
type parsedManifest struct {
	mu   sync.Mutex
	objs []*unstructured.Unstructured
}

// Pending reports a revision whose operation never finished: the writer died
// holding Helm's lock.
func (r *Release) Pending() bool { return r != nil && r.Status.IsPending() }

// Client runs Helm actions against one cluster.
type Client struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper

	metadata metadata.Interface
	core     corev1client.CoreV1Interface

	mu      sync.Mutex
	actions map[string]*action.Configuration
	minor   string
	// known is each release's latest revision as last written or read for
	// certain; see history.
	known map[string]revision
	// decoded keeps what was read out of each release's latest revision's
	// Secret, with that Secret's UID and resourceVersion: a revision is
	// decoded (and its manifest parsed) once, not on every reconcile, and
	// only the latest is kept.
	decoded map[string]decodedRevision
	// written is each release's revision as our own install or upgrade
	// wrote it, taken for the Secret's content when the history next shows
	// that revision (see Observe) instead of reading back what we just sent.
	written map[string]*Release
}

// New returns a client for the cluster of cfg.
func New(cfg *rest.Config) (*Client, error) {
	dc, mapper, err := newDiscovery(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{config: cfg, discovery: dc, mapper: mapper, metadata: md, core: core,
		actions: map[string]*action.Configuration{}, decoded: map[string]decodedRevision{}, known: map[string]revision{},
		written: map[string]*Release{}}, nil
}

// Capabilities are a cluster's version and served APIs, as Helm renders
// against them.
type Capabilities = chartutil.Capabilities

// Capabilities reads what the cluster serves now, as Helm does before an
// install or upgrade: its version and every API version and kind. An
// aggregated API that does not answer leaves its group out, as in Helm.
func (c *Client) Capabilities() (*chartutil.Capabilities, error) {
	c.discovery.Invalidate()
	kv, err := c.discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the server version: %w", err)
	}
	vs, err := action.GetVersionSet(c.discovery)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the served APIs: %w", err)
	}
	return &chartutil.Capabilities{
		APIVersions: vs,
		KubeVersion: chartutil.KubeVersion{Version: kv.GitVersion, Major: kv.Major, Minor: kv.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
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

// rendering returns a configuration for one install or upgrade in ns, which
// renders and maps the chart's objects against the APIs the cluster serves
// now. Helm reads the capabilities once per configuration and keeps them, so
// a shared one would render every later upgrade against the APIs of the
// namespace's first install: a chart that adds objects once their API
// exists (a VolumeSnapshotClass) would never add them. The mapper is reset
// too: Helm's capability read refreshes the discovery cache, after which the
// mapper no longer retries a kind it does not know. Its release storage reads
// each history once (see actionStorage).
func (c *Client) rendering(ns string) (*action.Configuration, error) {
	cfg, err := c.configuration(ns)
	if err != nil {
		return nil, err
	}
	one := *cfg
	one.Capabilities = nil
	meta.MaybeResetRESTMapper(c.mapper)
	// Its own storage also keeps an upgrade's MaxHistory, which Helm sets
	// on the storage it is given, from leaking into the namespace's other
	// actions.
	one.Releases = newActionStorage(cfg.Releases.Driver)
	return &one, nil
}

// Observe returns the latest revision of a release, or nil when it has none.
// It lists only the metadata of the release's storage Secrets (status,
// version and our digest are labels; see history for where from) and
// decodes a revision's body only the first time it is seen: the body holds
// the whole chart, and most reconciles only need to know the release did
// not change.
func (c *Client) Observe(ctx context.Context, ns, name string) (*Release, error) {
	h, err := c.history(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	if h.latest == nil {
		return nil, nil
	}
	key, id := releaseKey(ns, name), string(h.latest.UID)+"/"+h.latest.ResourceVersion
	c.mu.Lock()
	d, ok := c.decoded[key]
	ok = ok && d.id == id
	cached := d.release
	if w := c.written[key]; !ok && w != nil && w.Revision == h.version && string(w.Status) == h.latest.Labels["status"] {
		cached, ok = w, true
		c.decoded[key] = decodedRevision{id: id, release: w}
		delete(c.written, key)
	}
	c.mu.Unlock()
	if !ok {
		cfg, err := c.configuration(ns)
		if err != nil {
			return nil, err
		}
		rel, err := cfg.Releases.Get(name, h.version)
		if err != nil {
			return nil, fmt.Errorf("reading %s/%s revision %d: %w", ns, name, h.version, err)
		}
		cached = toRelease(rel, false)
		c.mu.Lock()
		c.decoded[key] = decodedRevision{id: id, release: cached}
		c.mu.Unlock()
	}
	out := *cached
	out.Deployed = h.deployed
	return &out, nil
}

func toRelease(r *release.Release, deployed bool) *Release {
	out := &Release{Name: r.Name, Namespace: r.Namespace, Revision: r.Version, Manifest: r.Manifest,
		Deployed: deployed, parsed: &parsedManifest{}}
	if r.Info != nil {
		out.Status = r.Info.Status
		out.Deployed = deployed || r.Info.Status == release.StatusDeployed
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		out.ChartName, out.ChartVersion = r.Chart.Metadata.Name, r.Chart.Metadata.Version
	}
	out.Digest = r.Labels[DigestLabel]
	return out
}

// skipOpenAPIValidation turns off Helm's "OpenAPI validation" because, against
// any API server that supports server-side field validation (all since
// 1.27), it validates nothing: kubectl's validator downloads and parses the
// OpenAPI v3 document of each object's group-version on every manifest
// build only to learn that the server could validate, and then skips the
// client-side check, while Helm never sends the fieldValidation parameter
// to the server. What it does cost is the parse (megabytes of JSON for
// core/v1, per install and upgrade), the raw documents kept in the
// discovery cache, and a failure mode when /openapi/v3 is slow.
const skipOpenAPIValidation = true

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
	cfg, err := c.rendering(req.Namespace)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = req.Name, req.Namespace
	if err := c.ensureNamespace(ctx, req.Namespace); err != nil {
		return nil, err
	}
	in.Replace = true
	in.Labels = map[string]string{DigestLabel: req.Digest}
	in.DisableOpenAPIValidation = skipOpenAPIValidation
	ch, err := req.Chart.Load()
	if err != nil {
		return nil, err
	}
	rel, err := in.RunWithContext(ctx, ch, req.Values)
	return c.wrote(req.Namespace, req.Name, rel, err)
}

// ensureNamespace creates the release namespace as Helm's CreateNamespace
// does (labelled name=<namespace>, an existing one left alone), but not
// through Helm, which validates that one Namespace with kubectl's validator:
// a parse of the whole core/v1 OpenAPI document on every install, the
// largest CPU cost of an install here (see skipOpenAPIValidation).
func (c *Client) ensureNamespace(ctx context.Context, ns string) error {
	_, err := c.core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"name": ns}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// Upgrade moves a release with a deployed revision to the requested state.
func (c *Client) Upgrade(ctx context.Context, req Request) (*Release, error) {
	cfg, err := c.rendering(req.Namespace)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = req.Namespace
	up.MaxHistory = MaxHistory
	up.ResetValues = true
	up.Labels = map[string]string{DigestLabel: req.Digest}
	up.DisableOpenAPIValidation = skipOpenAPIValidation
	ch, err := req.Chart.Load()
	if err != nil {
		return nil, err
	}
	rel, err := up.RunWithContext(ctx, req.Name, ch, req.Values)
	return c.wrote(req.Namespace, req.Name, rel, err)
}

func result(rel *release.Release, err error) (*Release, error) {
	if rel == nil && err == nil {
		return nil, nil
	}
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

// ErrForeignLock is returned by Unlock for a pending revision that this
// operator did not write.
var ErrForeignLock = errors.New("locked by another writer")

// Unlock ends the lock a dead writer of this operator left: its pending
// revision is marked failed, as helm-controller does, so the next install
// or upgrade supersedes it and the history says what happened. Only the
// leader calls this, so no live writer of ours holds the lock. A pending
// revision without our digest label was written by somebody else (a person
// running helm, the management side's helm-controller during a
// migration), who may still be at work: it is left alone.
func (c *Client) Unlock(r *Release) error {
	if !r.Pending() {
		return nil
	}
	if r.Digest == "" {
		return fmt.Errorf("%w: %s/%s revision %d is %s and was not written by the tenant operator; it is left to its writer: "+
			"let that operation finish or roll it back (helm rollback), and the operator carries on from there",
			ErrForeignLock, r.Namespace, r.Name, r.Revision, r.Status)
	}
	cfg, err := c.configuration(r.Namespace)
	if err != nil {
		return err
	}
	defer c.forget(r.Namespace, r.Name)
	rel, err := cfg.Releases.Get(r.Name, r.Revision)
	if err != nil {
		return fmt.Errorf("reading stale %s revision %d of %s/%s: %w", r.Status, r.Revision, r.Namespace, r.Name, err)
	}
	rel.SetStatus(release.StatusFailed, fmt.Sprintf("Release unlocked by the tenant operator: its %s was interrupted (the writer is gone)", r.Status))
	if err := cfg.Releases.Update(rel); err != nil {
		return fmt.Errorf("marking stale %s revision %d of %s/%s failed: %w", r.Status, r.Revision, r.Namespace, r.Name, err)
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
// the cache. A revision is parsed once and its objects shared by every
// caller: they must not be modified (copy them first).
func (c *Client) Objects(r *Release) ([]*unstructured.Unstructured, error) {
	if r.parsed == nil {
		objs, _, err := c.parse(r)
		return objs, err
	}
	r.parsed.mu.Lock()
	defer r.parsed.mu.Unlock()
	if r.parsed.objs != nil {
		return r.parsed.objs, nil
	}
	objs, complete, err := c.parse(r)
	if err == nil && complete {
		r.parsed.objs = objs
	}
	return objs, err
}

// parse is Objects without the sharing. It is not complete when the scope
// of some kind could not be looked up (a CRD not discovered yet): that
// object then has no namespace, and the result must not be kept.
func (c *Client) parse(r *Release) ([]*unstructured.Unstructured, bool, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(r.Manifest)), 4096)
	out := []*unstructured.Unstructured{}
	complete := true
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, complete, nil
			}
			return nil, false, fmt.Errorf("parsing manifest of %s/%s: %w", r.Namespace, r.Name, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetNamespace() == "" {
			namespaced, err := c.namespaced(u)
			complete = complete && err == nil
			if err == nil && namespaced {
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

// Uninstall removes a release and its objects; a release that does not
// exist is not an error.
func (c *Client) Uninstall(ns, name string) error {
	cfg, err := c.configuration(ns)
	if err != nil {
		return err
	}
	defer c.forget(ns, name)
	un := action.NewUninstall(cfg)
	un.IgnoreNotFound = true
	if _, err := un.Run(name); err != nil {
		return fmt.Errorf("uninstalling %s/%s: %w", ns, name, err)
	}
	return nil
}
