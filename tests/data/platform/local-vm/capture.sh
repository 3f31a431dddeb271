#!/bin/sh
# Copies the files the BIOS/OS platform probes read from this machine into this directory, under
# the same paths (so the registry's own probes read them through LocalHost(root=...)), and saves
# the stdout/stderr/exit status of the commands. Run from this directory on the development VM.
set -u
for f in /sys/devices/system/cpu/cpuidle/current_driver /sys/devices/system/cpu/cpuidle/current_governor \
         /sys/devices/system/cpu/cpuidle/current_governor_ro /sys/devices/system/cpu/cpuidle/available_governors \
         /proc/self/mounts /proc/swaps /proc/cmdline /etc/fstab /etc/os-release /proc/sys/kernel/osrelease \
         /sys/devices/system/cpu/online /sys/devices/system/cpu/possible /sys/devices/system/cpu/present; do
    [ -e "$f" ] || continue
    mkdir -p ".$(dirname "$f")"
    cat "$f" > ".$f"
done
# directories that exist but are empty (so globs see them and find nothing under them)
for d in /sys/devices/system/cpu/cpufreq /sys/firmware /sys/bus/pci/devices; do
    [ -d "$d" ] && mkdir -p ".$d" && touch ".$d/.keep"
done
for d in /sys/bus/pci/devices/*; do
    b=$(basename "$d"); mkdir -p "./sys/bus/pci/devices/$b"
    for a in vendor device class; do cat "$d/$a" > "./sys/bus/pci/devices/$b/$a"; done
done
LC_ALL=C timedatectl show -p NTPSynchronized -p NTP > timedatectl-show.stdout 2> timedatectl-show.stderr; echo $? > timedatectl-show.rc
LC_ALL=C mokutil --sb-state > mokutil.stdout 2> mokutil.stderr; echo $? > mokutil.rc
ls -d /sys/firmware/efi /sys/firmware/dmi /lib/modules 2> ls-firmware.stderr > ls-firmware.stdout; echo $? > ls-firmware.rc
uname -r > uname-r.txt
