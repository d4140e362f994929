package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRatios(t *testing.T) {
	for _, tc := range []struct {
		in         []float64
		format     string
		wantMedian float64
		wantRuns   string
	}{
		{in: []float64{1.28, 1.45, 1.15, 1.67, 1.84}, format: "%.2f", wantMedian: 1.45, wantRuns: "1.28 / 1.45 / 1.15 / 1.67 / 1.84"},
		{in: []float64{0.85, 1.36, 1.06, 1.57, 1.49}, format: "%.2f", wantMedian: 1.36, wantRuns: "0.85 / 1.36 / 1.06 / 1.57 / 1.49"},
		{in: []float64{57.8}, format: "%.1f", wantMedian: 57.8, wantRuns: "57.8"},
	} {
		in := slices.Clone(tc.in)
		median, runs := ratios(in, tc.format)
		if median != tc.wantMedian || runs != tc.wantRuns {
			t.Errorf("ratios(%v) = %v, %q; want %v, %q", tc.in, median, runs, tc.wantMedian, tc.wantRuns)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("ratios reordered its input: %v", in)
		}
	}
}

// A late draw injected nothing: it is neither a trial nor a failed one.
func TestFaultsLateDraws(t *testing.T) {
	for _, tc := range []struct {
		name      string
		trials    []faultTrial
		wantRow   string
		wantClean bool
	}{
		{
			name: "late draws counted apart",
			trials: []faultTrial{
				{kind: "node", late: true},
				{kind: "node", beforeReady: true, converged: true, toConverge: time.Second},
				{kind: "node", late: true},
				{kind: "node", beforeReady: true, converged: true, toConverge: 3 * time.Second},
			},
			wantRow:   "| 2 | 2 (2) | 2 | 3.00 s, 3.00 s |", // median is the upper middle
			wantClean: true,
		},
		{
			name: "a last draw injected after Ready",
			trials: []faultTrial{
				{kind: "node", late: true},
				{kind: "node", beforeReady: false, converged: true, toConverge: time.Second},
			},
			wantRow:   "| 1 | 0 (1) | 1 | 1.00 s, 1.00 s |",
			wantClean: true,
		},
		{
			name: "a trial that did not converge still fails",
			trials: []faultTrial{
				{kind: "node", late: true},
				{kind: "node", beforeReady: true},
			},
			wantRow:   "| 1 | 1 (1) | 0 | — |",
			wantClean: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report{faults: map[string][]faultTrial{"node": tc.trials}}
			var b strings.Builder
			r.writeFaults(&b)
			if !strings.Contains(b.String(), faultKinds["node"].name+" "+tc.wantRow) {
				t.Errorf("report has no row %q:\n%s", tc.wantRow, b.String())
			}
			if clean := r.faultsClean() == nil; clean != tc.wantClean {
				t.Errorf("faultsClean() == nil is %t, want %t", clean, tc.wantClean)
			}
		})
	}
}
