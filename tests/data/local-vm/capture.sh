#!/bin/sh
# Re-capture the development VM's probe outputs into this folder (run from tests/data/local-vm).
# Files keep their path on the machine (proc/..., etc/..., sys/...); command output is named after
# the command. Captured on the development VM (Debian 12 Firecracker VM, no GPU), 2026-11-30.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
copy() {  # copy a /proc or /sys file byte for byte (cat: sysfs files report size 4096)
    mkdir -p "$here$(dirname "$1")"
    cat "$1" > "$here$1"
}
for f in /proc/meminfo /proc/swaps /proc/cpuinfo /proc/cmdline /proc/self/mounts \
         /proc/sys/kernel/osrelease /etc/os-release; do
    copy "$f"
done
for f in /sys/devices/system/cpu/online /sys/devices/system/cpu/possible \
         /sys/devices/system/cpu/smt/active /sys/devices/system/cpu/smt/control \
         /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id \
         /sys/devices/system/cpu/cpu[0-9]*/topology/core_id \
         /sys/devices/system/node/online /sys/devices/system/node/node[0-9]*/cpulist \
         /sys/bus/pci/devices/*/vendor; do
    [ -e "$f" ] && copy "$f"
done
# Driver bindings are symlinks; the pci probe only lists their paths, so keep empty files.
for d in /sys/bus/pci/drivers/*/[0-9a-f]*:*; do
    [ -e "$d" ] || continue
    mkdir -p "$here$(dirname "$d")" && : > "$here$d"
done
LC_ALL=C df -P -T -B1 -l > "$here/df-P-T-B1-l.txt"
