// Package bundles embeds the bundle definitions: which components a tenant
// cluster runs, in which tier, from which chart, after what, with which
// values. Data, not code: a new component is a YAML edit.
package bundles

import "embed"

// FS holds <bundle>/bundle.yaml and <bundle>/addons.yaml.
//
//go:embed */*.yaml
var FS embed.FS
