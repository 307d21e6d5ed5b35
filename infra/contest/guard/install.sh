#!/bin/bash
# notebook-medic's guard: an out-of-memory kill costs one kernel, never the notebook (issue 22).
#
# Run as root inside a Workbench VM at every start, by the contest's post-startup script
# (infra/contest/post-startup.sh, behaviour download_and_run_every_start: an upgrade replaces the boot disk, so
# everything here is applied again). Idempotent: a second run changes nothing and says so. One log line per thing
# done, prefixed "notebook-medic-guard:" (the post-startup script's output reaches the serial console and syslog).
#
# Why (sources in docs/fidelity.md, "Issue 22: inside the VM"): Workbench caps jupyter.service's memory, and the
# kernels are the server's children, so a runaway kernel is a memory-cgroup OOM inside the unit; systemd's default
# OOMPolicy=stop then stops the whole unit (server and every other kernel, result oom-kill) and the stock
# Restart= does not bring it back. The guard:
#   1. a drop-in for the Jupyter unit: OOMPolicy=continue (a kernel's kill no longer stops the server),
#      Restart=always with RestartSec=2 and a start limit (a server that dies anyway is back in seconds). Not
#      on-failure: Workbench's unit runs the server under a bash wrapper, and a wrapper that ends with a command of
#      its own exits 0 when the server was killed ("Deactivated successfully": on-failure does not restart, as the
#      Debian 12 test in tests/guest showed); always also brings back a server shut down from JupyterLab's menu,
#      which on a contest notebook only strands the participant. `systemctl stop` still stops it;
#      OOMScoreAdjust=-900 (the server is the OOM killer's last choice); `systemctl daemon-reload` applies
#      Restart/OOMPolicy to the running unit without restarting it (OOMScoreAdjust applies at exec, so the running
#      server's processes get /proc/PID/oom_score_adj written now);
#   2. the same protection (OOMScoreAdjust=-900 and /proc) for Workbench's proxy and health agents and the Ops Agent;
#   3. every kernel the OOM killer's first choice (oom_score_adj 1000), by a kernel provisioner made the server's
#      default (KernelProvisionerFactory.default_provisioner_name). Chosen over the alternatives because:
#        - a wrapper written into today's kernel.json files misses kernelspecs made at run time (nb_conda_kernels
#          is configured on Workbench images) and any environment created later;
#        - a server-side hook on the kernel manager is private API; the provisioner is jupyter_client's public
#          extension point (entry-point group jupyter_client.kernel_provisioners) and sees every launch;
#        - a kernel must RAISE its own oom_score_adj: it inherits the protected server's -900, and lowering needs
#          CAP_SYS_RESOURCE while raising never does (kernel fs/proc/base.c). The provisioner starts each kernel
#          through `sh -c 'echo 1000 > /proc/self/oom_score_adj; exec "$@"'`, so the kernel keeps its pid;
#      kernels already running are raised now through /proc; the same provisioner (notebook_medic_provisioner.py)
#      and KernelRestarter's restart_limit make a killed kernel come back after any number of kills;
#   4. jupyter-resource-usage in the server's environment, its limit the unit's MemoryMax and its warning at 90 %,
#      the home disk's use beside it (track_disk_usage, warning at 90 %: issue 43),
#      so the participant sees memory fill before the kill;
#   5. the memory watcher (issue 32: memory_watcher.py, notebook-medic-memory-watcher.service, kernel_hook.py),
#      when those files came with this script;
#   6. guest attributes (namespace notebook-medic) with what it applied and found, which `make doctor` reads.
# A step that cannot be done is said in one line and listed in the `problems` attribute (state degraded); the
# others are still done. A custom-container instance (metadata `container`) is left alone, said once.
#
#   install.sh            apply (what the post-startup script runs)
#   install.sh --remove   undo everything it applied (infra/contest's install_guard = false runs this)
#   install.sh --jupyter-files SITE CONFDIR   only the Jupyter side (provisioner, restarter), into SITE and CONFDIR
#                                             (tests and make bench run a real Jupyter with it)
# Environment (tests): NOTEBOOK_MEDIC_METADATA_URL (default http://metadata.google.internal/computeMetadata/v1),
# NOTEBOOK_MEDIC_ATTRIBUTE_PACE (0.4 s between guest-attribute writes), JUPYTER_PORT (8080), JUPYTER_UNIT
# (jupyter.service).
set -euo pipefail

