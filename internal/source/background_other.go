//go:build !linux

package source

// inBackground runs f in a goroutine; only Linux lowers its priority.
func inBackground(f func()) { go f() }
