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
	suspected := func(d *DriftTracker, name string) bool {
		s, _ := d.Suspected("ns", name)
		return s
	}
	for _, tc := range []struct {
		name string
		run  func(d *DriftTracker)
		want bool
	}{
		{"never checked since start", func(d *DriftTracker) {}, true},
		{"Helm just wrote it", func(d *DriftTracker) { d.Checked("ns", "a") }, false},
		{"a workload deleted after the write", func(d *DriftTracker) { d.Checked("ns", "a"); d.Mark("ns", "a") }, true},
		{"looked at, but the correction failed", func(d *DriftTracker) {
			d.Checked("ns", "a")
			d.Mark("ns", "a")
			suspected(d, "a") // the pass that tried
		}, true},
		{"corrected", func(d *DriftTracker) {
			d.Mark("ns", "a")
			_, mark := d.Suspected("ns", "a")
			d.Corrected("ns", "a", mark)
		}, false},
		{"marked again while the correction ran", func(d *DriftTracker) {
			d.Mark("ns", "a")
			_, mark := d.Suspected("ns", "a")
			d.Mark("ns", "a")
			d.Corrected("ns", "a", mark)
		}, true},
		{"another release's mark", func(d *DriftTracker) { d.Checked("ns", "a"); d.Mark("ns", "b") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDriftTracker()
			tc.run(d)
			if got := suspected(d, "a"); got != tc.want {
				t.Errorf("suspected = %v, want %v", got, tc.want)
			}
		})
	}
}