GUARD_VERSION="1"
METADATA_URL="${NOTEBOOK_MEDIC_METADATA_URL:-http://metadata.google.internal/computeMetadata/v1}"
PORT="${JUPYTER_PORT:-8080}"
# Guest attributes allow bursts of at most 3 queries a second and 10 a minute per VM; past that, Compute Engine
# may drop values being written ("Setting and querying guest attributes"): nine keys once per start, paced.
ATTRIBUTE_PACE="${NOTEBOOK_MEDIC_ATTRIBUTE_PACE:-0.4}"
UNIT_NAME="${JUPYTER_UNIT:-jupyter.service}"
HERE="$(cd "$(dirname "$0")" && pwd)"
OPT=/opt/notebook-medic
DROPIN_NAME=50-notebook-medic-guard.conf
SERVER_OOM_SCORE_ADJ=-900
# Every kernel's oom_score_adj: the provisioner's own figure (one place), for the kernels already running.
KERNEL_OOM_SCORE_ADJ="$(sed -n 's/^KERNEL_OOM_SCORE_ADJ = \([0-9]*\)$/\1/p' "$HERE/notebook_medic_provisioner.py" 2>/dev/null)"
PROVISIONER=notebook-medic-oom-first
TIME_TO_DEAD=1.0
RESTART_LIMIT=1000000000
WATCHER_UNIT=notebook-medic-memory-watcher.service
RESOURCE_USAGE="jupyter-resource-usage==1.3.0"
# Workbench's agents, by unit-name pattern (their exact names differ between images; what is found is logged).
AGENT_PATTERNS=("google-cloud-ops-agent*.service" "*proxy*agent*.service" "notebooks-collection-agent*.service"
                "google-guest-agent.service")

PROBLEMS=()
CHANGED=0

log() { echo "notebook-medic-guard: $*"; }
problem() { log "cannot: $*"; PROBLEMS+=("$*"); }

# Writes $2 to file $1 only when it differs; returns 0 when it wrote (changed), 1 when already in place.
put_file() {
  local path="$1" content="$2"
  if [[ -f "$path" ]] && [[ "$(cat "$path")" == "$content" ]]; then
    return 1
  fi
  mkdir -p "$(dirname "$path")"
  printf '%s\n' "$content" > "$path.notebook-medic-tmp"
  mv "$path.notebook-medic-tmp" "$path"
  CHANGED=1
  return 0
}

metadata_get() {
  curl --silent --fail --max-time 5 -H "Metadata-Flavor: Google" "$METADATA_URL/instance/attributes/$1" 2>/dev/null
}

# Compute Engine guest attributes ("Setting and querying guest attributes"): PUT
# .../instance/guest-attributes/NAMESPACE/KEY with the header Metadata-Flavor: Google; the value is the body.
guest_attribute() {
  curl --silent --show-error --fail --max-time 5 -X PUT -H "Metadata-Flavor: Google" --data-binary "$2" \
    "$METADATA_URL/instance/guest-attributes/notebook-medic/$1" >/dev/null 2>&1 || return 1
}

# ---------------------------------------------------------------- finding the Jupyter unit

listener_pid() {
  ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2
}

unit_of_pid() {  # the .service a process belongs to, from its cgroup path (v1 name=systemd or v2 line)
  grep -E '^(0::|[0-9]+:name=systemd:)' "/proc/$1/cgroup" 2>/dev/null | grep -o '[^/]*\.service' | tail -1
}

find_unit() {
  if systemctl cat "$UNIT_NAME" >/dev/null 2>&1; then
    echo "$UNIT_NAME"; return
  fi
  local pid
  pid="$(listener_pid)"
  if [[ -n "$pid" ]]; then
    unit_of_pid "$pid"
  fi
}

unit_pids() {  # every process of a unit, from its control group
  local cgroup
  cgroup="$(systemctl show -p ControlGroup --value "$1" 2>/dev/null)"
  [[ -n "$cgroup" ]] || return 0
  for dir in "/sys/fs/cgroup/systemd$cgroup" "/sys/fs/cgroup/unified$cgroup" "/sys/fs/cgroup$cgroup"; do
    if [[ -f "$dir/cgroup.procs" ]]; then
      cat "$dir/cgroup.procs"; return 0
    fi
  done
}

