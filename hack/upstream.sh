#!/usr/bin/env bash
# Unpacks the real upstream trees the tests, the demo and the benchmarks run
# against into bin/upstream/ (git-ignored), unchanged:
#   cozystack/packages                          Cozystack's packages tree (v1.6.2)
#   cloud-provider-openstack/charts/...         OpenStack CCM and Cinder CSI charts (2.36.0)
#   bitnami-charts/bitnami/common               the library the OCCM chart depends on (2.14.1)
#
# Where they come from, first match wins:
#   UPSTREAM_DIR   a folder holding the three snapshot tarballs (default:
#                  ../shared/upstream beside the checkout, as in this project's
#                  environment)
#   otherwise      the public repositories at the same tags, cloned with git:
#                    github.com/cozystack/cozystack               tag v1.6.2
#                    github.com/kubernetes/cloud-provider-openstack tag openstack-cloud-controller-manager-2.36.0
#                    github.com/bitnami/charts                    commit 7e704634ef (bitnami/common 2.14.1)
#                  (set UPSTREAM_CLONE=1 to allow the network clone).
# COZYSTACK_PACKAGES (read by the Go side, e2e/upstream) can point at another
# packages tree, e.g. a newer Cozystack checkout's packages/, without this
# script.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/bin/upstream"
src="${UPSTREAM_DIR:-$root/../shared/upstream}"

COZYSTACK=cozystack-v1.6.2.tar.gz
OPENSTACK=cloud-provider-openstack-charts-2.36.0.tar.gz
BITNAMI=bitnami-common-2.14.1.tar.gz

mkdir -p "$out"
if [ -f "$src/$COZYSTACK" ]; then
	pin=$(cd "$src" && sha256sum "$COZYSTACK" "$OPENSTACK" "$BITNAMI" | sha256sum | cut -c1-16)
	if [ "$(cat "$out/.pin" 2>/dev/null)" = "$pin" ] && [ -d "$out/cozystack/packages/system" ]; then
		exit 0
	fi
	echo ">> unpacking the upstream snapshots from $src into $out" >&2
	rm -rf "$out/cozystack" "$out/cloud-provider-openstack" "$out/bitnami-charts"
	for f in "$COZYSTACK" "$OPENSTACK" "$BITNAMI"; do
		tar -xzf "$src/$f" -C "$out"
	done
	echo "$pin" > "$out/.pin"
	exit 0
fi

if [ "${UPSTREAM_CLONE:-0}" != 1 ]; then
	cat >&2 <<EOF
upstream trees not found: $src/$COZYSTACK is missing.
Either point UPSTREAM_DIR at a folder with the snapshot tarballs, point
COZYSTACK_PACKAGES at a Cozystack checkout's packages/ folder, or run
UPSTREAM_CLONE=1 make upstream to clone the public repositories at the pinned tags.
EOF
	exit 1
fi

clone() { # DIR URL REF
	rm -rf "$1" && git init -q "$1" && git -C "$1" fetch -q --depth 1 "$2" "$3" && git -C "$1" checkout -q FETCH_HEAD
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
clone "$tmp/cozystack" https://github.com/cozystack/cozystack v1.6.2
clone "$tmp/cpo" https://github.com/kubernetes/cloud-provider-openstack openstack-cloud-controller-manager-2.36.0
clone "$tmp/bitnami" https://github.com/bitnami/charts 7e704634ef
rm -rf "$out/cozystack" "$out/cloud-provider-openstack" "$out/bitnami-charts"
mkdir -p "$out/cozystack" "$out/cloud-provider-openstack" "$out/bitnami-charts/bitnami"
cp -a "$tmp/cozystack/packages" "$out/cozystack/"
cp -a "$tmp/cpo/charts" "$out/cloud-provider-openstack/"
cp -a "$tmp/bitnami/bitnami/common" "$out/bitnami-charts/bitnami/"
echo clone > "$out/.pin"
