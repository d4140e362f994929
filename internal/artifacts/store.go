// Package artifacts keeps the chart archives the operator builds from the
// packages artifact and serves them to helm-controller over HTTP, the way
// source-controller serves its own: the operator is the producer of the
// ExternalArtifacts that addon and catalog HelmReleases point at.
package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Store writes archives under Dir by content digest, so a rebuild after a
// restart finds the same file, and a URL never changes meaning.
type Store struct {
	Dir string
	// BaseURL is how helm-controller reaches the server, e.g.
	// http://10.0.0.5:9795 (the node's address: both pods are on the host
	// network, and no Service works before the CNI).
	BaseURL string
}

// Put stores data and returns the Flux artifact describing it.
func (s *Store) Put(name, version string, data []byte) (*meta.Artifact, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	file := hexSum + ".tgz"
	path := filepath.Join(s.Dir, file)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return nil, err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	size := int64(len(data))
	return &meta.Artifact{
		Path: name + "/" + file,
		URL:  s.BaseURL + "/" + name + "/" + file,
		// <version>@<digest>: helm-controller then stamps the digest into
		// the chart version, so new content upgrades even when the chart
		// author did not bump the version.
		Revision:       version + "@sha256:" + hexSum,
		Digest:         "sha256:" + hexSum,
		LastUpdateTime: metav1.Now(),
		Size:           &size,
	}, nil
}

// Handler serves /<name>/<sha256>.tgz from the store; the name is only
// there for people reading URLs.
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{name}/{file}", func(w http.ResponseWriter, r *http.Request) {
		file := r.PathValue("file")
		if filepath.Base(file) != file || filepath.Ext(file) != ".tgz" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join(s.Dir, file))
	})
	return mux
}

// Server is a manager Runnable serving the store on addr.
type Server struct {
	Store *Store
	Addr  string
}

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("artifact server: %w", err)
	}
	srv := &http.Server{Handler: s.Store.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NeedLeaderElection is false: a standby must serve too, since the
// ExternalArtifacts may still point at it right after a failover.
func (s *Server) NeedLeaderElection() bool { return false }
