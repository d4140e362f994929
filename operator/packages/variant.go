package packages

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/tenant-operator/internal/outcome"
	cozyv1 "github.com/cozystack/tenant-operator/operator/apis/cozystack/v1alpha1"
)

// DefaultVariant is the variant of a Package that names none.
const DefaultVariant = "default"

// errPackageSourceNotFound is waited for, not an error: the PackageSource's
// creation enqueues the Package.
var errPackageSourceNotFound = errors.New("PackageSource not found")

// variant returns the same-named PackageSource and the variant the Package
// selects. A missing variant is Stalled: only a spec change can fix it.
func (r *Reconciler) variant(ctx context.Context, pkg *cozyv1.Package) (*cozyv1.PackageSource, *cozyv1.Variant, error) {
	ps := &cozyv1.PackageSource{}
	if err := r.Get(ctx, client.ObjectKey{Name: pkg.Name}, ps); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, errPackageSourceNotFound
		}
		return nil, nil, outcome.Retry(ReasonInternalError, err)
	}
	name := pkg.Spec.Variant
	if name == "" {
		name = DefaultVariant
	}
	var names []string
	for i := range ps.Spec.Variants {
		if ps.Spec.Variants[i].Name == name {
			return ps, &ps.Spec.Variants[i], nil
		}
		names = append(names, ps.Spec.Variants[i].Name)
	}
	return nil, nil, outcome.Terminal(ReasonVariantNotFound, "spec.variant: PackageSource %q has no variant %q (has: %s)",
		ps.Name, name, strings.Join(names, ", "))
}

// dependencies records the readiness of the Packages the variant depends on
// and says what is still awaited ("" when nothing is). Waiting is not an
// error: the dependency's status change enqueues this Package.
func (r *Reconciler) dependencies(ctx context.Context, pkg *cozyv1.Package, v *cozyv1.Variant) string {
	pkg.Status.Dependencies = nil
	var waiting []string
	for _, dep := range activeDependencies(pkg, v) {
		other := &cozyv1.Package{}
		ready := false
		if err := r.Get(ctx, client.ObjectKey{Name: dep}, other); err == nil {
			ready = conditions.IsReady(other) && other.Status.ObservedGeneration == other.Generation
		}
		if pkg.Status.Dependencies == nil {
			pkg.Status.Dependencies = map[string]cozyv1.DependencyStatus{}
		}
		pkg.Status.Dependencies[dep] = cozyv1.DependencyStatus{Ready: ready}
		if !ready {
			waiting = append(waiting, dep)
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	sort.Strings(waiting)
	return fmt.Sprintf("waiting for package(s) %s to be Ready", strings.Join(waiting, ", "))
}

func activeDependencies(pkg *cozyv1.Package, v *cozyv1.Variant) []string {
	var out []string
	for _, d := range v.DependsOn {
		if !slices.Contains(pkg.Spec.IgnoreDependencies, d) {
			out = append(out, d)
		}
	}
	return out
}
