#!/usr/bin/env bash
# Adds a Kubernetes release the oracle can build: writes releases/vX.Y.Z.mod (and its
# .sum) requiring k8s.io/kubernetes at that release, with every staging module it
# requires at v0.Y.Z (k8s.io/kubernetes requires them at v0.0.0 and replaces them with
# ./staging, which only its own build sees). Usage: releases/add-release.sh v1.37.2
# (go.mod itself is the default release, v1.35.4, written the same way).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: releases/add-release.sh vX.Y.Z}
staging=v0.${version#v1.}
dir=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
mod=releases/$version.mod
# Our code needs Go 1.25 (testing/synctest); a release that asks for more keeps its own.
go_line=$(printf '%s\n' "$(grep -m1 '^go ' "$dir/go.mod" | cut -d' ' -f2)" 1.25.0 | sort -V | tail -1)
{
  echo "module podstatus.example/upstream"
  echo
  echo "go $go_line"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  grep '=> ./staging' "$dir/go.mod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
} > "$mod"
go mod tidy -modfile "$mod"
echo "wrote $mod"
