package world

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// RepoRoot walks up from the working directory to the directory holding the
// project's go.mod. Test binaries run in their package directory, so this is
// how every suite finds bin/, hack/ and _artifacts/ wherever it lives.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			if modfile.ModulePath(data) == "github.com/cozystack/tenant-operator" {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod of github.com/cozystack/tenant-operator not found above the working directory")
		}
		dir = parent
	}
}

// BinDir finds the directory with the world's third-party binaries:
// $TENANT_WORLD_BIN, else <repo>/bin.
func BinDir() (string, error) {
	if dir := os.Getenv("TENANT_WORLD_BIN"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

func binary(name string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s (run hack/build-world.sh): %w", name, dir, err)
	}
	return p, nil
}

var (
	portsMu sync.Mutex
	// handedOut keeps ports given to one world away from the next one started
	// in the same process before the first has bound them.
	handedOut = map[int]bool{}
)

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut[port] {
			handedOut[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port found")
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// toolVersion reads the version of mod pinned in hack/tools/<tool>/go.mod, so
// the CRDs installed match the controller binary that was built.
func toolVersion(tool, mod string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, "hack", "tools", tool, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == mod {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", path, mod)
}

// moduleDir locates mod@version in the module cache; the build script
// downloaded it, so no network is needed.
func moduleDir(mod, version string) (string, error) {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOMODCACHE: %w", err)
		}
		cache = strings.TrimSpace(string(out))
	}
	escaped, err := module.EscapePath(mod)
	if err != nil {
		return "", err
	}
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, escaped+"@"+ev)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%s@%s is not in the module cache (run hack/build-world.sh): %w", mod, version, err)
	}
	return dir, nil
}