is_kernel_pid() {  # a Jupyter kernel: started with its connection file (-f …/kernel-ID.json)
  tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -Eq 'kernel-[0-9a-f-]+\.json'
}

# Sets a running process's oom_score_adj; says once per process that could not be set.
set_adj() {
  local pid="$1" adj="$2" now
  now="$(cat "/proc/$pid/oom_score_adj" 2>/dev/null)" || return 0
  [[ "$now" == "$adj" ]] && return 0
  if echo "$adj" 2>/dev/null > "/proc/$pid/oom_score_adj"; then
    log "oom_score_adj of running pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) $now -> $adj"
    CHANGED=1
  else
    problem "oom_score_adj of pid $pid stays $now (writing $adj refused: lowering needs CAP_SYS_RESOURCE); $adj applies at its next start"
  fi
}

# ---------------------------------------------------------------- steps

guard_unit() {
  local unit="$1" dropin="/etc/systemd/system/$1.d/$DROPIN_NAME"
  if put_file "$dropin" "# notebook-medic guard v$GUARD_VERSION (infra/contest/guard/install.sh): a kernel's OOM kill costs the kernel only.
[Unit]
StartLimitIntervalSec=60
StartLimitBurst=5

[Service]
OOMPolicy=continue
Restart=always
RestartSec=2
OOMScoreAdjust=$SERVER_OOM_SCORE_ADJ"; then
    log "wrote $dropin (OOMPolicy=continue, Restart=always, RestartSec=2, OOMScoreAdjust=$SERVER_OOM_SCORE_ADJ)"
  fi
}

protect_agents() {
  local unit
  for unit in $(systemctl list-units --all --type=service --plain --no-legend "${AGENT_PATTERNS[@]}" 2>/dev/null \
                | awk '$2 == "loaded" {print $1}' | sort -u); do
    if put_file "/etc/systemd/system/$unit.d/$DROPIN_NAME" "# notebook-medic guard v$GUARD_VERSION: the OOM killer's last choice.
[Service]
OOMScoreAdjust=$SERVER_OOM_SCORE_ADJ"; then
      log "wrote the drop-in of $unit (OOMScoreAdjust=$SERVER_OOM_SCORE_ADJ)"
    fi
    PROTECTED_UNITS+=("$unit")
  done
}

adjust_running() {
  local unit="$1" pid
  for pid in $(unit_pids "$unit"); do
    if is_kernel_pid "$pid"; then
      set_adj "$pid" "$KERNEL_OOM_SCORE_ADJ"
    else
      set_adj "$pid" "$SERVER_OOM_SCORE_ADJ"
    fi
  done
  for unit in "${PROTECTED_UNITS[@]}"; do
    for pid in $(unit_pids "$unit"); do
      set_adj "$pid" "$SERVER_OOM_SCORE_ADJ"
    done
  done
}

server_python() {  # the Python running the Jupyter server (the listener on the port), or the unit's ExecStart's
  local pid exe
  pid="$(listener_pid)"
  if [[ -n "$pid" ]]; then
    exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
    if [[ "$exe" == *python* ]]; then
      echo "$exe"; return
    fi
  fi
  for exe in /opt/conda/envs/jupyterlab/bin/python /opt/conda/bin/python; do
    [[ -x "$exe" ]] && { echo "$exe"; return; }
  done
  return 0  # none found: an empty answer, not a failure that set -e turns into an exit (--remove goes on)
}

install_provisioner() {  # $1: the server's python; writes the provisioner as an installed distribution
  local python="$1" site
  if ! "$python" -c 'import jupyter_client.provisioning' 2>/dev/null; then
    problem "the server's Python ($python) has no jupyter_client.provisioning: kernels keep the server's oom_score_adj"
    return 1
  fi
  site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  # /etc/jupyter: the system-wide config path every environment's server reads (Workbench's own settings, in
  # its environment's etc/jupyter, keep precedence over it).
  provisioner_files "$site" /etc/jupyter
}

