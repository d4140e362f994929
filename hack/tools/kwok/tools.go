//go:build tools

// Package tools pins kwok, which turns Nodes and Pods of fake nodes Ready
// without a container runtime.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
