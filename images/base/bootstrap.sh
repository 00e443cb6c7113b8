#!/usr/bin/env bash
# Builds the raw Debian trixie root image when no registry answers: debootstrap minbase, then docker import.
# Usage: bootstrap.sh TAG [MIRROR]. Needs root (debootstrap creates device nodes and chowns files).
set -euo pipefail
tag=${1:?usage: bootstrap.sh TAG [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
if [ "$(id -u)" != 0 ]; then
  echo "bootstrap.sh: debootstrap needs root; run 'sudo make base-image' or make a registry reachable" >&2
  exit 2
fi
command -v debootstrap >/dev/null || { echo "bootstrap.sh: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase trixie "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
# Drop the build host's resolver and apt caches so the image does not depend on this machine.
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
: > "$work/rootfs/etc/resolv.conf"
# HARNESS_PROBE_IMPORT: the engine's import command (`docker import`, `podman import`); harness-probe sets it.
tar -C "$work/rootfs" --numeric-owner -c . | ${HARNESS_PROBE_IMPORT:-docker import} \
  --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$tag" >/dev/null
echo "$tag"
