#!/usr/bin/env python3
"""A stand-in for `nvidia-smi` (issue 47) for a machine without a GPU: tests put it first on PATH as `nvidia-smi`.
It prints the recorded real output formats of the three invocations the GPU guard makes, from the state in
the JSON file named by $NVIDIA_SMI_STANDIN (default /opt/standin/nvidia-smi.json, where a container test puts
it): {"mode": "ok" | "no-driver" | "mismatch", "gpus": [{"name", "used", "total"}] (MiB), "apps": [{"pid",
"used", "gpu"}] (MiB; a pid no longer in /proc, or a zombie, is not listed: a process that exited has released
its GPU context)}.

Sources of each format (docs/fidelity.md, "Issue 47: the GPU guard"):
- options, fields and units: NVIDIA's nvidia-smi(1) manual page (manpages.ubuntu.com/manpages/jammy/man1/
  nvidia-smi.1.html, nvidia-utils-580-server 580.95.05: --query-gpu, --query-compute-apps, --format=csv with
  noheader and nounits, -q -x);
- CSV rows "VALUE, VALUE" (a comma and a space), "[N/A]" where a value is not available: the manual's CSV section;
  public scripts that parse `--query-compute-apps=pid,used_memory --format=csv,noheader,nounits` strip that space
  (awk -F, with gsub(/ /,"",$2));
- the XML: the <nvidia_smi_log> document, DOCTYPE nvsmi_device_v13.dtd, <gpu id="..."> with <product_name>,
  <fb_memory_usage><total>/<used> "N MiB", <processes><process_info> with <gpu_instance_id>, <compute_instance_id>,
  <pid>, <type>, <process_name>, <used_memory> ("235 MiB", or "N/A"), as recorded from `nvidia-smi -q -x` on
  driver 595.71.05 and quoted in a public test fixture (searched with the code search of this session);
- the driver failure, on stdout with exit status 9: "NVIDIA-SMI has failed because it couldn't communicate with the
  NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running." (GoogleCloudPlatform/
  compute-gpu-installation issue 33, on a Compute Engine Debian 11 VM after a kernel upgrade; exit 9 is NVML's
  NVML_ERROR_DRIVER_NOT_LOADED, cuda.bindings.nvml.Return, and recorded as "(exit 9)" in public runbooks);
- the library mismatch after a driver upgrade without a reboot: "Failed to initialize NVML: Driver/library version
  mismatch" (greshake/i3status-rust PR 771, lyulyul/shine-cluster issue 50); its exit status is not documented:
  18 here (NVML_ERROR_LIB_RM_VERSION_MISMATCH), and the guard treats every non-zero status alike.
"""

import json
import os
import sys

NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
             "latest NVIDIA driver is installed and running.\n")
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\n"


def main(argv):
    with open(os.environ.get("NVIDIA_SMI_STANDIN", "/opt/standin/nvidia-smi.json"), encoding="utf-8") as handle:
        state = json.load(handle)
    mode = state.get("mode", "ok")
    if mode == "no-driver":
        sys.stdout.write(NO_DRIVER)
        return 9
    if mode == "mismatch":
        sys.stdout.write(MISMATCH)
        return 18
    gpus = state.get("gpus", [])
    apps = [app for app in state.get("apps", []) if running(app["pid"])]
    if "--query-compute-apps=pid,used_memory" in argv:
        for app in apps:
            used = "[N/A]" if app.get("used") is None else str(app["used"])
            sys.stdout.write(f"{app['pid']}, {used}\n")
        return 0
    if "--query-gpu=index,name,memory.used,memory.total" in argv:
        for index, gpu in enumerate(gpus):
            sys.stdout.write(f"{index}, {gpu['name']}, {gpu['used']}, {gpu['total']}\n")
        return 0
    if "-q" in argv and "-x" in argv:
        sys.stdout.write(xml(gpus, apps))
        return 0
    sys.stderr.write(f"nvidia-smi stand-in: invocation not recorded: {' '.join(argv)}\n")
    return 2


def running(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def xml(gpus, apps):
    out = ['<?xml version="1.0" ?>', '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">', "<nvidia_smi_log>",
           "\t<driver_version>550.90.07</driver_version>", f"\t<attached_gpus>{len(gpus)}</attached_gpus>"]
    for index, gpu in enumerate(gpus):
        out += [f'\t<gpu id="00000000:00:{4 + index:02X}.0">', f"\t\t<product_name>{gpu['name']}</product_name>",
                "\t\t<fb_memory_usage>", f"\t\t\t<total>{gpu['total']} MiB</total>",
                "\t\t\t<reserved>254 MiB</reserved>", f"\t\t\t<used>{gpu['used']} MiB</used>",
                f"\t\t\t<free>{gpu['total'] - gpu['used']} MiB</free>", "\t\t</fb_memory_usage>", "\t\t<processes>"]
        for app in (a for a in apps if a.get("gpu", 0) == index):
            used = "N/A" if app.get("used") is None else f"{app['used']} MiB"
            out += ["\t\t\t<process_info>", "\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>",
                    "\t\t\t\t<compute_instance_id>N/A</compute_instance_id>", f"\t\t\t\t<pid>{app['pid']}</pid>",
                    "\t\t\t\t<type>C</type>", f"\t\t\t\t<process_name>{app.get('name', 'python')}</process_name>",
                    f"\t\t\t\t<used_memory>{used}</used_memory>", "\t\t\t</process_info>"]
        out += ["\t\t</processes>", "\t</gpu>"]
    return "\n".join([*out, "</nvidia_smi_log>", ""])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
