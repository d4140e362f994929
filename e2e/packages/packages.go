// Package packages turns the stand-in chart tree under e2e/testdata/packages
// into what the test world's registry serves: a Cozystack packages artifact in
// Flux's OCI format, and ordinary OCI Helm charts.
package packages

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// Media types and annotations of a Flux OCI artifact, as source-controller
// reads them (fluxcd/pkg/oci).
const (
	FluxConfigMediaType  = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"

	AnnotationCreated  = ocispec.AnnotationCreated
	AnnotationRevision = ocispec.AnnotationRevision
	AnnotationSource   = ocispec.AnnotationSource

	// ArtifactSource is the source annotation of every artifact pushed here.
	ArtifactSource = "https://github.com/cozystack/tenant-operator"
)

// epoch stands in for every timestamp so that the same tree always yields
// the same bytes and therefore the same digest.
var epoch = time.Unix(0, 0).UTC()

// Pack writes a tar.gz of dir (paths relative to dir, deterministic: sorted
// entries, zero mtimes/uid) and returns its bytes. A symbolic link is an
// error: in our own trees it would be a mistake.
func Pack(dir string) ([]byte, error) {
	gz, _, err := pack(root{dir: dir})
	return gz, err
}

// PackAsFlux is Pack as `flux push artifact` packs a tree (fluxcd/pkg's
// tar.Tar): anything that is neither a regular file nor a directory, such as
// the charts/cozy-lib links of Cozystack's tree, is left out.
func PackAsFlux(dir string) ([]byte, error) {
	gz, _, err := pack(root{dir: dir, skipLinks: true})
	return gz, err
}

// root is a directory to pack; skipLinks leaves out symbolic links as
// `flux push artifact` does, where our own trees refuse them.
type root struct {
	dir       string
	skipLinks bool
}

// pack also returns the digest of the uncompressed tar, which the OCI image
// config calls the layer's diff ID. Several roots are laid over each other;
// a file in two of them is an error.
func pack(roots ...root) ([]byte, digest.Digest, error) {
	type entry struct {
		name string // tar name: slash-separated, relative to root, dirs end in /
		path string
		info fs.FileInfo
	}
	var entries []entry
	seen := map[string]bool{}
	for _, r := range roots {
		top, err := filepath.Abs(r.dir)
		if err != nil {
			return nil, "", err
		}
		if fi, err := os.Stat(top); err != nil {
			return nil, "", err
		} else if !fi.IsDir() {
			return nil, "", fmt.Errorf("%s is not a directory", top)
		}
		err = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p == top {
				return nil
			}
			if !d.IsDir() && !d.Type().IsRegular() {
				if r.skipLinks {
					return nil
				}
				// Dropping a symlink would silently change what the chart
				// builder sees; refuse instead.
				return fmt.Errorf("%s: only regular files and directories can be packed", p)
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(top, p)
			if err != nil {
				return err
			}
			name := filepath.ToSlash(rel)
			if d.IsDir() {
				// Sorting on the tar name, slash included, keeps every
				// directory right before its own children.
				name += "/"
			}
			switch {
			case seen[name] && d.IsDir():
				return nil
			case seen[name]:
				return fmt.Errorf("%s: %s is in more than one of the trees packed", p, name)
			}
			seen[name] = true
			entries = append(entries, entry{name: name, path: p, info: info})
			return nil
		})
		if err != nil {
			return nil, "", err
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	var out bytes.Buffer
	gw := gzip.NewWriter(&out)
	diffID := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(gw, diffID))
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, ModTime: epoch}
		if e.info.IsDir() {
			hdr.Typeflag = tar.TypeDir
			hdr.Mode = 0o755
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = e.info.Size()
			hdr.Mode = 0o644
			if e.info.Mode().Perm()&0o111 != 0 {
				hdr.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", err
		}
		if e.info.IsDir() {
			continue
		}
		if err := copyFile(tw, e.path, hdr.Size); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	if err := gw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(diffID.Sum(nil))), nil
}

