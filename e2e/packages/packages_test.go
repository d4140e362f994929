package packages

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/gomega"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

type tarEntry struct {
	name string
	mode int64
	body string
}

func untar(t *testing.T, gz []byte) []tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: environment leaked into header: %+v", h.Name, h)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, tarEntry{name: h.Name, mode: h.Mode, body: string(b)})
	}
}

func TestPackIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write := func(rel, body string, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o700)).To(Succeed())
		g.Expect(os.WriteFile(p, []byte(body), mode)).To(Succeed())
	}
	write("system/b/Chart.yaml", "name: b\n", 0o600)
	write("system/a/Chart.yaml", "name: a\n", 0o644)
	write("system/a-x/run.sh", "#!/bin/sh\n", 0o700)
	write("library/l/Chart.yaml", "name: l\n", 0o644)

	first, err := Pack(dir)
	g.Expect(err).NotTo(HaveOccurred())

	// Different mtimes and permissions on disk must not change the bytes.
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	g.Expect(os.Chtimes(filepath.Join(dir, "system/a/Chart.yaml"), old, old)).To(Succeed())
	g.Expect(os.Chmod(filepath.Join(dir, "system/a/Chart.yaml"), 0o600)).To(Succeed())
	second, err := Pack(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(Equal(first))

	entries := untar(t, first)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.name)
	}
	g.Expect(sort.StringsAreSorted(names)).To(BeTrue())
	g.Expect(names).To(Equal([]string{
		"library/", "library/l/", "library/l/Chart.yaml",
		"system/", "system/a-x/", "system/a-x/run.sh",
		"system/a/", "system/a/Chart.yaml", "system/b/", "system/b/Chart.yaml",
	}))
	g.Expect(entries).To(ContainElement(tarEntry{name: "system/a-x/run.sh", mode: 0o755, body: "#!/bin/sh\n"}))
	g.Expect(entries).To(ContainElement(tarEntry{name: "system/b/Chart.yaml", mode: 0o644, body: "name: b\n"}))
}

func TestPackRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	_, err := Pack(dir)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("only regular files")))
}

func TestPackTestdata(t *testing.T) {
	g := NewWithT(t)
	gz, err := Pack(TestdataDir())
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range untar(t, gz) {
		names = append(names, e.name)
	}
	g.Expect(names).To(ContainElements("apps/echo/Chart.yaml", "apps/ingress/Chart.yaml"))
	g.Expect(names).NotTo(ContainElement(HavePrefix("system/")), "stand-ins only for what Cozystack does not ship")
}