# A Jupyter JSON config file's text with SECTION.KEY set to the JSON value $4, every other setting kept (a
# jupyter_server_config.d/ file would not do: jupyter_server reads only jpserver_extensions from those).
merged_config() {
  python3 - "$@" <<'PY'
import json, sys
path, section, key, value = sys.argv[1:5]
try:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
except FileNotFoundError:
    data = {}
data.setdefault(section, {})[key] = json.loads(value)
print(json.dumps(data, indent=2, sort_keys=True))
PY
}

# The provisioner module, its distribution metadata (entry point in jupyter_client.kernel_provisioners, found
# by importlib.metadata) and the server config making it the default for every kernelspec that names none
# (nb_conda_kernels' included). Written by hand rather than pip-installed: no build backend, no network.
provisioner_files() {
  local site="$1" confdir="$2" changed=0
  if [[ ! -f "$HERE/notebook_medic_provisioner.py" ]]; then
    problem "notebook_medic_provisioner.py did not come with install.sh: kernels keep the server's oom_score_adj"
    return 1
  fi
  put_file "$site/notebook_medic_provisioner.py" "$(cat "$HERE/notebook_medic_provisioner.py")" && changed=1
  put_file "$site/notebook_medic_provisioner-$GUARD_VERSION.dist-info/METADATA" "Metadata-Version: 2.1
Name: notebook-medic-provisioner
Version: $GUARD_VERSION" && changed=1
  put_file "$site/notebook_medic_provisioner-$GUARD_VERSION.dist-info/entry_points.txt" "[jupyter_client.kernel_provisioners]
$PROVISIONER = notebook_medic_provisioner:OomFirstProvisioner" && changed=1
  put_file "$site/notebook_medic_provisioner-$GUARD_VERSION.dist-info/RECORD" "" && changed=1
  put_file "$confdir/jupyter_server_config.json" \
    "$(merged_config "$confdir/jupyter_server_config.json" KernelProvisionerFactory default_provisioner_name "\"$PROVISIONER\"")" \
    && changed=1
  # Jupyter notices a dead kernel by polling it every KernelRestarter.time_to_dead (3 s by default, jupyter_client
  # restarter.py), most of a killed kernel's time to come back; polling a child's pid every second costs nothing.
  # It is only that period: is_alive asks the provisioner whether the process exited (no heartbeat, so a kernel
  # busy in a long C call is never taken for dead), and what restart_limit counts (below) does not depend on it.
  put_file "$confdir/jupyter_server_config.json" \
    "$(merged_config "$confdir/jupyter_server_config.json" KernelRestarter time_to_dead "$TIME_TO_DEAD")" && changed=1
  # The restarter counts a kernel dying within stable_start_time (10 s) of its restart as a failed restart and
  # leaves it dead past restart_limit (5): a participant re-running a cell that runs out of memory lost the kernel
  # at every sixth kill. Out of reach here: the provisioner holds the crash-loop policy instead, on whether the
  # kernel had answered (notebook_medic_provisioner.py says how and why).
  put_file "$confdir/jupyter_server_config.json" \
    "$(merged_config "$confdir/jupyter_server_config.json" KernelRestarter restart_limit "$RESTART_LIMIT")" && changed=1
  if [[ "$changed" == 1 ]]; then
    log "installed the kernel provisioner $PROVISIONER in $site, the default in $confdir (kernels: oom_score_adj $KERNEL_OOM_SCORE_ADJ; a dead kernel noticed within ${TIME_TO_DEAD} s and restarted after any number of kills)"
    PROVISIONER_NEW=1
  fi
  return 0
}

install_resource_usage() {  # $1: the server's python, $2: the unit's MemoryMax in bytes (or infinity), $3: its user
  local python="$1" limit="$2" user="${3:-}" config home
  if ! "$python" -c 'import jupyter_resource_usage' 2>/dev/null; then
    if "$python" -m pip install --quiet --disable-pip-version-check "$RESOURCE_USAGE" >/dev/null 2>&1; then
      log "installed $RESOURCE_USAGE in $("$python" -c 'import sys; print(sys.prefix)')"
      CHANGED=1
    else
      problem "pip could not install $RESOURCE_USAGE with $python: no memory meter in JupyterLab"
      return 0
    fi
  fi
  [[ "$limit" =~ ^[0-9]+$ ]] || limit=0
  # The disk meter (issue 43): the server user's home, Workbench's data disk /home/jupyter (the meter's own default,
  # the server's $HOME, would be /home/jovyan where HOME is unset: a path psutil cannot measure).
  home="$(getent passwd "${user:-jupyter}" 2>/dev/null | cut -d: -f6)"
  [[ -n "$home" && -d "$home" ]] || home=/home/jupyter
  config=/etc/jupyter/jupyter_server_config.json
  if put_file "$config" "$(merged_config "$config" ResourceUseDisplay mem_limit "$limit" | DISK_PATH="$home" python3 -c '
import json, os, sys
data = json.load(sys.stdin)
data["ResourceUseDisplay"].update(mem_warning_threshold=0.1, track_cpu_percent=True, track_disk_usage=True,
                                  disk_path=os.environ["DISK_PATH"], disk_warning_threshold=0.1)
print(json.dumps(data, indent=2, sort_keys=True))')"; then
    log "jupyter-resource-usage: limit $limit bytes (the unit's MemoryMax), warning at 90 %; disk $home, warning at 90 %"
  fi
}

