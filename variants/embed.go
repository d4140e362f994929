// Package variants embeds the per-backend variant definitions: which cloud
// integration a tenant cluster gets, detected from its Nodes. A new backend
// is a new folder here (its components and its detection rule), no code.
package variants

import "embed"

// FS holds <variant>/variant.yaml.
//
//go:embed */variant.yaml
var FS embed.FS
