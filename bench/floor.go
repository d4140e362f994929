package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/cozystack/tenant-operator/e2e/framework"
)

// measureFloor reads the operator's RSS at the moment it opens its first
// connection to the API server, before any response: what the Go runtime,
// the package initialisers of everything the binary links and flag parsing
// have mapped by then, before the operator has done any work of its own.
// The server it is given accepts connections and never answers, so the
// process is held right there while /proc is read.
func measureFloor(ctx context.Context, bin string) (framework.Memory, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return framework.Memory{}, err
	}
	defer ln.Close()
	dir, err := os.MkdirTemp("", "bench-floor-")
	if err != nil {
		return framework.Memory{}, err
	}
	defer os.RemoveAll(dir)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(silentKubeconfig(ln.Addr().String())), 0o600); err != nil {
		return framework.Memory{}, err
	}
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache"))
	cmd.Env = append(os.Environ(), "POD_NAMESPACE=bench", "POD_NAME=bench-floor")
	if err := cmd.Start(); err != nil {
		return framework.Memory{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	conns := make(chan net.Conn, 1)
	go func() {
		// Closing the listener on return ends this Accept.
		if conn, err := ln.Accept(); err == nil {
			conns <- conn
		}
	}()
	select {
	case conn := <-conns:
		defer conn.Close()
		return framework.ReadMemory(cmd.Process.Pid)
	case err := <-exited:
		exited <- err
		return framework.Memory{}, fmt.Errorf("the operator exited before its first API request: %v", err)
	case <-time.After(time.Minute):
		return framework.Memory{}, fmt.Errorf("the operator made no API request within a minute")
	case <-ctx.Done():
		return framework.Memory{}, ctx.Err()
	}
}

// silentKubeconfig points at addr with a token; nothing is ever checked.
func silentKubeconfig(addr string) string {
	return `apiVersion: v1
kind: Config
clusters: [{name: silent, cluster: {server: "https://` + addr + `", insecure-skip-tls-verify: true}}]
users: [{name: silent, user: {token: unused}}]
contexts: [{name: silent, context: {cluster: silent, user: silent}}]
current-context: silent
`
}
