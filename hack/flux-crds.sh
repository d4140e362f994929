#!/usr/bin/env bash
# Copies the CRDs of the Flux controllers pinned in hack/tools into
# manifests/flux/crds, so that the operator installs exactly the API the
# controllers it runs were built with. Run by `make generate`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/manifests/flux/crds"
rm -f "$out"/*.yaml
for group in source-controller helm-controller; do
	module=github.com/fluxcd/$group
	version=$(cd "$root/hack/tools/$group" && go list -m -f '{{.Version}}' "$module")
	dir=$(cd "$root/hack/tools/$group" && go mod download -json "$module@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	for f in "$dir"/config/crd/bases/*.yaml; do
		cp "$f" "$out/"
		chmod 644 "$out/$(basename "$f")"
	done
done
