package source

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// memFS is a read-only tree of files held in memory: an artifact as it came
// out of its layer, served while its copy on disk is being written.
type memFS struct {
	files map[string][]byte
	dirs  map[string][]fs.DirEntry // sorted by name, as fs.ReadDir promises
}

func newMemFS(files map[string][]byte) *memFS {
	m := &memFS{files: files, dirs: map[string][]fs.DirEntry{".": nil}}
	// Each file registers itself and the directories above it in their
	// parents, stopping at the first one already registered.
	seen := map[string]bool{}
	for name := range files {
		child, isDir := name, false
		for child != "." && !seen[child] {
			seen[child] = true
			parent := path.Dir(child)
			m.dirs[parent] = append(m.dirs[parent], m.entry(child, isDir))
			child, isDir = parent, true
		}
	}
	for _, entries := range m.dirs {
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	}
	return m
}

func (m *memFS) entry(name string, isDir bool) fs.DirEntry {
	return fs.FileInfoToDirEntry(memInfo{name: path.Base(name), size: int64(len(m.files[name])), dir: isDir})
}

func (m *memFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if data, ok := m.files[name]; ok {
		return &memFile{info: memInfo{name: path.Base(name), size: int64(len(data))}, Reader: bytes.NewReader(data)}, nil
	}
	if entries, ok := m.dirs[name]; ok {
		return &memDir{info: memInfo{name: path.Base(name), dir: true}, entries: entries}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// ReadFile returns a copy: callers of fs.ReadFile may modify what they get.
func (m *memFS) ReadFile(name string) ([]byte, error) {
	if data, ok := m.files[name]; ok {
		return bytes.Clone(data), nil
	}
	if _, ok := m.dirs[name]; ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, ok := m.dirs[name]
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return slices.Clone(entries), nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

type memFile struct {
	info memInfo
	*bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error               { return nil }

type memDir struct {
	info    memInfo
	entries []fs.DirEntry
	read    int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Close() error               { return nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: fs.ErrInvalid}
}

func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.read:]
	if n <= 0 {
		d.read = len(d.entries)
		return slices.Clone(rest), nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	rest = rest[:min(n, len(rest))]
	d.read += len(rest)
	return slices.Clone(rest), nil
}
