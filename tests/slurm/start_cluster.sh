#!/usr/bin/env bash
# Start a one-node SLURM cluster with accounting (slurmdbd + MariaDB) on loopback, for the
# cluster test. Needs root and Debian's slurm-wlm, slurmdbd, mariadb-server and munge.
# Everything it starts records its PID under $STATE, so stop_cluster.sh can stop it.
set -euo pipefail
STATE=${1:?state folder}
mkdir -p "$STATE"/{spool/ctld,spool/d,log,mysql,mysqlrun,run}
NODE=$(hostname -s)
CPUS=$(nproc)
MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048 ))

# munge
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
mkdir -p /run/munge; chown munge:munge /run/munge
if ! pgrep -x munged > /dev/null; then
    runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
    cp /run/munge/munged.pid "$STATE/run/munged.pid"
fi

# MariaDB for accounting, private data dir, socket under $STATE
chown -R mysql:mysql "$STATE/mysql" "$STATE/mysqlrun"
mariadb-install-db --user=mysql --datadir="$STATE/mysql" > "$STATE/log/mariadb-install.log" 2>&1
/usr/sbin/mariadbd --user=mysql --datadir="$STATE/mysql" --socket="$STATE/mysqlrun/mysql.sock" --port=3306 \
    --bind-address=127.0.0.1 --pid-file="$STATE/mysqlrun/mariadb.pid" > "$STATE/log/mariadb.log" 2>&1 &
for _ in $(seq 60); do [ -S "$STATE/mysqlrun/mysql.sock" ] && break; sleep 0.5; done
cp "$STATE/mysqlrun/mariadb.pid" "$STATE/run/mariadb.pid"
mariadb --socket="$STATE/mysqlrun/mysql.sock" -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;"

mkdir -p /etc/slurm "$STATE/etc"
# the machine's own SLURM configuration, if any, is kept aside and put back by stop_cluster.sh: a
# slurm.conf left behind without a controller makes every later `scontrol` (and the SLURM executor
# plugin's probe when Snakemake starts) wait about 9 s for it
for conf in slurm.conf slurmdbd.conf; do
    if [ -e "/etc/slurm/$conf" ] && [ ! -e "$STATE/etc/$conf" ] && [ ! -e "$STATE/etc/$conf.absent" ]; then
        cp -p "/etc/slurm/$conf" "$STATE/etc/$conf"
    elif [ ! -e "/etc/slurm/$conf" ]; then
        touch "$STATE/etc/$conf.absent"
    fi
done
cat > /etc/slurm/slurmdbd.conf <<CONF
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
PidFile=$STATE/run/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
CONF
chmod 600 /etc/slurm/slurmdbd.conf
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=crseval
SlurmctldHost=localhost
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
NodeName=$NODE CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
/usr/sbin/slurmdbd
for _ in $(seq 60); do sacctmgr -n list cluster > /dev/null 2>&1 && break; sleep 0.5; done
sacctmgr -i add cluster crseval > /dev/null 2>&1 || true
sacctmgr -i add account crseval Cluster=crseval > /dev/null 2>&1 || true
sacctmgr -i add user root Account=crseval DefaultAccount=crseval > /dev/null 2>&1 || true
/usr/sbin/slurmctld
/usr/sbin/slurmd
for _ in $(seq 60); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.5; done
sinfo
