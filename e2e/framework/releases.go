package framework

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Revision is one Helm release revision, read from its storage Secret's
// labels (the release itself is never decoded: values could hold secrets).
type Revision struct {
	Release string // namespace/name
	Version int
	Status  string
}

// ReleaseHistory lists every revision of every Helm release of the cluster.
func ReleaseHistory(ctx context.Context, c client.Client) ([]Revision, error) {
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.MatchingLabels{"owner": "helm"}); err != nil {
		return nil, err
	}
	var out []Revision
	for _, s := range secrets.Items {
		v, _ := strconv.Atoi(s.Labels["version"])
		out = append(out, Revision{Release: s.Namespace + "/" + s.Labels["name"], Version: v, Status: s.Labels["status"]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Release != out[j].Release {
			return out[i].Release < out[j].Release
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// Releases lists the names (namespace/name) of releases with any revision.
func Releases(ctx context.Context, c client.Client) ([]string, error) {
	hist, err := ReleaseHistory(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range hist {
		if len(out) == 0 || out[len(out)-1] != r.Release {
			out = append(out, r.Release)
		}
	}
	return out, nil
}

// WorkloadUIDs identifies the Helm-managed Deployments and DaemonSets
// present now, by kind/namespace/name: a changed UID means one was deleted
// and created again.
func WorkloadUIDs(ctx context.Context, c client.Client) (map[string]string, error) {
	out := map[string]string{}
	sel := client.MatchingLabels{"app.kubernetes.io/managed-by": "Helm"}
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, sel); err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		out["Deployment/"+d.Namespace+"/"+d.Name] = string(d.UID)
	}
	var dss appsv1.DaemonSetList
	if err := c.List(ctx, &dss, sel); err != nil {
		return nil, err
	}
	for _, d := range dss.Items {
		out["DaemonSet/"+d.Namespace+"/"+d.Name] = string(d.UID)
	}
	return out, nil
}

// Unsettled lists the revisions that leave a release in a bad state: any
// revision still pending (a lock), and the latest revision of a release
// when it is not deployed. A failed revision followed by a deployed one is
// history, as Helm and helm-controller keep it (an interrupted operation
// marked failed, then done again).
func Unsettled(hist []Revision) []Revision {
	latest := map[string]Revision{}
	var out []Revision
	for _, r := range hist {
		if strings.HasPrefix(r.Status, "pending-") {
			out = append(out, r)
		}
		if cur, ok := latest[r.Release]; !ok || r.Version > cur.Version {
			latest[r.Release] = r
		}
	}
	for _, r := range latest {
		if r.Status != "deployed" && !strings.HasPrefix(r.Status, "pending-") {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Release+fmt.Sprint(out[i].Version) < out[j].Release+fmt.Sprint(out[j].Version)
	})
	return out
}
