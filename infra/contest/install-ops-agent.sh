#!/bin/bash
# notebook-medic: keep the Ops Agent running on this Workbench notebook.
#
# Workbench runs this as the instance's post-startup script (metadata post-startup-script, behaviour
# download_and_run_every_start; infra/contest/main.tf). The Ops Agent ships the kernel's OOM-kill
# lines (logs/syslog) and the memory metric agent.googleapis.com/memory/percent_used that the bot's
# memory warning and its "no memory reports" alert watch. It is installed with Google's documented
# repository script; every later start only checks that it runs (a Workbench upgrade replaces the
# boot disk, and with it the agent, so a start after an upgrade installs it again).
set -euo pipefail

if systemctl is-active --quiet google-cloud-ops-agent; then
  exit 0
fi
if ! dpkg-query -W -f='${Status}' google-cloud-ops-agent 2>/dev/null | grep -q "install ok installed"; then
  workdir="$(mktemp -d)"
  curl --silent --show-error --fail --retry 5 --output "$workdir/add-repo.sh" \
    https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh
  bash "$workdir/add-repo.sh" --also-install
  rm -rf "$workdir"
fi
systemctl enable --now google-cloud-ops-agent
