package trim

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// started runs a Trimmer whose releases are reported on the returned channel.
func started(t *testing.T, quiet time.Duration) (*Trimmer, <-chan struct{}) {
	t.Helper()
	released := make(chan struct{}, 10)
	tr := &Trimmer{Quiet: quiet, Log: logr.Discard(), Release: func() (Result, error) {
		released <- struct{}{}
		return Result{}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return tr, released
}

func expectRelease(t *testing.T, released <-chan struct{}, within time.Duration) {
	t.Helper()
	select {
	case <-released:
	case <-time.After(within):
		t.Fatalf("no release within %s", within)
	}
}

func expectNoRelease(t *testing.T, released <-chan struct{}, during time.Duration) {
	t.Helper()
	select {
	case <-released:
		t.Fatal("released without activity since the last release")
	case <-time.After(during):
	}
}

func TestReleasesOncePerQuietPeriod(t *testing.T) {
	const quiet = 50 * time.Millisecond
	tr, released := started(t, quiet)
	expectRelease(t, released, 5*time.Second)
	// Idle: a second release would only fault the same pages back in.
	expectNoRelease(t, released, 10*quiet)
	tr.Touch()
	expectRelease(t, released, 5*time.Second)
	expectNoRelease(t, released, 10*quiet)
}

func TestActivityPostponesTheRelease(t *testing.T) {
	const quiet = 200 * time.Millisecond
	tr, released := started(t, quiet)
	deadline := time.Now().Add(5 * quiet)
	for time.Now().Before(deadline) {
		tr.Touch()
		select {
		case <-released:
			t.Fatal("released while requests kept coming")
		case <-time.After(quiet / 10):
		}
	}
	expectRelease(t, released, 5*time.Second)
}

func TestLeaseRenewalsAreNotActivity(t *testing.T) {
	const quiet = 50 * time.Millisecond
	tr, released := started(t, quiet)
	expectRelease(t, released, 5*time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	c := &http.Client{Transport: tr.Wrap(http.DefaultTransport)}
	get := func(path string) {
		t.Helper()
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	get("/apis/coordination.k8s.io/v1/namespaces/cozy-tenant-operator/leases/tenant-operator")
	expectNoRelease(t, released, 10*quiet)
	get("/apis/cozystack.io/v1alpha1/tenantbundles")
	expectRelease(t, released, 5*time.Second)
}

func TestTouchBeforeStartIsHarmless(t *testing.T) {
	(&Trimmer{Quiet: time.Millisecond}).Touch()
}
