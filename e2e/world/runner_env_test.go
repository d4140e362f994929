package world

import "testing"

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for in, want := range map[string]string{
		"plain":          "plain",
		"$(A)-$(B)":      "x-y",
		"$(MISSING)":     "$(MISSING)",
		"$$(A)":          "$(A)",
		"cost $5":        "cost $5",
		"$(A":            "$(A",
		"trailing $":     "trailing $",
		"--dir=$(A)/sub": "--dir=x/sub",
	} {
		if got := expandVars(in, lookup); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRewritePath(t *testing.T) {
	for _, c := range []struct{ in, from, to, want string }{
		{"/cache", "/cache", "/tmp/c", "/tmp/c"},
		{"--dir=/cache/x", "/cache", "/tmp/c", "--dir=/tmp/c/x"},
		{"/cached", "/cache", "/tmp/c", "/cached"},
		{"/data/cache", "/cache", "/tmp/c", "/data/cache"},
		{"a=/cache,b=/cache/y", "/cache/", "/tmp/c", "a=/tmp/c,b=/tmp/c/y"},
	} {
		if got := rewritePath(c.in, c.from, c.to); got != c.want {
			t.Errorf("rewritePath(%q, %q) = %q, want %q", c.in, c.from, got, c.want)
		}
	}
}

func TestImageRepository(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io/cozystack/op:v1":           "ghcr.io/cozystack/op",
		"localhost:5000/op":                 "localhost:5000/op",
		"localhost:5000/op:v1@sha256:abc":   "localhost:5000/op",
		"op@sha256:abc":                     "op",
		"registry.example/a/b/c:1.2.3-rc.1": "registry.example/a/b/c",
	} {
		if got := imageRepository(in); got != want {
			t.Errorf("imageRepository(%q) = %q, want %q", in, got, want)
		}
	}
}
