#!/usr/bin/env bash
# Builds, once per machine, the Debian 12 root filesystem the guard's tests boot with systemd-nspawn.
#
# The guard's real-part test (tests/guest/test_guard_systemd.py) needs Debian 12's own systemd 252, as on a
# Workbench image, booted in a container. mmdebstrap (an apt-based debootstrap: the same minbase tree, built
# in 2m45 where debootstrap took 5m10 on this machine kind, both under load) and
# systemd-nspawn come from Debian's packages and are installed here when missing (CI runs on a fresh machine of
# this kind). The tree is cached under /var/cache/notebook-medic/ and reused while this script's recipe stays the
# same (a stamp records it).
#
#   scripts/debian_rootfs.sh            # prints the root filesystem's path (builds it first if needed)
# Exit 3 with one line on stderr when the machine cannot (not root, no apt, mmdebstrap failed).
set -euo pipefail

CACHE="${NOTEBOOK_MEDIC_CACHE:-/var/cache/notebook-medic}"
SUITE=bookworm
# What a Workbench image has and the guard uses: curl (metadata server), iproute2 (ss: who listens on 8080), procps.
INCLUDE=systemd,systemd-sysv,dbus,python3,curl,iproute2,procps
ROOTFS="$CACHE/debian-$SUITE-systemd"
STAMP="$ROOTFS/.notebook-medic-$(printf 'mmdebstrap %s %s' "$SUITE" "$INCLUDE" | cksum | cut -d' ' -f1)"

cannot() { echo "debian_rootfs: $*" >&2; exit 3; }

[[ "$(id -u)" == 0 ]] || cannot "not root: mmdebstrap and systemd-nspawn need root"
if [[ -f "$STAMP" ]]; then
  echo "$ROOTFS"; exit 0
fi
mkdir -p "$CACHE"
# Two test workers at once must not build the same tree together.
exec 9>"$CACHE/.debian-rootfs.lock"
flock 9
if [[ -f "$STAMP" ]]; then
  echo "$ROOTFS"; exit 0
fi
if ! command -v mmdebstrap >/dev/null || ! command -v systemd-nspawn >/dev/null; then
  command -v apt-get >/dev/null || cannot "no apt-get to install mmdebstrap and systemd-container"
  echo "debian_rootfs: installing mmdebstrap and systemd-container from Debian's packages" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || cannot "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap systemd-container >&2 \
    || cannot "apt-get install mmdebstrap systemd-container failed"
fi
echo "debian_rootfs: mmdebstrap $SUITE into $ROOTFS (once per machine)" >&2
rm -rf "$ROOTFS"
mmdebstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$ROOTFS" >&2 || cannot "mmdebstrap $SUITE failed"
touch "$STAMP"
echo "$ROOTFS"
