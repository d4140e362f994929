package main

import (
	"slices"
	"testing"
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
