//go:build tools

// Package tools pins Flux's helm-controller for the test world's addon tier.
package tools

import _ "github.com/fluxcd/helm-controller"
