#!/usr/bin/env bash
# A one-node Slurm on this machine for temper's Slurm tests (docs/scale-out.md):
#   slurm_test_cluster.sh start DIR [PORT]   config, state and logs under DIR; prints `export SLURM_CONF=...`
#                                            PORT: slurmctld's (default 6817), slurmd's is PORT+1, so
#                                            that two test clusters can run side by side
#   slurm_test_cluster.sh stop DIR
# The node is node1 at 127.0.0.1 and the controller localhost, whatever this machine's name
# resolves to. munged runs as its own user; slurmctld and slurmd run as root with proctrack/linuxproc and
# task/none (the cgroup plugins fail without a cgroup freezer, and then report jobs that never ran
# as COMPLETED). Needs root and Debian's slurmctld, slurmd, slurm-client and munge packages
# (scripts/setup.sh installs them). Exits 3 with the reason when the cluster cannot start here.
set -uo pipefail

cmd=${1:-}
dir=${2:-}
port=${3:-6817}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
conf="$dir/slurm.conf"

cannot() { echo "slurm_test_cluster: $*" >&2; exit 3; }

stop_pid() {
  local f=$1
  [ -f "$f" ] || return 0
  local p
  p=$(cat "$f" 2>/dev/null) || return 0
  kill -TERM "$p" 2>/dev/null || { rm -f "$f"; return 0; }
  for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$p" 2>/dev/null || true
  rm -f "$f"
}

case "$cmd" in
stop)
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  exit 0
  ;;
start) ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

[ "$(id -u)" -eq 0 ] || cannot "needs root to run slurmctld and slurmd"
for p in slurmctld slurmd sbatch squeue scancel munged; do
  command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] || cannot "$p is not installed (scripts/setup.sh installs slurmctld slurmd slurm-client munge)"
done

mkdir -p "$dir/state" "$dir/spool" "$dir/log"
ncpu=$(nproc)
mem=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > "$conf" <<CONF
ClusterName=temper-test
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
EnforcePartLimits=ALL
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.log
MinJobAge=600
NodeName=node1 NodeAddr=127.0.0.1 CPUs=$ncpu RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
SchedulerParameters=batch_sched_delay=0
CONF
export SLURM_CONF="$conf"

# munge: one per machine, shared with anything else using it.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key >/dev/null 2>&1 || cannot "no munge key and mungekey failed"
  chown munge:munge /etc/munge/munge.key && chmod 0600 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged 2>"$dir/log/munged.err" || cannot "munged did not start: $(cat "$dir/log/munged.err")"
  munge -n | unmunge >/dev/null 2>&1 || cannot "munge does not answer"
fi

"$0" stop "$dir"
/usr/sbin/slurmctld -c -f "$conf" 2>"$dir/log/slurmctld.err" || cannot "slurmctld did not start: $(tail -3 "$dir/log/slurmctld.err")"
/usr/sbin/slurmd -N node1 -f "$conf" 2>"$dir/log/slurmd.err" || cannot "slurmd did not start: $(tail -3 "$dir/log/slurmd.err")"
for _ in $(seq 1 60); do
  [ "$(sinfo -h -N -o %t 2>/dev/null)" = idle ] && { echo "export SLURM_CONF=$conf"; exit 0; }
  sleep 0.25
done
state=$(sinfo -h -N -o '%t %E' 2>&1)
"$0" stop "$dir"
cannot "the node did not become idle (sinfo: $state; logs in $dir/log)"
