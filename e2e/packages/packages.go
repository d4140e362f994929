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
// entries, zero mtimes/uid) and returns its bytes.
func Pack(dir string) ([]byte, error) {
	gz, _, err := pack(dir)
	return gz, err
}

// pack also returns the digest of the uncompressed tar, which the OCI image
// config calls the layer's diff ID.
func pack(dir string) ([]byte, digest.Digest, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, "", err
	} else if !fi.IsDir() {
		return nil, "", fmt.Errorf("%s is not a directory", root)
	}

	type entry struct {
		name string // tar name: slash-separated, relative to root, dirs end in /
		path string
		info fs.FileInfo
	}
	var entries []entry
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			// Dropping a symlink would silently change what the chart
			// builder sees; refuse instead.
			return fmt.Errorf("%s: only regular files and directories can be packed", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			// Sorting on the tar name, slash included, keeps every
			// directory right before its own children.
			name += "/"
		}
		entries = append(entries, entry{name: name, path: p, info: info})
		return nil
	})
	if err != nil {
		return nil, "", err
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
	layer, diffID, err := pack(dir)
	if err != nil {
		return "", fmt.Errorf("packing %s: %w", dir, err)
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
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Join(filepath.Dir(file), "..", "testdata", "packages")
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
	}
	// Built with -trimpath the source path is not absolute: find the module
	// root from the working directory instead.
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "e2e", "testdata", "packages")
		}
		if filepath.Dir(dir) == dir {
			panic("packages: no go.mod above " + wd)
		}
	}
}
