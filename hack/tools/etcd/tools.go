//go:build tools

// Package tools pins the etcd server the test world runs. etcd's own go.mod
// carries replace directives, so `go install pkg@version` refuses it and a
// wrapper module is the way to build it from the module proxy.
package tools

import _ "go.etcd.io/etcd/server/v3"
