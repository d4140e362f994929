// Package manifests embeds the manifests the binaries apply: our CRDs (generated
// by controller-gen from operator/apis) and, later, Flux and the seed.
package manifests

import "embed"

// CRDs holds crds/*.yaml.
//
//go:embed crds/*.yaml
var CRDs embed.FS
