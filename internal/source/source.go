// Package source pulls the Cozystack packages artifact (Flux's OCI artifact
// format: one tar.gz layer of the packages/ tree), verifies it by digest and
// keeps an extracted copy per digest, so a restart or a second reconcile of
// the same digest costs no download. A fresh pull is served from memory
// while that copy is written (see tree).
package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/singleflight"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// FluxContentMediaType is the layer media type of a Flux artifact.
const FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"

// ErrNotFound means the repository, tag or digest does not exist.
var ErrNotFound = errors.New("artifact not found")

// ErrDigestMismatch means the tag resolved to another digest than the pinned
// one; this needs a human, retrying cannot fix it.
var ErrDigestMismatch = errors.New("digest mismatch")

// ErrInvalidArtifact means the artifact is not in Flux's format.
var ErrInvalidArtifact = errors.New("invalid artifact")

// Ref names an artifact.
type Ref struct {
	URL      string // oci://host/repo
	Tag      string
	Digest   string
	Insecure bool
	Username string
	Password string
}

// Artifact is a pulled and verified artifact.
type Artifact struct {
	Digest string // manifest digest
	FS     fs.FS  // the tree
}

// DefaultMemoryLimit is how large an artifact's tree may be, unpacked, to be
// served from memory while it is written to disk.
const DefaultMemoryLimit = 32 << 20

// Puller pulls into a cache directory. One Puller is shared by every
// controller of the process (and the prefetch at start), so a digest is
// downloaded and extracted once even when they ask for it at the same time:
// two extractions of one digest would remove each other's tree.
type Puller struct {
	CacheDir string
	// MemoryLimit bounds the trees served from memory (DefaultMemoryLimit
	// when 0); of a larger one only the Hot names stay in memory, and the
	// rest is served once its copy on disk is written.
	MemoryLimit int64
	// Hot says which names of a tree are read first (the charts the
	// bundles name); nil: none.
	Hot func(name string) bool
	// Log reports a tree that could not be written to disk; it is then
	// served from memory and pulled again after a restart.
	Log logr.Logger

	flights singleflight.Group
	mu      sync.Mutex
	// unwritten holds the artifacts served from memory until their copy on
	// disk is complete, by digest.
	unwritten  map[string]*Artifact
	persisting sync.WaitGroup
}

// Pull resolves the ref, verifies it and returns the extracted tree.
func (p *Puller) Pull(ctx context.Context, ref Ref) (*Artifact, error) {
	repo, err := p.repository(ref)
	if err != nil {
		return nil, err
	}
	reference := ref.Tag
	if reference == "" {
		reference = ref.Digest
	}
	desc, err := repo.Resolve(ctx, reference)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s:%s", ErrNotFound, ref.URL, reference)
		}
		return nil, fmt.Errorf("resolving %s:%s: %w", ref.URL, reference, err)
	}
	if ref.Digest != "" && desc.Digest.String() != ref.Digest {
		return nil, fmt.Errorf("%w: %s:%s resolves to %s, spec.packages.digest is %s",
			ErrDigestMismatch, ref.URL, ref.Tag, desc.Digest, ref.Digest)
	}
	art, err, _ := p.flights.Do(desc.Digest.String(), func() (any, error) { return p.fetch(ctx, repo, desc) })
	if err != nil {
		return nil, err
	}
	return art.(*Artifact), nil
}

// fetch downloads and unpacks the artifact of desc unless it is held
// already.
func (p *Puller) fetch(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) (*Artifact, error) {
	if art, ok := p.Cached(desc.Digest.String()); ok {
		return art, nil
	}
	// FetchAll verifies size and digest of everything it reads.
	raw, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, fmt.Errorf("fetching manifest %s: %w", desc.Digest, err)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrInvalidArtifact, err)
	}
	var layer *ocispec.Descriptor
	for i := range manifest.Layers {
		if manifest.Layers[i].MediaType == FluxContentMediaType {
			layer = &manifest.Layers[i]
			break
		}
	}
	if layer == nil {
		return nil, fmt.Errorf("%w: no %s layer in %s", ErrInvalidArtifact, FluxContentMediaType, desc.Digest)
	}
	rc, err := repo.Fetch(ctx, *layer)
	if err != nil {
		return nil, fmt.Errorf("fetching layer %s: %w", layer.Digest, err)
	}
	defer rc.Close()
	return p.unpack(content.NewVerifyReader(rc, *layer), desc.Digest)
}

// Cached returns the artifact of a digest pulled before, if it is still
// held in memory or on disk.
func (p *Puller) Cached(dgst string) (*Artifact, bool) {
	d, err := digest.Parse(dgst)
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	art, ok := p.unwritten[dgst]
	p.mu.Unlock()
	if ok {
		return art, true
	}
	dir := filepath.Join(p.CacheDir, d.Encoded())
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return nil, false
	}
	return &Artifact{Digest: dgst, FS: os.DirFS(dir)}, true
}

func (p *Puller) repository(ref Ref) (*remote.Repository, error) {
	name, ok := strings.CutPrefix(ref.URL, "oci://")
	if !ok {
		return nil, fmt.Errorf("%w: spec.packages.url %q must start with oci://", ErrInvalidArtifact, ref.URL)
	}
	if ref.Digest != "" {
		if _, err := digest.Parse(ref.Digest); err != nil {
			return nil, fmt.Errorf("%w: spec.packages.digest: %v", ErrInvalidArtifact, err)
		}
	}
	repo, err := remote.NewRepository(name)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.packages.url: %v", ErrInvalidArtifact, err)
	}
	repo.PlainHTTP = ref.Insecure
	client := &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache()}
	if ref.Username != "" || ref.Password != "" {
		client.Credential = auth.StaticCredential(repo.Reference.Registry,
			auth.Credential{Username: ref.Username, Password: ref.Password})
	}
	repo.Client = client
	return repo, nil
}
