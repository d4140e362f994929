package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/content"
)

// tree serves an artifact's files from memory until its copy on disk is
// complete, then from disk. Writing a tree of a hundred files took ~20 ms on
// a busy node, on the bootstrap's critical path between the TenantBundle
// and its first install, and the charts were then read back from disk; the
// memory is given back once the copy is written.
//
// A tree over the memory limit keeps only its hot paths in memory (the
// charts the bundles name): a name outside them waits for the disk copy,
// which is written in the background. Cozystack's packages tree is ~40 MiB
// in ~5,000 files, and writing it before serving held the first install
// back by about half a second.
type tree struct {
	disk fs.FS
	mem  atomic.Pointer[memFS]
	// partial: mem holds only the names hot reports; written is closed once
	// the disk copy is complete (or failed, see err).
	partial bool
	hot     func(string) bool
	written chan struct{}
	err     error
}

// current is the FS that can answer for name: memory while it holds it,
// else the disk copy, waited for.
func (t *tree) current(name string) (fs.FS, error) {
	if m := t.mem.Load(); m != nil && (!t.partial || t.hot(name)) {
		return m, nil
	}
	if t.written != nil {
		<-t.written
		if t.err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: t.err}
		}
	}
	return t.disk, nil
}

func (t *tree) Open(name string) (fs.File, error) {
	f, err := t.current(name)
	if err != nil {
		return nil, err
	}
	return f.Open(name)
}

func (t *tree) ReadFile(name string) ([]byte, error) {
	f, err := t.current(name)
	if err != nil {
		return nil, err
	}
	return fs.ReadFile(f, name)
}

func (t *tree) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := t.current(name)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(f, name)
}

// unpack reads the layer into memory and writes it to the cache directory
// in the background. Past the memory limit only hot files stay in memory
// and the compressed layer is kept to write the whole tree from.
func (p *Puller) unpack(r *content.VerifyReader, dgst digest.Digest) (*Artifact, error) {
	dir := filepath.Join(p.CacheDir, dgst.Encoded())
	limit := p.MemoryLimit
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	hot := p.Hot
	if hot == nil {
		hot = func(string) bool { return false }
	}
	var layer bytes.Buffer
	u := &unpacker{files: map[string][]byte{}, limit: limit, hot: hot}
	if err := u.untar(io.TeeReader(r, &layer)); err != nil {
		return nil, err
	}
	// Drain and verify: a tar reader may stop before the gzip trailer.
	if _, err := io.Copy(io.Discard, io.TeeReader(r, &layer)); err != nil {
		return nil, err
	}
	if err := r.Verify(); err != nil {
		return nil, fmt.Errorf("%w: layer: %v", ErrInvalidArtifact, err)
	}
	t := &tree{disk: os.DirFS(dir), partial: u.over, hot: hot, written: make(chan struct{})}
	t.mem.Store(newMemFS(u.files))
	art := &Artifact{Digest: dgst.String(), FS: t}
	files := u.files
	if !u.over {
		layer = bytes.Buffer{} // everything is in files
	}
	p.mu.Lock()
	if p.unwritten == nil {
		p.unwritten = map[string]*Artifact{}
	}
	p.unwritten[art.Digest] = art
	p.mu.Unlock()
	p.persisting.Add(1)
	inBackground(func() {
		defer p.persisting.Done()
		var err error
		if t.partial {
			err = p.persistLayer(layer.Bytes(), dir)
		} else {
			err = p.persist(files, dir)
		}
		p.mu.Lock()
		delete(p.unwritten, art.Digest)
		p.mu.Unlock()
		if err != nil {
			p.Log.Error(err, "writing the artifact to the cache", "digest", art.Digest)
			if t.partial {
				t.err = err // what is not in memory cannot be served
			}
			close(t.written)
			return
		}
		close(t.written)
		t.mem.Store(nil)
	})
	return art, nil
}

// persistLayer extracts a (verified) layer into the cache, as persist does
// with files already in memory.
func (p *Puller) persistLayer(layer []byte, dir string) error {
	if err := os.MkdirAll(p.CacheDir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(p.CacheDir, ".pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := eachFile(bytes.NewReader(layer), func(name string, r io.Reader, _ int64) error {
		return writeFile(tmp, name, r)
	}); err != nil {
		return err
	}
	return commit(tmp, dir)
}

// persist writes files into a temporary sibling of dir and renames it into
// place, so a crash mid-way never leaves a half tree that looks complete.
func (p *Puller) persist(files map[string][]byte, dir string) error {
	tmp, err := tempTree(p.CacheDir, files)
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	return commit(tmp, dir)
}

// tempTree writes files into a new temporary directory of cacheDir.
func tempTree(cacheDir string, files map[string][]byte) (string, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cacheDir, ".pull-")
	if err != nil {
		return "", err
	}
	for name, data := range files {
		if err := writeFile(tmp, name, bytes.NewReader(data)); err != nil {
			_ = os.RemoveAll(tmp)
			return "", err
		}
	}
	return tmp, nil
}

// WaitWritten waits until every tree served from memory has been written to
// the cache directory (or failed to be).
func (p *Puller) WaitWritten() { p.persisting.Wait() }

func commit(tmp, dir string) error {
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return err
	}
	_ = os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

// unpacker keeps regular files in memory until they exceed limit; past
// it, only the hot ones.
type unpacker struct {
	files map[string][]byte
	size  int64
	limit int64
	hot   func(string) bool
	over  bool
}

func (u *unpacker) untar(r io.Reader) error {
	return eachFile(r, u.add)
}

// eachFile calls f with every regular file of a tar.gz, by its clean name.
func eachFile(r io.Reader, f func(name string, r io.Reader, size int64) error) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArtifact, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidArtifact, err)
		}
		// Links and devices are ignored: a chart tree needs neither, and
		// following links out of the tree would be a hazard.
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if h.Typeflag != tar.TypeReg || name == "" {
			continue
		}
		if err := f(name, io.LimitReader(tr, h.Size), h.Size); err != nil {
			return err
		}
	}
}

func (u *unpacker) add(name string, r io.Reader, size int64) error {
	if !u.over && u.size+size > u.limit {
		// Past the limit: drop what is not hot; the disk copy will have it.
		u.over = true
		for n, data := range u.files {
			if !u.hot(n) {
				delete(u.files, n)
				u.size -= int64(len(data))
			}
		}
	}
	if u.over && !u.hot(name) {
		return nil
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArtifact, err)
	}
	u.files[name] = data
	u.size += int64(len(data))
	return nil
}

// writeFile writes one file of the tree under root; name is a clean,
// slash-separated path inside the tree.
func writeFile(root, name string, r io.Reader) error {
	target := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
