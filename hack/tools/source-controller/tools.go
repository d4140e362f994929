//go:build tools

// Package tools pins Flux's source-controller and the reference OCI registry
// (distribution), which source-controller already depends on, so the
// registry costs little extra to build.
package tools

import (
	_ "github.com/distribution/distribution/v3/cmd/registry"
	_ "github.com/fluxcd/source-controller"
)
