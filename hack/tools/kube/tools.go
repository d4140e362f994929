//go:build tools

// Package tools pins the Kubernetes control-plane binaries the test world runs.
// k8s.io/kubernetes is not meant to be imported as a library: its staging
// repos are replaced with their published tags in go.mod so it resolves.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
