package packages

import (
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJudge(t *testing.T) {
	const published, previous = "sha256:new", "sha256:old"
	type hrState struct {
		generation, observed int64
		ready                metav1.ConditionStatus // "" for no Ready condition
		reason               string
		attempted, deployed  string // LastAttemptedRevisionDigest, the latest snapshot's OCIDigest
	}
	tests := []struct {
		name string
		hr   hrState
		want releaseState
	}{
		{"never reconciled", hrState{1, 0, "", "", "", ""}, releasePending},
		{"spec not yet observed", hrState{2, 1, metav1.ConditionTrue, helmv2.UpgradeSucceededReason, published, published}, releasePending},
		{"published chart deployed", hrState{1, 1, metav1.ConditionTrue, helmv2.UpgradeSucceededReason, published, published}, releaseReady},
		// The race a confirmation met: the ExternalArtifact moved, the
		// HelmRelease's generation did not, its Ready is the old chart's.
		{"Ready about the previous chart", hrState{1, 1, metav1.ConditionTrue, helmv2.InstallSucceededReason, previous, previous}, releasePending},
		{"attempted, history not yet recorded", hrState{1, 1, metav1.ConditionTrue, helmv2.UpgradeSucceededReason, published, previous}, releasePending},
		{"upgrading", hrState{1, 1, metav1.ConditionUnknown, meta.ProgressingReason, published, previous}, releasePending},
		{"progressing", hrState{1, 1, metav1.ConditionFalse, meta.ProgressingReason, published, previous}, releasePending},
		{"dependency not ready", hrState{1, 1, metav1.ConditionFalse, meta.DependencyNotReadyReason, "", ""}, releasePending},
		{"upgrade of the published chart failed", hrState{1, 1, metav1.ConditionFalse, helmv2.UpgradeFailedReason, published, published}, releaseFailed},
		{"failure of the previous chart", hrState{1, 1, metav1.ConditionFalse, helmv2.InstallFailedReason, previous, previous}, releasePending},
		{"values refused before any attempt", hrState{1, 1, metav1.ConditionFalse, "ValuesError", previous, previous}, releaseFailed},
		{"artifact not loadable", hrState{1, 1, metav1.ConditionFalse, helmv2.ArtifactFailedReason, "", ""}, releaseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Generation: tt.hr.generation}}
			hr.Status.ObservedGeneration = tt.hr.observed
			hr.Status.LastAttemptedRevisionDigest = tt.hr.attempted
			if tt.hr.ready != "" {
				hr.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: tt.hr.ready, Reason: tt.hr.reason}}
			}
			if tt.hr.deployed != "" {
				hr.Status.History = helmv2.Snapshots{{Version: 1, OCIDigest: previous}, {Version: 2, OCIDigest: tt.hr.deployed}}
			}
			if got, _ := judge(hr, published); got != tt.want {
				t.Errorf("judge() = %v, want %v", got, tt.want)
			}
		})
	}
}