// Cozystack's tree has symbolic links (apps/*/charts/cozy-lib); `flux push
// artifact` leaves them out, and so must the test world's artifact.
func TestPackAsFluxLeavesLinksOut(t *testing.T) {
	g := NewWithT(t)
	dir, err := CozystackDir()
	g.Expect(err).NotTo(HaveOccurred())
	link, err := os.Lstat(filepath.Join(dir, "apps", "kubernetes", "charts", "cozy-lib"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(link.Mode() & os.ModeSymlink).NotTo(BeZero())
	gz, err := PackAsFlux(dir)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range untar(t, gz) {
		names = append(names, e.name)
	}
	g.Expect(names).To(ContainElements("system/cilium/Chart.yaml", "library/cozy-lib/Chart.yaml", "apps/kubernetes/Chart.yaml"))
	g.Expect(names).NotTo(ContainElement(HavePrefix("apps/kubernetes/charts/cozy-lib")))
}

// A tree laid over another adds files; it may not replace one.
func TestOverlayRefusesToReplaceAFile(t *testing.T) {
	g := NewWithT(t)
	base, over := t.TempDir(), t.TempDir()
	for _, d := range []string{base, over} {
		g.Expect(os.MkdirAll(filepath.Join(d, "apps", "x"), 0o755)).To(Succeed())
	}
	g.Expect(os.WriteFile(filepath.Join(base, "apps", "x", "a"), []byte("a"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(over, "apps", "x", "b"), []byte("b"), 0o644)).To(Succeed())
	gz, _, err := pack(root{dir: base}, root{dir: over})
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range untar(t, gz) {
		names = append(names, e.name)
	}
	g.Expect(names).To(Equal([]string{"apps/", "apps/x/", "apps/x/a", "apps/x/b"}))
	g.Expect(os.WriteFile(filepath.Join(over, "apps", "x", "a"), []byte("other"), 0o644)).To(Succeed())
	_, _, err = pack(root{dir: base}, root{dir: over})
	g.Expect(err).To(MatchError(ContainSubstring("more than one of the trees")))
}

// startRegistry serves go-containerregistry's in-memory OCI registry on
// loopback and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestPushArtifact(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	host := startRegistry(t)

	dgst, err := PushArtifact(ctx, host, "cozystack/packages", "v0.1.0", TestdataDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dgst).To(HavePrefix("sha256:"))

	again, err := PushArtifact(ctx, host, "cozystack/packages", "v0.1.0", TestdataDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(dgst), "same tree, same tag: same digest")

	repo, err := remote.NewRepository(host + "/cozystack/packages")
	g.Expect(err).NotTo(HaveOccurred())
	repo.PlainHTTP = true
	desc, rc, err := repo.FetchReference(ctx, "v0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := content.ReadAll(rc, desc)
	rc.Close()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc.Digest.String()).To(Equal(dgst))

	var m ocispec.Manifest
	g.Expect(json.Unmarshal(raw, &m)).To(Succeed())
	g.Expect(m.SchemaVersion).To(Equal(2))
	g.Expect(m.MediaType).To(Equal(ocispec.MediaTypeImageManifest))
	g.Expect(m.Config.MediaType).To(Equal(FluxConfigMediaType))
	g.Expect(m.Layers).To(HaveLen(1))
	g.Expect(m.Layers[0].MediaType).To(Equal(FluxContentMediaType))
	g.Expect(m.Annotations).To(HaveKeyWithValue(AnnotationCreated, "1970-01-01T00:00:00Z"))
	g.Expect(m.Annotations).To(HaveKeyWithValue(AnnotationRevision, "v0.1.0@"+m.Layers[0].Digest.String()))
	g.Expect(m.Annotations).To(HaveKeyWithValue(AnnotationSource, ArtifactSource))

	layer, err := content.FetchAll(ctx, repo, m.Layers[0])
	g.Expect(err).NotTo(HaveOccurred())
	want, err := Pack(TestdataDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layer).To(Equal(want))

	cfg, err := content.FetchAll(ctx, repo, m.Config)
	g.Expect(err).NotTo(HaveOccurred())
	var config struct {
		RootFS struct {
			DiffIDs []digest.Digest `json:"diff_ids"`
		} `json:"rootfs"`
	}
	g.Expect(json.Unmarshal(cfg, &config)).To(Succeed())
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	g.Expect(err).NotTo(HaveOccurred())
	uncompressed, err := io.ReadAll(zr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(config.RootFS.DiffIDs).To(Equal([]digest.Digest{digest.FromBytes(uncompressed)}))
}

func TestPushChart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	host := startRegistry(t)

	tree, err := CozystackDir()
	g.Expect(err).NotTo(HaveOccurred())
	dgst, err := PushChart(ctx, host, "charts", filepath.Join(tree, "system", "coredns"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dgst).To(HavePrefix("sha256:"))

	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(),
		helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "registry.json")))
	g.Expect(err).NotTo(HaveOccurred())
	res, err := client.Pull(host + "/charts/cozy-coredns:0.0.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Manifest.Digest).To(Equal(dgst))
	ch, err := loader.LoadArchive(bytes.NewReader(res.Chart.Data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Name()).To(Equal("cozy-coredns"))
	g.Expect(ch.Dependencies()).To(HaveLen(1), "the vendored subchart travels with the chart")

	// The OpenStack CCM chart lists Bitnami's common from a repository: it
	// is incomplete until vendored, as `helm dependency build` does.
	charts, err := OpenStackChartsDir()
	g.Expect(err).NotTo(HaveOccurred())
	occm := filepath.Join(charts, "openstack-cloud-controller-manager")
	_, err = PushChart(ctx, host, "charts", occm)
	g.Expect(err).To(MatchError(ContainSubstring("common")))
	common, err := BitnamiCommonDir()
	g.Expect(err).NotTo(HaveOccurred())
	vendored, err := WithDependencies(occm, common)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(vendored)) })
	_, err = PushChart(ctx, host, "charts", vendored)
	g.Expect(err).NotTo(HaveOccurred())
}
