package bootstrap

import (
	"fmt"
	"testing"

	"helm.sh/helm/v3/pkg/release"

	"github.com/cozystack/tenant-operator/internal/helm"
	"github.com/cozystack/tenant-operator/internal/readiness"
)

func TestObserve(t *testing.T) {
	const want = "d1"
	rel := func(status release.Status, digest string, deployed bool) *helm.Release {
		return &helm.Release{Status: status, Digest: digest, Deployed: deployed}
	}
	tests := []struct {
		name     string
		c        Component
		want     State
		wantStep string
	}{
		{"no release", Component{}, StateAbsent, "install"},
		{"pending install left by a dead writer", Component{Release: rel(release.StatusPendingInstall, want, false)}, StateLocked, "unlock"},
		{"pending upgrade", Component{Release: rel(release.StatusPendingUpgrade, want, true)}, StateLocked, "unlock"},
		{"failed first install is reinstalled, never uninstalled", Component{Release: rel(release.StatusFailed, want, false)}, StateFailed, "install"},
		{"failed upgrade over a deployed revision", Component{Release: rel(release.StatusFailed, want, true)}, StateFailed, "upgrade"},
		{"new chart or values", Component{Release: rel(release.StatusDeployed, "d0", true)}, StateOutOfSync, "upgrade"},
		{"workload not in the cache yet after our own write", Component{Release: rel(release.StatusDeployed, want, true), Health: readiness.Result{Missing: []string{"x"}}}, StateProgressing, ""},
		{"workload deleted", Component{Release: rel(release.StatusDeployed, want, true), Health: readiness.Result{Missing: []string{"x"}}, DriftSuspected: true}, StateDrifted, "correct-drift"},
		{"workload edited", Component{Release: rel(release.StatusDeployed, want, true), DriftSuspected: true}, StateDrifted, "correct-drift"},
		{"workloads coming up", Component{Release: rel(release.StatusDeployed, want, true)}, StateProgressing, ""},
		{"ready", Component{Release: rel(release.StatusDeployed, want, true), Health: readiness.Result{Ready: true}}, StateReady, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Digest = want
			got := tt.c.Observe()
			if got != tt.want {
				t.Fatalf("Observe() = %s, want %s", got, tt.want)
			}
			step := actionForState(got, &tt.c, &deps{})
			name := ""
			if step != nil {
				name = step.Name()
			}
			if name != tt.wantStep {
				t.Fatalf("step = %q, want %q", name, tt.wantStep)
			}
		})
	}
}

func TestWaves(t *testing.T) {
	mk := func(name string, deps ...string) *Component {
		c := &Component{}
		c.Def.Name, c.Def.DependsOn = name, deps
		return c
	}
	got := waves([]*Component{mk("ccm"), mk("cilium"), mk("coredns", "cilium"), mk("csi", "cilium", "ccm"), mk("x", "coredns")})
	var names [][]string
	for _, w := range got {
		var n []string
		for _, c := range w {
			n = append(n, c.Def.Name)
		}
		names = append(names, n)
	}
	want := "[[ccm cilium] [coredns csi] [x]]"
	if s := fmt.Sprint(names); s != want {
		t.Fatalf("waves = %s, want %s", s, want)
	}
}

func TestDriftTracker(t *testing.T) {
	d := NewDriftTracker()
	if !d.Take("ns", "a") {
		t.Fatal("a release never checked since start must be suspected")
	}
	if d.Take("ns", "a") {
		t.Fatal("a checked release must not be suspected again")
	}
	d.Mark("ns", "a")
	if !d.Take("ns", "a") {
		t.Fatal("a marked release must be suspected")
	}
	d.Checked("ns", "b")
	if d.Take("ns", "b") {
		t.Fatal("a release Helm just wrote needs no check")
	}
}
