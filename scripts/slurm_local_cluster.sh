#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, to try pmlbench's SLURM launcher
# (hydra/launcher=slurm) on a laptop and to test it in CI.
#
# Usage (as root: slurmd must run as root):
#   scripts/slurm_local_cluster.sh [--install] [--force] start   write the config, start, wait
#   scripts/slurm_local_cluster.sh status                        daemons and node state
#   scripts/slurm_local_cluster.sh stop                          stop what start started
#
#   --install  first apt-get install Debian's slurm-wlm and munge, unless they are installed
#              (nothing is installed without it)
#   --force    replace an /etc/slurm/slurm.conf that this script did not write
#
# start writes /etc/slurm/slurm.conf (where sinfo, sbatch and squeue look for it) for one node
# named after this machine at 127.0.0.1 with all its CPUs and memory, one partition "local"
# (the default), no accounting, ProctrackType=proctrack/linuxproc and TaskPlugin=task/none (no
# cgroups needed); then starts munged (unless a munge daemon already answers), slurmctld and
# slurmd, and waits until sinfo shows the node idle. start and stop are idempotent. State and
# logs: $PMLBENCH_SLURM_DIR (default /var/tmp/pmlbench-slurm). Seconds to wait for the node:
# $PMLBENCH_SLURM_TIMEOUT (default 90).
set -euo pipefail

STATE_DIR=${PMLBENCH_SLURM_DIR:-/var/tmp/pmlbench-slurm}
TIMEOUT=${PMLBENCH_SLURM_TIMEOUT:-90}
CONF=/etc/slurm/slurm.conf
MARK="# Written by pmlbench's scripts/slurm_local_cluster.sh"
PARTITION=local
MUNGE_SOCKET=/run/munge/munge.socket.2

die() {
    echo "slurm_local_cluster: $*" >&2
    exit 1
}

say() {
    echo "slurm_local_cluster: $*"
}

