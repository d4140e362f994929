// Package source pulls the Cozystack packages artifact (Flux's OCI artifact
// format: one tar.gz layer of the packages/ tree), verifies it by digest and
// keeps an extracted copy per digest, so a restart or a second reconcile of
// the same digest costs no download.
package source

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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

// Artifact is a pulled, verified and extracted artifact.
type Artifact struct {
	Digest string // manifest digest
	Dir    string // root of the extracted tree
}

// Puller pulls into a cache directory. One Puller is shared by every
// controller of the process (and the prefetch at start), so a digest is
// downloaded and extracted once even when they ask for it at the same time:
// two extractions of one digest would remove each other's tree.
type Puller struct {
	CacheDir string

	flights singleflight.Group
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

// fetch downloads and extracts the artifact of desc unless the cache holds
// it already.
func (p *Puller) fetch(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) (*Artifact, error) {
	dir := filepath.Join(p.CacheDir, desc.Digest.Encoded())
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return &Artifact{Digest: desc.Digest.String(), Dir: dir}, nil
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
	if err := p.extract(content.NewVerifyReader(rc, *layer), dir); err != nil {
		return nil, err
	}
	return &Artifact{Digest: desc.Digest.String(), Dir: dir}, nil
}

// Cached returns the extracted artifact of a digest pulled before, if the
// cache still holds it.
func (p *Puller) Cached(dgst string) (*Artifact, bool) {
	d, err := digest.Parse(dgst)
	if err != nil {
		return nil, false
	}
	dir := filepath.Join(p.CacheDir, d.Encoded())
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		return nil, false
	}
	return &Artifact{Digest: dgst, Dir: dir}, true
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

// extract unpacks into a temporary sibling and renames it into place, so a
// crash mid-way never leaves a half tree that looks complete.
func (p *Puller) extract(r *content.VerifyReader, dir string) error {
	if err := os.MkdirAll(p.CacheDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(p.CacheDir, ".pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := untar(r, tmp); err != nil {
		return err
	}
	// Drain and verify: a tar reader may stop before the gzip trailer.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	if err := r.Verify(); err != nil {
		return fmt.Errorf("%w: layer: %v", ErrInvalidArtifact, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

func untar(r io.Reader, dst string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArtifact, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidArtifact, err)
		}
		target := filepath.Join(dst, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			f.Close()
			if err != nil {
				return err
			}
		}
		// Links and devices are ignored: a chart tree needs neither, and
		// following links out of dst would be a hazard.
	}
}
