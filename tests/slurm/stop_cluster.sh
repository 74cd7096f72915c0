#!/usr/bin/env bash
# Stop what start_cluster.sh started (PID files under the state folder).
STATE=${1:?state folder}
for name in slurmd slurmctld slurmdbd mariadb munged; do
    pid_file="$STATE/run/$name.pid"
    [ -f "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null
done
sleep 2
for name in slurmd slurmctld slurmdbd mariadb munged; do
    pid_file="$STATE/run/$name.pid"
    [ -f "$pid_file" ] && kill -9 "$(cat "$pid_file")" 2>/dev/null
done
# the machine's SLURM configuration as start_cluster.sh found it
for conf in slurm.conf slurmdbd.conf; do
    if [ -e "$STATE/etc/$conf" ]; then
        cp -p "$STATE/etc/$conf" "/etc/slurm/$conf"
    elif [ -e "$STATE/etc/$conf.absent" ]; then
        rm -f "/etc/slurm/$conf"
    fi
done
exit 0
