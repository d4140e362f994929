package world

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// dumpState writes the objects one needs to explain a failed run into the
// logs directory, while the API server still runs.
func (w *World) dumpState() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs := w.Clientset
	all := metav1.ListOptions{}
	dumps := []struct {
		name string
		list func() (any, error)
	}{
		{"nodes", func() (any, error) { return cs.CoreV1().Nodes().List(ctx, all) }},
		{"pods", func() (any, error) { return cs.CoreV1().Pods("").List(ctx, all) }},
		{"deployments", func() (any, error) { return cs.AppsV1().Deployments("").List(ctx, all) }},
		{"daemonsets", func() (any, error) { return cs.AppsV1().DaemonSets("").List(ctx, all) }},
		{"events", func() (any, error) { return cs.CoreV1().Events("").List(ctx, all) }},
	}
	var errs []error
	for _, d := range dumps {
		list, err := d.list()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
			continue
		}
		data, err := yaml.Marshal(list)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.WriteFile(filepath.Join(w.Dir, "logs", "state-"+d.name+".yaml"), data, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// copyLogs copies Dir/logs to ArtifactsDir/<Name>, or <Name>-2, ... when an
// earlier world of the same name already left logs there.
func (w *World) copyLogs() (string, error) {
	if err := os.MkdirAll(w.opts.ArtifactsDir, 0o755); err != nil {
		return "", err
	}
	dest := filepath.Join(w.opts.ArtifactsDir, w.Name)
	for i := 2; ; i++ {
		err := os.Mkdir(dest, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		dest = filepath.Join(w.opts.ArtifactsDir, fmt.Sprintf("%s-%d", w.Name, i))
	}
	src := filepath.Join(w.Dir, "logs")
	return dest, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dest, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
