package packages

import (
	"fmt"
	"os"
	"path/filepath"
)

// The real upstream trees the suites, the demo and the benchmarks run
// against, unpacked unchanged by `make upstream` (hack/upstream.sh) into
// bin/upstream/. They are never copied into the repository.

// CozystackDir is the root of Cozystack's packages tree (system/, library/,
// apps/, core/): $COZYSTACK_PACKAGES when set (for example a newer
// Cozystack checkout's packages/), else bin/upstream/cozystack/packages.
func CozystackDir() (string, error) {
	if dir := os.Getenv("COZYSTACK_PACKAGES"); dir != "" {
		return checkDir(dir, "system")
	}
	return upstream("cozystack", "packages")
}

// OpenStackChartsDir holds cloud-provider-openstack's charts/
// (openstack-cloud-controller-manager, cinder-csi-plugin).
func OpenStackChartsDir() (string, error) { return upstream("cloud-provider-openstack", "charts") }

// BitnamiCommonDir is Bitnami's common library chart, which the OpenStack
// CCM chart lists as a dependency from Bitnami's repository.
func BitnamiCommonDir() (string, error) { return upstream("bitnami-charts", "bitnami", "common") }

func upstream(parts ...string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return checkDir(filepath.Join(append([]string{root, "bin", "upstream"}, parts...)...), "")
}

func checkDir(dir, inside string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(filepath.Join(abs, inside)); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("upstream tree %s not found (run `make upstream`, or set COZYSTACK_PACKAGES to a Cozystack checkout's packages/)", filepath.Join(abs, inside))
	}
	return abs, nil
}

// WithDependencies copies the chart at dir into a new temporary directory
// (remove its parent when done) with each of deps copied into its charts/,
// as `helm dependency build` vendors what Chart.yaml lists from a
// repository, and returns the copy's path.
func WithDependencies(dir string, deps ...string) (string, error) {
	tmp, err := os.MkdirTemp("", "chart-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(tmp, filepath.Base(dir))
	if err := copyDir(dir, out); err != nil {
		return "", err
	}
	for _, d := range deps {
		if err := copyDir(d, filepath.Join(out, "charts", filepath.Base(d))); err != nil {
			return "", err
		}
	}
	return out, nil
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: only regular files and directories are copied", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