func copyFile(w io.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// CopyN: a file that grew since the walk would otherwise overrun its
	// header and corrupt the archive.
	if _, err := io.CopyN(w, f, size); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// PushArtifact pushes dir as a Flux-format OCI artifact (manifest config
// mediaType application/vnd.cncf.flux.config.v1+json, one layer
// application/vnd.cncf.flux.content.v1.tar+gzip, annotations
// org.opencontainers.image.created/revision/source) to
// <registryHost>/<repo>:<tag> over plain HTTP with oras-go v2, and returns the
// manifest digest ("sha256:...").
//
// The created annotation is the Unix epoch and the revision is
// "<tag>@<layer digest>", so pushing the same tree under the same tag always
// yields the same manifest digest.
func PushArtifact(ctx context.Context, registryHost, repo, tag, dir string) (string, error) {
	return pushArtifact(ctx, registryHost, repo, tag, root{dir: dir})
}

// PushFluxArtifact is PushArtifact of a tree packed as `flux push artifact`
// packs it (PackAsFlux): how Cozystack publishes its packages tree. Each of
// extra (our own trees, symbolic links refused) is laid over it, adding
// files the tree does not have.
func PushFluxArtifact(ctx context.Context, registryHost, repo, tag, dir string, extra ...string) (string, error) {
	roots := []root{{dir: dir, skipLinks: true}}
	for _, e := range extra {
		roots = append(roots, root{dir: e})
	}
	return pushArtifact(ctx, registryHost, repo, tag, roots...)
}

func pushArtifact(ctx context.Context, registryHost, repo, tag string, roots ...root) (string, error) {
	layer, diffID, err := pack(roots...)
	if err != nil {
		return "", fmt.Errorf("packing %v: %w", roots, err)
	}
	target, err := remote.NewRepository(registryHost + "/" + strings.Trim(repo, "/"))
	if err != nil {
		return "", err
	}
	target.PlainHTTP = true

	layerDesc := content.NewDescriptorFromBytes(FluxContentMediaType, layer)
	created := epoch.Format(time.RFC3339)

	// Shaped like the image config Flux writes, so tools that read the config
	// (not only source-controller, which reads just the layer) accept it.
	config, err := json.Marshal(map[string]any{
		"architecture": "",
		"os":           "",
		"created":      created,
		"config":       map[string]any{},
		"rootfs": map[string]any{
			"type":     "layers",
			"diff_ids": []string{diffID.String()},
		},
	})
	if err != nil {
		return "", err
	}
	configDesc := content.NewDescriptorFromBytes(FluxConfigMediaType, config)

	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    configDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
		Annotations: map[string]string{
			AnnotationCreated:  created,
			AnnotationRevision: tag + "@" + layerDesc.Digest.String(),
			AnnotationSource:   ArtifactSource,
		},
	})
	if err != nil {
		return "", err
	}
	manifestDesc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, manifest)

	// Blobs before the manifest: a registry may refuse a manifest whose
	// blobs it does not have.
	if err := target.Push(ctx, configDesc, bytes.NewReader(config)); err != nil {
		return "", fmt.Errorf("pushing config: %w", err)
	}
	if err := target.Push(ctx, layerDesc, bytes.NewReader(layer)); err != nil {
		return "", fmt.Errorf("pushing layer: %w", err)
	}
	if err := target.PushReference(ctx, manifestDesc, bytes.NewReader(manifest), tag); err != nil {
		return "", fmt.Errorf("pushing manifest: %w", err)
	}
	return manifestDesc.Digest.String(), nil
}

// PushChart packages the Helm chart at chartDir with the Helm v3 SDK and
// pushes it as an OCI Helm chart to oci://<registryHost>/<repo> (plain HTTP),
// returning the digest. The reference is <registryHost>/<repo>/<chart
// name>:<chart version>, as `helm push` does.
//
// Packaging checks that every dependency in Chart.yaml is present in charts/,
// so a chart that needs a vendored library fails here until it is vendored.
// Helm's registry client takes no context, so ctx is only checked up front.
func PushChart(ctx context.Context, registryHost, repo, chartDir string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "pushchart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)

	pkg := action.NewPackage()
	pkg.Destination = tmp
	archive, err := pkg.Run(chartDir, nil)
	if err != nil {
		return "", fmt.Errorf("packaging %s: %w", chartDir, err)
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		return "", err
	}

	client, err := registry.NewClient(
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		// Keep the developer's Helm registry logins out of the test world.
		registry.ClientOptCredentialsFile(filepath.Join(tmp, "registry.json")),
	)
	if err != nil {
		return "", err
	}
	// Name and version of what was packaged, which is what the registry
	// client insists the reference ends with.
	ch, err := loader.Load(archive)
	if err != nil {
		return "", err
	}
	ref := fmt.Sprintf("%s/%s/%s:%s", registryHost, strings.Trim(repo, "/"), ch.Name(), ch.Metadata.Version)
	res, err := client.Push(data, ref)
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return res.Manifest.Digest, nil
}

// TestdataDir returns the absolute path of e2e/testdata/packages.
func TestdataDir() string {
	root, err := moduleRoot()
	if err != nil {
		panic(err)
	}
	return filepath.Join(root, "e2e", "testdata", "packages")
}

// moduleRoot is the directory of this module's go.mod: from this file's
// path when it is known, else (built with -trimpath) from the working
// directory upwards.
func moduleRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "..", "..")
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Clean(dir), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("packages: no go.mod above %s", wd)
		}
	}
}