usage() {
    sed -n '/^# Usage/,/^#   --force/p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

need() {
    local missing=()
    for cmd in "$@"; do
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
    done
    if ((${#missing[@]})); then
        die "${missing[*]} not found: install Debian's packages with" \
            "'apt-get install slurm-wlm munge' (or run this script with --install)"
    fi
}

# The pid in a pid file (<dir>/<daemon>.pid) if that daemon runs under it, else nothing.
live_pid() {
    local pid name
    [[ -r $1 ]] || return 1
    pid=$(<"$1")
    name=$(basename "$1" .pid)
    [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] &&
        echo "$pid"
}

munge_answers() {
    [[ -S $MUNGE_SOCKET ]] && munge -n 2>/dev/null | unmunge >/dev/null 2>&1
}

node_name() {
    hostname -s
}

# The state of the node as sinfo reports it (idle, mixed, allocated, down*, ...), or nothing.
node_state() {
    timeout 10 sinfo -h -N -n "$(node_name)" -o %T 2>/dev/null | head -n 1 || true
}

write_conf() {
    local cpus mem node
    node=$(node_name)
    cpus=$(nproc --all)
    # RealMemory as slurmd detects it (MB); a node configured with more is drained.
    mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
    [[ -n $mem ]] || mem=$(free -m | awk '/^Mem:/ {print $2}')
    cat <<EOF
$MARK: a one-node cluster on localhost.
# Stop it with: scripts/slurm_local_cluster.sh stop
ClusterName=pmlbench
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
MinJobAge=3600
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=60
StateSaveLocation=$STATE_DIR/slurmctld
SlurmdSpoolDir=$STATE_DIR/slurmd
SlurmctldPidFile=$STATE_DIR/slurmctld.pid
SlurmdPidFile=$STATE_DIR/slurmd.pid
SlurmctldLogFile=$STATE_DIR/slurmctld.log
SlurmdLogFile=$STATE_DIR/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

# submitit asks sacct for the state of its jobs (sacct -o JobID,State,NodeList --parsable2
# -j ID ...); without accounting sacct fails, every state stays UNKNOWN, and a launcher whose
# job was cancelled would wait for it forever. This stand-in answers from squeue instead, which
# knows a finished job for MinJobAge seconds.
write_sacct() {
    mkdir -p "$STATE_DIR/bin"
    cat >"$STATE_DIR/bin/sacct" <<'EOF'
#!/bin/sh
# Written by pmlbench's scripts/slurm_local_cluster.sh: sacct for a cluster without
# accounting, answering "sacct -o JobID,State,NodeList --parsable2 -j ID ..." (what submitit
# asks) from squeue. Only the jobs given with -j are shown; the columns are always these.
jobs=""
while [ $# -gt 0 ]; do
    case $1 in
        -j | --jobs) jobs="$jobs,$2"; shift ;;
        -j*) jobs="$jobs,${1#-j}" ;;
        --jobs=*) jobs="$jobs,${1#--jobs=}" ;;
    esac
    shift
done
echo "JobID|State|NodeList"
[ -n "$jobs" ] || exit 0
squeue --states=all --noheader --format='%i|%T|%N' --jobs="${jobs#,}" 2>/dev/null
exit 0
EOF
    chmod 0755 "$STATE_DIR/bin/sacct"
}

logs() {
    local log
    for log in "$STATE_DIR/slurmctld.log" "$STATE_DIR/slurmd.log" /var/log/munge/munged.log; do
        [[ -s $log ]] || continue
        echo "--- last lines of $log" >&2
        tail -n 15 "$log" >&2
    done
}

start_munge() {
    if munge_answers; then
        return
    fi
    if [[ ! -s /etc/munge/munge.key ]]; then
        say "creating /etc/munge/munge.key"
        runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    # munged runs as the munge user, with its own log and pid file (/var/log/munge,
    # /run/munge); the copy of the pid file in the state directory marks it as ours.
    runuser -u munge -- munged --socket="$MUNGE_SOCKET" || die "munged did not start" \
        "(see /var/log/munge/munged.log)"
    local i
    for ((i = 0; i < 50; i++)); do
        if munge_answers; then
            cp /run/munge/munged.pid "$STATE_DIR/munged.pid"
            return
        fi
        sleep 0.1
    done
    die "munged started but does not answer (see /var/log/munge/munged.log)"
}

start() {
    [[ $(id -u) -eq 0 ]] || die "run as root (slurmd runs jobs as their users): sudo $0 start"
    need sinfo squeue sbatch slurmctld slurmd munged munge unmunge
    if [[ -e $CONF ]] && ! grep -qF "$MARK" "$CONF" && ((!FORCE)); then
        die "$CONF exists and was not written by this script; pass --force to replace it"
    fi
    mkdir -p "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd"
    local new
    new=$(write_conf)
    if [[ ! -e $CONF ]] || [[ $new != "$(<"$CONF")" ]]; then
        if live_pid "$STATE_DIR/slurmctld.pid" >/dev/null ||
            live_pid "$STATE_DIR/slurmd.pid" >/dev/null; then
            say "configuration changed: restarting"
            stop_slurm
        fi
        mkdir -p "$(dirname "$CONF")"
        printf '%s\n' "$new" >"$CONF"
        say "wrote $CONF"
    fi
    write_sacct
    start_munge
    if ! live_pid "$STATE_DIR/slurmctld.pid" >/dev/null; then
        slurmctld -i || {
            logs
            die "slurmctld did not start"
        }
    fi
    if ! live_pid "$STATE_DIR/slurmd.pid" >/dev/null; then
        slurmd || {
            logs
            die "slurmd did not start"
        }
    fi
    local state="" deadline=$((SECONDS + TIMEOUT))
    while ((SECONDS < deadline)); do
        state=$(node_state)
        case $state in
            idle | mixed | allocated)
                say "node $(node_name) is $state (partition $PARTITION, $(nproc --all) CPUs)"
                say "no accounting: for submitit, put the sacct stand-in first on PATH:" \
                    "export PATH=$STATE_DIR/bin:\$PATH"
                return
                ;;
        esac
        sleep 1
    done
    logs
    die "the node is not idle after ${TIMEOUT} s (sinfo says '${state:-nothing}');" \
        "see the logs above and in $STATE_DIR"
}

stop_pid_file() {
    local name=$1 file=$2 pid i
    pid=$(live_pid "$file") || return 0
    kill "$pid"
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || {
            say "stopped $name"
            rm -f "$file"
            return 0
        }
        sleep 0.1
    done
    say "$name (pid $pid) ignored SIGTERM for 10 s: killing it"
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$file"
}

stop_slurm() {
    stop_pid_file slurmd "$STATE_DIR/slurmd.pid"
    stop_pid_file slurmctld "$STATE_DIR/slurmctld.pid"
}

stop() {
    stop_slurm
    # munged only if this script started it (its pid file is ours).
    stop_pid_file munged "$STATE_DIR/munged.pid"
}

status() {
    local rc=0 name pid
    for name in munged slurmctld slurmd; do
        if pid=$(live_pid "$STATE_DIR/$name.pid"); then
            say "$name running (pid $pid)"
        elif [[ $name == munged ]] && munge_answers; then
            say "munged running (not started by this script)"
        else
            say "$name not running"
            rc=1
        fi
    done
    local state
    state=$(node_state)
    say "node $(node_name): ${state:-no answer from slurmctld}"
    [[ $state =~ ^(idle|mixed|allocated)$ ]] || rc=1
    return $rc
}

INSTALL=0
FORCE=0
ACTION=""
for arg in "$@"; do
    case $arg in
        --install) INSTALL=1 ;;
        --force) FORCE=1 ;;
        start | stop | status)
            [[ -z $ACTION ]] || usage
            ACTION=$arg
            ;;
        -h | --help) usage ;;
        *) usage ;;
    esac
done
[[ -n $ACTION ]] || usage

installed() {
    local cmd
    for cmd in slurmctld slurmd sinfo squeue sbatch munged; do
        command -v "$cmd" >/dev/null 2>&1 || return 1
    done
}

if ((INSTALL)) && ! installed; then
    [[ $(id -u) -eq 0 ]] || die "--install needs root: sudo $0 --install $ACTION"
    say "installing Debian's slurm-wlm and munge"
    export DEBIAN_FRONTEND=noninteractive
    mkdir -p "$STATE_DIR"
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge; } \
        >"$STATE_DIR/apt.log" 2>&1 || {
        cat "$STATE_DIR/apt.log" >&2
        die "apt-get install slurm-wlm munge failed"
    }
fi

case $ACTION in
    start) start ;;
    stop) stop ;;
    status) status ;;
esac
