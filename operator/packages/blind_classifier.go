//go:build classifierblind

package packages

// Compiled only into the operator of the catalog suite's backstop spec
// (`go build -tags classifierblind`): the classifier misses what it finds
// in pods, so the spec can show the API server refusing a privileged pod
// that got past the gate. No release build has this file.
func init() { missPodFindings = true }
