package framework

import (
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cozystack/tenant-operator/e2e/world"
)

// SetSuiteDefaults gives the tenant suites the same Gomega timing: worlds
// and bootstraps take seconds, not the library's default one second.
func SetSuiteDefaults() {
	// An Eventually given a context has no timeout of its own otherwise.
	EnforceDefaultTimeoutsWhenUsingContexts()
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(3 * time.Second)
	SetDefaultConsistentlyPollingInterval(250 * time.Millisecond)
}

// anyFailed remembers whether a spec of the suite failed, to keep the
// worlds' logs for the post-mortem.
var anyFailed atomic.Bool

// TrackFailures registers the report hook behind anyFailed; call it at
// package level: var _ = framework.TrackFailures().
func TrackFailures() bool {
	ReportAfterEach(func(r SpecReport) {
		if r.Failed() {
			anyFailed.Store(true)
		}
	})
	return true
}

// DeferCleanupWorld stops w when the current container ends, keeping its
// logs when anything in the suite failed.
func DeferCleanupWorld(w *world.World) {
	DeferCleanup(func() {
		Expect(w.Stop(anyFailed.Load() || CurrentSpecReport().Failed())).To(Succeed())
	})
}
