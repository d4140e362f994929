package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// registry serves one Flux artifact under repo "packages", tag "v1", and
// counts the downloads of its layer.
func registry(t *testing.T, files map[string]string) (host string, layerGets *atomic.Int32) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	layer := buf.Bytes()
	config := []byte("{}")
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    ocispec.Descriptor{MediaType: "application/vnd.cncf.flux.config.v1+json", Digest: digest.FromBytes(config), Size: int64(len(config))},
		Layers:    []ocispec.Descriptor{{MediaType: FluxContentMediaType, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
	})
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[digest.Digest][]byte{digest.FromBytes(layer): layer, digest.FromBytes(config): config}
	layerGets = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/packages/manifests/v1" || r.URL.Path == "/v2/packages/manifests/"+digest.FromBytes(manifest).String():
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", digest.FromBytes(manifest).String())
			w.Header().Set("Content-Length", strconv.Itoa(len(manifest)))
			if r.Method == http.MethodGet {
				_, _ = w.Write(manifest)
			}
		case strings.HasPrefix(r.URL.Path, "/v2/packages/blobs/"):
			d := digest.Digest(strings.TrimPrefix(r.URL.Path, "/v2/packages/blobs/"))
			body, ok := blobs[d]
			if !ok {
				http.NotFound(w, r)
				return
			}
			if d == digest.FromBytes(layer) {
				layerGets.Add(1)
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), layerGets
}

// The controllers of one process share a Puller and may ask for the same
// digest at once; each must get the complete tree, downloaded once.
func TestPullConcurrentSameDigest(t *testing.T) {
	host, layerGets := registry(t, map[string]string{"system/cilium/Chart.yaml": "name: cilium\n"})
	p := &Puller{CacheDir: t.TempDir()}
	// The tree is written in the background; the temporary directory is
	// removed only after that (cleanups run last-registered first).
	t.Cleanup(p.WaitWritten)
	ref := Ref{URL: "oci://" + host + "/packages", Tag: "v1", Insecure: true}
	const callers = 8
	arts := make([]*Artifact, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { arts[i], errs[i] = p.Pull(context.Background(), ref) })
	}
	wg.Wait()
	// A caller that came after the others' download may get the tree
	// from its copy on disk instead of from memory: the same tree.
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if arts[i].Digest != arts[0].Digest {
			t.Fatalf("caller %d got %s, caller 0 %s", i, arts[i].Digest, arts[0].Digest)
		}
		raw, err := fs.ReadFile(arts[i].FS, "system/cilium/Chart.yaml")
		if err != nil || string(raw) != "name: cilium\n" {
			t.Fatalf("caller %d's tree: %q, %v", i, raw, err)
		}
	}
	if n := layerGets.Load(); n != 1 {
		t.Fatalf("layer downloaded %d times, want once", n)
	}
	// A later pull of the same digest is served from what was pulled.
	if _, err := p.Pull(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if n := layerGets.Load(); n != 1 {
		t.Fatalf("layer downloaded %d times after a cached pull, want once", n)
	}
}

// A fresh pull is served from memory while it is written to the cache
// directory; once written, the tree is read from disk and a new Puller on
// the same directory (a restarted operator) finds it without a download.
func TestPullWritesTheTreeBehindTheCaller(t *testing.T) {
	files := map[string]string{"system/cilium/Chart.yaml": "name: cilium\n", "system/cilium/templates/ds.yaml": "kind: DaemonSet\n",
		"library/lib/Chart.yaml": "name: lib\n"}
	host, layerGets := registry(t, files)
	dir := t.TempDir()
	p := &Puller{CacheDir: dir}
	ref := Ref{URL: "oci://" + host + "/packages", Tag: "v1", Insecure: true}
	art, err := p.Pull(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitWritten()
	tr, ok := art.FS.(*tree)
	if !ok || tr.mem.Load() != nil {
		t.Fatalf("after the write the tree is still served from memory: %T", art.FS)
	}
	for name, body := range files {
		if raw, err := fs.ReadFile(art.FS, name); err != nil || string(raw) != body {
			t.Fatalf("%s: %q, %v", name, raw, err)
		}
	}
	if err := fstest.TestFS(art.FS, "system/cilium/Chart.yaml", "system/cilium/templates/ds.yaml", "library/lib/Chart.yaml"); err != nil {
		t.Fatal(err)
	}
	restarted := &Puller{CacheDir: dir}
	cached, ok := restarted.Cached(art.Digest)
	if !ok {
		t.Fatal("a restarted puller does not find the written tree")
	}
	if raw, err := fs.ReadFile(cached.FS, "system/cilium/Chart.yaml"); err != nil || string(raw) != files["system/cilium/Chart.yaml"] {
		t.Fatalf("cached tree: %q, %v", raw, err)
	}
	if _, err := restarted.Pull(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if n := layerGets.Load(); n != 1 {
		t.Fatalf("layer downloaded %d times, want once", n)
	}
}

// A tree larger than the memory limit keeps only its hot names in memory;
// the rest is served from the disk copy, written in the background, and
// never sits in memory.
func TestPullKeepsOnlyTheHotPartOfALargeTree(t *testing.T) {
	files := map[string]string{"system/a/Chart.yaml": "name: a\n", "system/a/values.yaml": "x: 1\n",
		"system/b/Chart.yaml": "name: b\n", "apps/c/values.yaml": "x: 1\n"}
	host, _ := registry(t, files)
	hot := func(name string) bool { return name == "system/a" || strings.HasPrefix(name, "system/a/") }
	p := &Puller{CacheDir: t.TempDir(), MemoryLimit: 10, Hot: hot}
	art, err := p.Pull(context.Background(), Ref{URL: "oci://" + host + "/packages", Tag: "v1", Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := art.FS.(*tree)
	if !ok || !tr.partial {
		t.Fatalf("a large tree is served as %T", art.FS)
	}
	if m := tr.mem.Load(); m != nil {
		if _, err := m.ReadFile("system/b/Chart.yaml"); err == nil {
			t.Fatal("a cold file of a large tree is held in memory")
		}
	}
	for name, body := range files {
		if raw, err := fs.ReadFile(art.FS, name); err != nil || string(raw) != body {
			t.Fatalf("%s: %q, %v", name, raw, err)
		}
	}
	entries, err := fs.ReadDir(art.FS, "system")
	if err != nil || len(entries) != 2 {
		t.Fatalf("system/: %v, %v", entries, err)
	}
	p.WaitWritten()
	if _, ok := p.Cached(art.Digest); !ok {
		t.Fatal("the disk copy is not complete")
	}
}

// The in-memory tree behaves as an fs.FS must.
func TestMemFS(t *testing.T) {
	m := newMemFS(map[string][]byte{"a/b/c.yaml": []byte("c"), "a/d.yaml": []byte("d"), "e": []byte("")})
	if err := fstest.TestFS(m, "a/b/c.yaml", "a/d.yaml", "e"); err != nil {
		t.Fatal(err)
	}
}
