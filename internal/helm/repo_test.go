package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
)

// packChart builds a chart archive in memory.
func packChart(t *testing.T, name, version string) []byte {
	t.Helper()
	dir := t.TempDir()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: name, Version: version}}
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestPullRepoChartHTTP(t *testing.T) {
	archives := map[string][]byte{"2.36.1": packChart(t, "ccm", "2.36.1"), "2.37.0": packChart(t, "ccm", "2.37.0"), "2.37.2": packChart(t, "ccm", "2.37.2")}
	tamper := false
	mux := http.NewServeMux()
	mux.HandleFunc("/repo/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		b.WriteString("apiVersion: v1\nentries:\n  ccm:\n")
		for v, a := range archives {
			sum := sha256.Sum256(a)
			fmt.Fprintf(&b, "  - name: ccm\n    version: %s\n    digest: %s\n    urls: [charts/ccm-%s.tgz]\n", v, hex.EncodeToString(sum[:]), v)
		}
		_, _ = w.Write(b.Bytes())
	})
	mux.HandleFunc("/repo/charts/", func(w http.ResponseWriter, r *http.Request) {
		for v, a := range archives {
			if r.URL.Path == "/repo/charts/ccm-"+v+".tgz" {
				if tamper {
					a = append(append([]byte(nil), a...), 0)
				}
				_, _ = w.Write(a)
				return
			}
		}
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tests := []struct {
		name        string
		rc          RepoChart
		tamper      bool
		wantVersion string
		wantErr     error
	}{
		{"highest match of a minor", RepoChart{Repo: srv.URL + "/repo", Name: "ccm", Version: "2.37.x", Insecure: true}, false, "2.37.2", nil},
		{"exact", RepoChart{Repo: srv.URL + "/repo/", Name: "ccm", Version: "2.36.1", Insecure: true}, false, "2.36.1", nil},
		{"no match", RepoChart{Repo: srv.URL + "/repo", Name: "ccm", Version: "2.38.x", Insecure: true}, false, "", ErrChartNotFound},
		{"plain http refused unless insecure", RepoChart{Repo: srv.URL + "/repo", Name: "ccm", Version: "2.37.x"}, false, "", ErrChartInvalid},
		{"digest mismatch", RepoChart{Repo: srv.URL + "/repo", Name: "ccm", Version: "2.37.0", Insecure: true}, true, "", ErrChartInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tamper = tt.tamper
			ch, err := PullRepoChart(context.Background(), tt.rc)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ch.Version != tt.wantVersion {
				t.Fatalf("version = %s, want %s", ch.Version, tt.wantVersion)
			}
		})
	}
}

func TestBestVersion(t *testing.T) {
	released := []string{"2.34.1", "2.35.0", "2.36.0", "2.36.1-rc.1", "3.0.0"}
	tests := []struct {
		name, version, fallback string
		want                    string
		wantNote                bool
		wantErr                 error
	}{
		{name: "the minor's own release", version: "2.36.x", fallback: "<= 2.36.x", want: "2.36.0"},
		{name: "not released for the minor yet: the newest not newer", version: "2.37.x", fallback: "<= 2.37.x", want: "2.36.0", wantNote: true},
		{name: "no fallback: not found", version: "2.37.x", wantErr: ErrChartNotFound},
		{name: "the fallback matches nothing either", version: "2.33.x", fallback: "<= 2.33.x", wantErr: ErrChartNotFound},
		{name: "a bad constraint", version: "two", wantErr: ErrChartInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note, err := bestVersion(RepoChart{Name: "ccm", Repo: "oci://r", Version: tt.version, Fallback: tt.fallback}, released)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || (note != "") != tt.wantNote {
				t.Fatalf("bestVersion = %q, note %q, err %v; want %q (note: %v)", got, note, err, tt.want, tt.wantNote)
			}
		})
	}
}
