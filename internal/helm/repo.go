package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"sigs.k8s.io/yaml"
)

// HelmChartLayerMediaType is the layer of a chart pushed to an OCI registry.
const HelmChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// RepoChart names a chart in an ordinary Helm repository: an HTTP(S)
// repository with an index.yaml, or an OCI registry.
type RepoChart struct {
	Repo    string // https://… or oci://…
	Name    string
	Version string // exact version or a semver constraint such as 2.37.x
	// Fallback is a second constraint, tried only when no version matches
	// Version; Chart.Note then says so.
	Fallback string
	// Insecure allows plain HTTP.
	Insecure bool
}

// ErrChartNotFound means no version of the chart matches.
var ErrChartNotFound = errors.New("chart not found")

// PullRepoChart resolves the version constraint, downloads the chart and
// verifies its digest.
func PullRepoChart(ctx context.Context, rc RepoChart) (*Chart, error) {
	var (
		archive []byte
		digest  string
		note    string
		err     error
	)
	switch {
	case strings.HasPrefix(rc.Repo, "oci://"):
		archive, digest, note, err = pullOCI(ctx, rc)
	case strings.HasPrefix(rc.Repo, "https://"), rc.Insecure && strings.HasPrefix(rc.Repo, "http://"):
		archive, digest, note, err = pullHTTP(ctx, rc)
	default:
		err = fmt.Errorf("%w: repository %q must be https:// or oci:// (plain http only when insecure)", ErrChartInvalid, rc.Repo)
	}
	if err != nil {
		return nil, err
	}
	load := func() (*chart.Chart, error) {
		ch, err := loader.LoadArchive(bytes.NewReader(archive))
		if err != nil {
			return nil, fmt.Errorf("%w: %s/%s: %v", ErrChartInvalid, rc.Repo, rc.Name, err)
		}
		if err := checkDependencies(ch); err != nil {
			return nil, fmt.Errorf("%w: %s/%s: %v", ErrChartInvalid, rc.Repo, rc.Name, err)
		}
		return ch, nil
	}
	ch, err := load()
	if err != nil {
		return nil, err
	}
	return &Chart{Digest: digest, Version: ch.Metadata.Version, Note: note, load: load}, nil
}

func pullOCI(ctx context.Context, rc RepoChart) (archive []byte, digest, note string, err error) {
	r, err := remote.NewRepository(strings.TrimPrefix(rc.Repo, "oci://") + "/" + rc.Name)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", ErrChartInvalid, err)
	}
	r.PlainHTTP = rc.Insecure
	var tags []string
	if err := r.Tags(ctx, "", func(t []string) error { tags = append(tags, t...); return nil }); err != nil {
		return nil, "", "", fmt.Errorf("listing versions of %s/%s: %w", rc.Repo, rc.Name, err)
	}
	// OCI tags cannot hold "+", so Helm pushes build metadata with "_".
	var versions []string
	for _, t := range tags {
		versions = append(versions, strings.ReplaceAll(t, "_", "+"))
	}
	version, note, err := bestVersion(rc, versions)
	if err != nil {
		return nil, "", "", err
	}
	desc, err := r.Resolve(ctx, strings.ReplaceAll(version, "+", "_"))
	if err != nil {
		return nil, "", "", err
	}
	raw, err := content.FetchAll(ctx, r, desc)
	if err != nil {
		return nil, "", "", err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", "", fmt.Errorf("%w: manifest of %s/%s: %v", ErrChartInvalid, rc.Repo, rc.Name, err)
	}
	for _, l := range m.Layers {
		if l.MediaType == HelmChartLayerMediaType {
			archive, err := content.FetchAll(ctx, r, l) // verifies the digest
			return archive, l.Digest.String(), note, err
		}
	}
	return nil, "", "", fmt.Errorf("%w: %s/%s:%s has no chart layer", ErrChartInvalid, rc.Repo, rc.Name, version)
}

func pullHTTP(ctx context.Context, rc RepoChart) (archive []byte, digest, note string, err error) {
	base, err := url.Parse(strings.TrimSuffix(rc.Repo, "/") + "/")
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %v", ErrChartInvalid, err)
	}
	raw, err := get(ctx, base.ResolveReference(&url.URL{Path: "index.yaml"}).String())
	if err != nil {
		return nil, "", "", err
	}
	idx := &repo.IndexFile{}
	if err := yaml.Unmarshal(raw, idx); err != nil {
		return nil, "", "", fmt.Errorf("%w: index of %s: %v", ErrChartInvalid, rc.Repo, err)
	}
	var versions []string
	for _, cv := range idx.Entries[rc.Name] {
		versions = append(versions, cv.Version)
	}
	version, note, err := bestVersion(rc, versions)
	if err != nil {
		return nil, "", "", err
	}
	for _, cv := range idx.Entries[rc.Name] {
		if cv.Version != version || len(cv.URLs) == 0 {
			continue
		}
		u, err := base.Parse(cv.URLs[0])
		if err != nil {
			return nil, "", "", fmt.Errorf("%w: %v", ErrChartInvalid, err)
		}
		archive, err = get(ctx, u.String())
		if err != nil {
			return nil, "", "", err
		}
		sum := sha256.Sum256(archive)
		got := hex.EncodeToString(sum[:])
		if cv.Digest != "" && cv.Digest != got {
			return nil, "", "", fmt.Errorf("%w: %s-%s digest %s, index says %s", ErrChartInvalid, rc.Name, version, got, cv.Digest)
		}
		return archive, "sha256:" + got, note, nil
	}
	return nil, "", "", fmt.Errorf("%w: %s %s in %s", ErrChartNotFound, rc.Name, version, rc.Repo)
}

// bestVersion picks the highest version satisfying the constraint, or,
// when none does, the fallback constraint; note then says why.
func bestVersion(rc RepoChart, versions []string) (version, note string, err error) {
	version, err = highest(rc, rc.Version, versions)
	if !errors.Is(err, ErrChartNotFound) || rc.Fallback == "" {
		return version, "", err
	}
	if version, ferr := highest(rc, rc.Fallback, versions); ferr == nil {
		return version, fmt.Sprintf("no release of %s matches %s yet: using %s, the newest matching %s", rc.Name, rc.Version, version, rc.Fallback), nil
	}
	return "", "", err
}

func highest(rc RepoChart, want string, versions []string) (string, error) {
	constraint, err := semver.NewConstraint(want)
	if err != nil {
		return "", fmt.Errorf("%w: version %q of %s: %v", ErrChartInvalid, want, rc.Name, err)
	}
	var best *semver.Version
	for _, v := range versions {
		sv, err := semver.NewVersion(v)
		if err != nil || !constraint.Check(sv) {
			continue
		}
		if best == nil || sv.GreaterThan(best) {
			best = sv
		}
	}
	if best == nil {
		return "", fmt.Errorf("%w: no version of %s in %s matches %s (have %v)", ErrChartNotFound, rc.Name, rc.Repo, want, versions)
	}
	return best.Original(), nil
}

func get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// ServerMinor returns the minor version of the cluster's Kubernetes.
func (c *Client) ServerMinor() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.minor != "" {
		return c.minor, nil
	}
	v, err := c.discovery.ServerVersion()
	if err != nil {
		return "", err
	}
	c.minor = strings.TrimSuffix(v.Minor, "+")
	return c.minor, nil
}

// Warm reads the server's version, which the first plan needs. It does not
// fill the discovery cache: every install and upgrade reads the APIs afresh
// (see rendering), and the mapper fills it on demand.
func (c *Client) Warm() {
	_, _ = c.ServerMinor()
}