install_watcher() {
  local file
  [[ -f "$HERE/memory_watcher.py" && -f "$HERE/$WATCHER_UNIT" ]] || return 0
  for file in memory_watcher.py kernel_hook.py; do
    if [[ -f "$HERE/$file" ]] && put_file "$OPT/$file" "$(cat "$HERE/$file")"; then
      log "installed $OPT/$file"
    fi
  done
  if [[ -f "$HERE/kernel_hook.py" ]] && ! grep -qs "$OPT/kernel_hook.py" /usr/local/etc/ipython/ipython_kernel_config.py; then
    mkdir -p /usr/local/etc/ipython
    echo "c.InteractiveShellApp.exec_lines.append(\"__import__('runpy').run_path('$OPT/kernel_hook.py');\")" \
      >> /usr/local/etc/ipython/ipython_kernel_config.py
    log "kernels load $OPT/kernel_hook.py (/usr/local/etc/ipython/ipython_kernel_config.py)"
    CHANGED=1
  fi
  if put_file "/etc/systemd/system/$WATCHER_UNIT" "$(cat "$HERE/$WATCHER_UNIT")"; then
    log "installed /etc/systemd/system/$WATCHER_UNIT"
    WATCHER_NEW=1
  fi
}

# Issue 47: the GPU guard (gpu_guard.py, notebook-medic-gpu-guard.service; docs/policy.md "GPU notebooks"), on a
# GPU notebook only: nvidia-smi installed or an NVIDIA device on the PCI bus (a GPU whose driver is missing is
# what the guard reports). It imports memory_watcher.py, so it needs the watcher installed. $1: install | remove.
gpu_guard_unit() {
  local unit=notebook-medic-gpu-guard.service
  if [[ "$1" == remove ]]; then
    if [[ -f "/etc/systemd/system/$unit" ]]; then
      systemctl disable --now "$unit" >/dev/null 2>&1 || true
      rm -f "/etc/systemd/system/$unit" && log "removed $unit"
    fi
    return 0
  fi
  [[ -f "$HERE/gpu_guard.py" && -f "$HERE/$unit" && -f "$OPT/memory_watcher.py" ]] || return 0
  command -v nvidia-smi >/dev/null 2>&1 || grep -qsx 0x10de /sys/bus/pci/devices/*/vendor || return 0
  local new=0
  put_file "$OPT/gpu_guard.py" "$(cat "$HERE/gpu_guard.py")" && log "installed $OPT/gpu_guard.py" && new=1
  put_file "/etc/systemd/system/$unit" "$(cat "$HERE/$unit")" && log "installed /etc/systemd/system/$unit" && new=1
  if [[ "$new" == 1 ]] || ! systemctl is-active --quiet "$unit"; then
    systemctl daemon-reload
    if systemctl enable "$unit" >/dev/null 2>&1 && systemctl restart "$unit" >/dev/null 2>&1; then
      log "enabled and started $unit"
    else
      problem "$unit did not start (journalctl -u $unit)"
    fi
  fi
}

# A guard script run by a timer of its own, when its files came with this script: issue 43's disk report
# (disk_report.py, every 10 minutes) and issue 42's heartbeat (heartbeat.py, every minute). `install_timer NAME
# SCRIPT WHAT remove` undoes it. Self-contained: its own daemon-reload.
install_timer() {
  local name="$1" script="$2" what="$3" unit changed=0
  local units=("$name.service" "$name.timer")
  if [[ "${4:-}" == remove ]]; then
    systemctl disable --now "$name.timer" >/dev/null 2>&1 || true
    for unit in "${units[@]}"; do
      if [[ -f "/etc/systemd/system/$unit" ]]; then rm -f "/etc/systemd/system/$unit"; log "removed $unit"; fi
    done
    return 0
  fi
  [[ -f "$HERE/$script" ]] || return 0
  if put_file "$OPT/$script" "$(cat "$HERE/$script")"; then log "installed $OPT/$script"; fi
  for unit in "${units[@]}"; do
    if put_file "/etc/systemd/system/$unit" "$(cat "$HERE/$unit")"; then
      log "installed /etc/systemd/system/$unit"; changed=1
    fi
  done
  [[ "$changed" == 1 ]] && systemctl daemon-reload
  if [[ "$changed" == 1 ]] || ! systemctl is-active --quiet "$name.timer"; then
    if systemctl enable --now "$name.timer" >/dev/null 2>&1; then
      log "enabled $name.timer ($what)"
    else
      problem "$name.timer did not start (journalctl -u $name)"
    fi
  fi
  return 0
}

install_disk_report() {
  install_timer notebook-medic-disk-report disk_report.py "the disk report every 10 minutes" "$@"
}

install_heartbeat() {
  install_timer notebook-medic-heartbeat heartbeat.py "the heartbeat every minute" "$@"
}

report() {  # $1 unit (may be empty), $2 state
  local unit="$1" state="$2" server_adj="none" kernel_adj="none" pid problems key
  declare -A values
  if [[ -n "$unit" ]]; then
    while IFS='=' read -r key value; do values[$key]="$value"; done \
      < <(systemctl show "$unit" -p Restart -p OOMPolicy -p MemoryMax -p MemoryHigh -p MainPID 2>/dev/null)
    pid="$(listener_pid)"
    pid="${pid:-${values[MainPID]:-0}}"
    [[ "$pid" != 0 ]] && server_adj="$(cat "/proc/$pid/oom_score_adj" 2>/dev/null || echo none)"
    for pid in $(unit_pids "$unit"); do
      if is_kernel_pid "$pid"; then kernel_adj="$(cat "/proc/$pid/oom_score_adj")"; break; fi
    done
  fi
  problems="$(IFS=';'; echo "${PROBLEMS[*]:-}")"
  local -A attributes=(
    [guard-version]="$GUARD_VERSION" [restart]="${values[Restart]:-}" [oom-policy]="${values[OOMPolicy]:-}"
    [memory-max]="${values[MemoryMax]:-}" [memory-high]="${values[MemoryHigh]:-}"
    [server-oom-score-adj]="$server_adj" [kernel-oom-score-adj]="$kernel_adj" [state]="$state"
    [problems]="${problems:0:1000}"
  )
  local failed=0
  for key in "${!attributes[@]}"; do
    guest_attribute "$key" "${attributes[$key]}" || failed=1
    sleep "$ATTRIBUTE_PACE"
  done
  if [[ "$failed" == 1 ]]; then
    log "cannot write guest attributes at $METADATA_URL (enable-guest-attributes off?); make doctor will not see this run"
  fi
  log "state=$state unit=${unit:-none} Restart=${values[Restart]:-?} OOMPolicy=${values[OOMPolicy]:-?} MemoryMax=${values[MemoryMax]:-?} MemoryHigh=${values[MemoryHigh]:-?} server_oom_score_adj=$server_adj kernel_oom_score_adj=$kernel_adj problems=${problems:-none}"
}

remove() {
  local dropin python site
  for dropin in /etc/systemd/system/*.d/"$DROPIN_NAME"; do
    [[ -f "$dropin" ]] && rm -f "$dropin" && log "removed $dropin"
  done
  if [[ -f "/etc/systemd/system/$WATCHER_UNIT" ]]; then
    systemctl disable --now "$WATCHER_UNIT" >/dev/null 2>&1 || true
    rm -f "/etc/systemd/system/$WATCHER_UNIT" && log "removed $WATCHER_UNIT"
  fi
  gpu_guard_unit remove
  install_disk_report remove
  install_heartbeat remove
  python="$(server_python)"
  if [[ -n "$python" ]]; then
    site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)"
    rm -rf "$site/notebook_medic_provisioner.py" "$site"/notebook_medic_provisioner-*.dist-info
  fi
  if [[ -f /etc/jupyter/jupyter_server_config.json ]]; then  # our two sections out, the rest kept
    python3 - /etc/jupyter/jupyter_server_config.json <<'PY'
import json, sys
with open(sys.argv[1], encoding="utf-8") as handle:
    data = json.load(handle)
data.get("KernelProvisionerFactory", {}).pop("default_provisioner_name", None)
data.get("KernelRestarter", {}).pop("time_to_dead", None)
data.get("KernelRestarter", {}).pop("restart_limit", None)
data.pop("ResourceUseDisplay", None)
with open(sys.argv[1], "w", encoding="utf-8") as handle:
    json.dump({k: v for k, v in data.items() if v}, handle, indent=2, sort_keys=True)
PY
  fi
  sed -i "\\#$OPT/kernel_hook.py#d" /usr/local/etc/ipython/ipython_kernel_config.py 2>/dev/null || true
  rm -rf "$OPT"
  systemctl daemon-reload
  guest_attribute state "removed" || true
  log "removed (install_guard = false); the server keeps running as it is until its next start"
}

main() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "notebook-medic-guard: must run as root (it writes systemd drop-ins and /proc/PID/oom_score_adj)" >&2
    exit 1
  fi
  if [[ "${1:-}" == "--remove" ]]; then
    remove; return
  fi
  if [[ "${1:-}" == "--jupyter-files" ]]; then  # tests: the provisioner into a given site dir and config dir
    provisioner_files "$2" "$3"; return
  fi
  local container
  container="$(metadata_get container || true)"
  if [[ -n "$container" ]]; then
    log "custom-container instance (metadata container=$container): left alone"
    PROBLEMS+=("custom container: the guard does not apply")
    report "" skipped
    return
  fi
  PROTECTED_UNITS=()
  PROVISIONER_NEW=0
  WATCHER_NEW=0
  local unit python limit kernels
  unit="$(find_unit)"
  if [[ -z "$unit" ]]; then
    problem "no $UNIT_NAME and nothing listening on port $PORT: the Jupyter unit was not found"
  else
    guard_unit "$unit"
  fi
  protect_agents
  install_watcher
  gpu_guard_unit install
  install_disk_report
  install_heartbeat
  if [[ "$CHANGED" == 1 ]]; then
    systemctl daemon-reload
    log "systemctl daemon-reload (running services keep running; Restart and OOMPolicy apply now)"
  fi
  if [[ -n "$unit" ]]; then
    adjust_running "$unit"
    python="$(server_python)"
    if [[ -z "$python" ]]; then
      problem "the Jupyter server's Python was not found: no kernel provisioner, no memory meter"
    else
      install_provisioner "$python" || true
      limit="$(systemctl show -p MemoryMax --value "$unit")"
      install_resource_usage "$python" "$limit" "$(systemctl show -p User --value "$unit")"
    fi
  fi
  if [[ "$WATCHER_NEW" == 1 ]] || { [[ -f "/etc/systemd/system/$WATCHER_UNIT" ]] && ! systemctl is-active --quiet "$WATCHER_UNIT"; }; then
    if systemctl enable --now "$WATCHER_UNIT" >/dev/null 2>&1; then
      log "enabled and started $WATCHER_UNIT"
    else
      problem "$WATCHER_UNIT did not start (journalctl -u $WATCHER_UNIT)"
    fi
  fi
  if [[ "${PROVISIONER_NEW:-0}" == 1 && -n "$unit" ]]; then
    kernels=0
    for pid in $(unit_pids "$unit"); do is_kernel_pid "$pid" && kernels=$((kernels + 1)); done
    if [[ "$kernels" == 0 ]]; then  # nobody's work to lose: start the server on the new config now
      systemctl restart "$unit"
      log "restarted $unit (no kernel running) so that new kernels start through the provisioner"
    else
      log "$kernels running kernels raised now; the server starts kernels through the provisioner from its next start"
    fi
  fi
  [[ "$CHANGED" == 1 ]] || log "already in place: nothing changed"
  if [[ ${#PROBLEMS[@]} -gt 0 ]]; then report "$unit" degraded; else report "$unit" ok; fi
}

main "$@"
