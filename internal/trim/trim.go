// Package trim gives back, once the operator has gone quiet, the memory
// that only its start-up and its bootstrap needed.
//
// Measured at idle with the full bundle, about 46 of the operator's 65 MiB
// resident were pages of its own executable: code and read-only data that
// package initialisers, the CRD install, Helm's first install and the
// caches' first lists touched once. They stay mapped for the life of the
// process although an idle operator (a Lease renewal every 15 s, a watch
// now and then) runs a small fraction of them. The Trimmer waits until no
// API request but the Lease's has been made for Quiet, then drops those
// pages from the process (they stay in the page cache, so the next use is
// a minor fault, not a read from disk) and returns the Go heap's free pages
// to the kernel. Any later API request arms it again.
package trim

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// Trimmer is a manager.Runnable; Wrap its transport into every client's
// rest.Config so that API requests count as activity.
type Trimmer struct {
	// Quiet is how long without API requests (Lease renewals aside)
	// before a release.
	Quiet time.Duration
	Log   logr.Logger
	// Release does the work; nil means releasing this process's pages.
	Release func() (Result, error)

	mu      sync.Mutex
	running bool
	// armed: the timer is set and will look at last when it fires.
	armed bool
	last  time.Time
	timer *time.Timer
}

// Result is what one release did, for the log.
type Result struct {
	// Dropped is the size of the executable's read-only mappings given up.
	Dropped uint64
	// Before and After are the resident set size around the release.
	Before, After uint64
}

// NeedLeaderElection is false: a standby replica idles too.
func (t *Trimmer) NeedLeaderElection() bool { return false }

// Start arms the timer (start-up is activity) and disarms it when ctx ends.
func (t *Trimmer) Start(ctx context.Context) error {
	t.mu.Lock()
	t.running, t.armed, t.last = true, true, time.Now()
	t.timer = time.AfterFunc(t.Quiet, t.fire)
	t.mu.Unlock()
	<-ctx.Done()
	t.mu.Lock()
	t.running = false
	t.timer.Stop()
	t.mu.Unlock()
	return nil
}

// Touch records activity. The timer is reset only when it has fired, so a
// busy operator pays a mutex per request, not a timer reset.
func (t *Trimmer) Touch() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	if t.running && !t.armed {
		t.armed = true
		t.timer.Reset(t.Quiet)
	}
}

func (t *Trimmer) fire() {
	t.mu.Lock()
	if !t.running {
		t.mu.Unlock()
		return
	}
	if rest := t.Quiet - time.Since(t.last); rest > 0 {
		t.timer.Reset(rest)
		t.mu.Unlock()
		return
	}
	t.armed = false
	t.mu.Unlock()
	release := t.Release
	if release == nil {
		release = releaseSelf
	}
	res, err := release()
	if err != nil {
		// Nothing is lost: the pages stay resident, as without a Trimmer.
		t.Log.Error(err, "releasing idle memory")
		return
	}
	t.Log.V(1).Info("released idle memory", "executableMiB", mib(res.Dropped), "rssBeforeMiB", mib(res.Before), "rssAfterMiB", mib(res.After))
}

func mib(b uint64) uint64 { return b >> 20 }

// Wrap is a transport.WrapperFunc for rest.Config.Wrap.
func (t *Trimmer) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{t: t, next: rt}
}

type roundTripper struct {
	t    *Trimmer
	next http.RoundTripper
}

// leasePath prefixes the only requests an idle operator keeps making on
// its own; counting them would keep it from ever being quiet.
const leasePath = "/apis/coordination.k8s.io/"

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, leasePath) {
		r.t.Touch()
	}
	return r.next.RoundTrip(req)
}
