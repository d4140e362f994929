package main

import (
	"slices"
	"testing"
)

func TestParseSizes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "1,10,50", want: []int{1, 10, 50}},
		{in: " 3 , 7 ,", want: []int{3, 7}},
		{in: "0", wantErr: true},
		{in: "ten", wantErr: true},
	} {
		got, err := parseSizes(tc.in)
		if (err != nil) != tc.wantErr {
			t.Fatalf("parseSizes(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
		}
		if !tc.wantErr && !slices.Equal(got, tc.want) {
			t.Errorf("parseSizes(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
