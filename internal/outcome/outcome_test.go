package outcome

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name         string
		err          error
		wantReason   string
		wantTerminal bool
	}{
		{"terminal", Terminal("ValuesRejected", "spec.x: %s", "bad"), "ValuesRejected", true},
		{"retrying", Retry("ArtifactFailed", errors.New("registry down")), "ArtifactFailed", false},
		{"wrapped retrying", errors.Join(errors.New("other"), Retry("InstallFailed", errors.New("x"))), "InstallFailed", false},
		{"unclassified", errors.New("boom"), "ReconciliationFailed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, terminal := Classify(tc.err)
			if reason != tc.wantReason || terminal != tc.wantTerminal {
				t.Errorf("Classify() = %q, %t; want %q, %t", reason, terminal, tc.wantReason, tc.wantTerminal)
			}
		})
	}
}

// A retrying object is tried again at most MaxRetryDelay after each failure,
// however long it has been failing, and at once after a success.
func TestRateLimiterCapsBackoff(t *testing.T) {
	rl := RateLimiter()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "tenant"}}
	var last time.Duration
	for range 40 {
		last = rl.When(req)
		if last > MaxRetryDelay {
			t.Fatalf("backoff %s exceeds %s", last, MaxRetryDelay)
		}
	}
	if last != MaxRetryDelay {
		t.Errorf("after 40 failures the backoff is %s, want the cap %s", last, MaxRetryDelay)
	}
	rl.Forget(req)
	if d := rl.When(req); d != 5*time.Millisecond {
		t.Errorf("after Forget the backoff is %s, want 5ms", d)
	}
}

func TestBackoffNeverEnds(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name         string
		first, limit time.Duration
		want         []time.Duration // then limit for ever
	}{
		{"doubles up to the cap", 50 * ms, 2 * time.Second, []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms}},
		{"starts at the cap", 10 * time.Second, 10 * time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := Backoff(tc.first, tc.limit)
			for i := range 1000 {
				want := tc.limit
				if i < len(tc.want) {
					want = tc.want[i]
				}
				if got := next(); got != want {
					t.Fatalf("delay %d = %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestAfterStatusWrite(t *testing.T) {
	terminal := Terminal("InvalidSpec", "spec.x: bad")
	retry := Retry("RegistryDown", errors.New("connection refused"))
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "tenantbundles"}, "t", errors.New("changed"))
	for _, tc := range []struct {
		name             string
		reconcile, write error
		wantNil          bool
		wantReason       string
		wantTerminal     bool
		wantConflict     bool
	}{
		{name: "nothing failed", wantNil: true},
		{name: "terminal, written", reconcile: terminal, wantReason: "InvalidSpec", wantTerminal: true},
		{name: "terminal, write failed: retried so the verdict reaches the status", reconcile: terminal, write: conflict, wantReason: "InvalidSpec", wantConflict: true},
		{name: "retrying, write failed", reconcile: retry, write: conflict, wantReason: "RegistryDown", wantConflict: true},
		{name: "succeeded, write failed", write: conflict, wantReason: "StatusWriteFailed", wantConflict: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := AfterStatusWrite(tc.reconcile, tc.write)
			if tc.wantNil {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				return
			}
			reason, terminal := Classify(err)
			if reason != tc.wantReason || terminal != tc.wantTerminal {
				t.Errorf("Classify = %q, %v; want %q, %v", reason, terminal, tc.wantReason, tc.wantTerminal)
			}
			if got := errors.Is(err, reconcile.TerminalError(nil)); got != tc.wantTerminal {
				t.Errorf("controller-runtime sees terminal = %v, want %v", got, tc.wantTerminal)
			}
			if apierrors.IsConflict(err) != tc.wantConflict {
				t.Errorf("IsConflict = %v, want %v", !tc.wantConflict, tc.wantConflict)
			}
		})
	}
}
