package packages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/outcome"
	"github.com/cozystack/tenant-operator/internal/source"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// tree is a packages artifact's tree under the base path of a
// PackageSource.
type tree struct {
	Digest string
	Base   string
	Root   fs.FS
}

// artifact resolves the PackageSource's sourceRef. The operator pulls the
// OCI artifact itself, from the OCIRepository's spec (pinned by digest when
// the spec pins one), so that it can build charts exactly as Cozystack's
// artifact generator does; source-controller reconciles the same object
// for anything else in the tenant that wants it.
func (r *Reconciler) artifact(ctx context.Context, ps *cozyv1.PackageSource) (*tree, error) {
	ref := ps.Spec.SourceRef
	if ref == nil {
		return nil, outcome.Terminal(ReasonSourceRefNotSet, "PackageSource %s: spec.sourceRef is not set", ps.Name)
	}
	if ref.Kind != sourcev1.OCIRepositoryKind {
		return nil, outcome.Terminal(ReasonInvalidConfiguration, "PackageSource %s: spec.sourceRef.kind %s is not supported in a tenant (only %s)",
			ps.Name, ref.Kind, sourcev1.OCIRepositoryKind)
	}
	repo := &sourcev1.OCIRepository{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, repo); err != nil {
		return nil, outcome.Retry(ReasonArtifactFailed, fmt.Errorf("PackageSource %s: %s %s/%s: %w", ps.Name, ref.Kind, ref.Namespace, ref.Name, err))
	}
	sref := source.Ref{URL: repo.Spec.URL, Insecure: repo.Spec.Insecure}
	if repo.Spec.Reference != nil {
		sref.Tag, sref.Digest = repo.Spec.Reference.Tag, repo.Spec.Reference.Digest
	}
	var art *source.Artifact
	if cached, ok := r.Puller.Cached(sref.Digest); sref.Digest != "" && ok {
		art = cached
	} else {
		if repo.Spec.SecretRef != nil {
			user, pass, err := r.credentials(ctx, repo.Namespace, repo.Spec.SecretRef.Name, repo.Spec.URL)
			if err != nil {
				return nil, err
			}
			sref.Username, sref.Password = user, pass
		}
		pulled, err := r.Puller.Pull(ctx, sref)
		switch {
		case errors.Is(err, source.ErrDigestMismatch), errors.Is(err, source.ErrInvalidArtifact):
			return nil, outcome.Terminal(ReasonArtifactFailed, "%s %s/%s: %v", ref.Kind, ref.Namespace, ref.Name, err)
		case err != nil:
			return nil, outcome.Retry(ReasonArtifactFailed, fmt.Errorf("%s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err))
		}
		art = pulled
	}
	base := ref.Path
	base = strings.TrimPrefix(path.Clean("/"+base), "/")
	if base == "" {
		base = "."
	}
	root, err := fs.Sub(art.FS, base)
	if err != nil {
		return nil, outcome.Terminal(ReasonInvalidConfiguration, "PackageSource %s: spec.sourceRef path %q: %v", ps.Name, ref.Path, err)
	}
	return &tree{Digest: art.Digest, Base: base, Root: root}, nil
}

// credentials reads a dockerconfigjson Secret with the uncached reader.
func (r *Reconciler) credentials(ctx context.Context, ns, name, url string) (string, string, error) {
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return "", "", outcome.Retry(ReasonArtifactFailed, fmt.Errorf("secret %s/%s: %w", ns, name, err))
	}
	user, pass, err := source.Credentials(s, url)
	if err != nil {
		return "", "", outcome.Terminal(ReasonInvalidConfiguration, "%v", err)
	}
	return user, pass, nil
}
