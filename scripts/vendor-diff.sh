#!/usr/bin/env bash
# vendor/patches/<crate>.patch: each vendored crate (vendor/<crate>/) as one diff against the
# crate as published, so a reviewer reads attnzoo's patch whole (vendor/README.md indexes them).
#
#   scripts/vendor-diff.sh           regenerate vendor/patches/*.patch
#   scripts/vendor-diff.sh --check   exit 1 if a committed patch differs from what vendor/ gives
#
# The published crate comes through cargo: a throwaway package in a temporary folder depending on
# `<crate> = "=<version>"` (the name and version in vendor/<crate>/Cargo.toml), `cargo fetch`, then
# the .crate archive (a tar.gz) from cargo's registry cache is unpacked. (The workspace's
# `[patch.crates-io]` replaces these crates, so its own builds never download them.)
#
# What is compared: src/, tests/, benches/, examples/, build.rs and Cargo.toml — what cargo builds.
# Left out: README.md (vendor/<crate>/README.md describes the patch in place of the upstream one),
# licence files and other documents (the vendored copies add the licence texts and drop upstream's
# design notes), and packaging metadata the registry adds (.cargo_vcs_info.json, Cargo.toml.orig,
# Cargo.lock). Cargo.toml's leading comment block (the registry's "automatically generated"
# notice, or attnzoo's note in its place) is dropped on both sides; everything after it is compared.
# The patch has no timestamps, so it is the same on every machine.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
registry_cache="${CARGO_HOME:-$HOME/.cargo}/registry/cache"

# field FILE KEY: the value of `KEY = "..."` in the [package] table of a Cargo.toml.
field() {
  awk -v key="$2" '
    /^\[/ { in_package = ($0 == "[package]") }
    in_package && $1 == key && $2 == "=" { gsub(/"/, "", $3); print $3; exit }
  ' "$1"
}

# crate_archive NAME VERSION: the path of NAME-VERSION.crate in cargo's cache, fetched if absent.
crate_archive() {
  local name=$1 version=$2 found
  found=$(compgen -G "$registry_cache/*/$name-$version.crate" | head -n 1 || true)
  if [ -z "$found" ]; then
    local pkg="$work/fetch-$name"
    mkdir -p "$pkg/src"
    printf '[package]\nname = "vendor-diff-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n%s = "=%s"\n' \
      "$name" "$version" > "$pkg/Cargo.toml"
    : > "$pkg/src/lib.rs"
    (cd "$pkg" && CARGO_TARGET_DIR="$work/target" cargo fetch --quiet --target x86_64-unknown-linux-gnu) >&2
    found=$(compgen -G "$registry_cache/*/$name-$version.crate" | head -n 1 || true)
  fi
  [ -n "$found" ] || { echo "$name $version: not in cargo's registry cache after cargo fetch" >&2; exit 1; }
  printf '%s\n' "$found"
}

# stage FROM TO: copy what is compared from crate folder FROM into TO.
stage() {
  local from=$1 to=$2 item
  mkdir -p "$to"
  for item in src tests benches examples build.rs; do
    [ -e "$from/$item" ] && cp -R "$from/$item" "$to/"
  done
  # Cargo.toml without its leading comment block.
  awk 'started || !/^(#|$)/ { started = 1; print }' "$from/Cargo.toml" > "$to/Cargo.toml"
}

mkdir -p "$work/out"
for dir in vendor/*/; do
  crate=$(basename "$dir")
  [ -f "$dir/Cargo.toml" ] || continue
  name=$(field "$dir/Cargo.toml" name)
  version=$(field "$dir/Cargo.toml" version)
  [ "$name" = "$crate" ] || { echo "vendor/$crate holds package '$name'" >&2; exit 1; }
  archive=$(crate_archive "$name" "$version")
  mkdir -p "$work/pristine"
  tar -xzf "$archive" -C "$work/pristine"
  (
    cd "$work"
    rm -rf a b && mkdir a b
    stage "pristine/$name-$version" "a/$name"
    stage "$root/vendor/$crate" "b/$name"
    {
      echo "# $name $version as published, against vendor/$crate (scripts/vendor-diff.sh)"
      # diff exits 1 when the trees differ, which is the point.
      diff -ruN "a/$name" "b/$name" || [ $? -eq 1 ]
    } | sed -E '/^(---|\+\+\+) /s/\t.*$//' > "out/$crate.patch"
  )
done

if [ "$check" -eq 1 ]; then
  status=0
  for patch in "$work"/out/*.patch; do
    committed="vendor/patches/$(basename "$patch")"
    if ! cmp -s "$patch" "$committed"; then
      echo "$committed differs from what vendor/ gives (run scripts/vendor-diff.sh):" >&2
      diff -u "$committed" "$patch" | head -n 40 >&2 || true
      status=1
    fi
  done
  for committed in vendor/patches/*.patch; do
    [ -e "$committed" ] || continue
    [ -e "$work/out/$(basename "$committed")" ] || { echo "$committed: no vendor/ crate of that name" >&2; status=1; }
  done
  [ "$status" -eq 0 ] && echo "vendor/patches: every patch matches vendor/"
  exit "$status"
fi

mkdir -p vendor/patches
rm -f vendor/patches/*.patch
cp "$work"/out/*.patch vendor/patches/
for patch in vendor/patches/*.patch; do
  printf '%s: %s lines\n' "$patch" "$(wc -l < "$patch")"
done
