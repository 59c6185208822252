/* The Prometheus text exposition format (0.0.4) of everything the model
 * holds: what --prometheus prints for node_exporter's textfile collector
 * and what --serve answers on /metrics, from one function so that the two
 * cannot drift. Names come from the stats layout's X-macro: counters get
 * _total, gauges keep their name. */
#ifndef SPILLWAY_TOOLS_TOP_PROM_H
#define SPILLWAY_TOOLS_TOP_PROM_H
#include "tools/top_model.h"

#include <stdio.h>

#define TOP_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* One series per process and device in use, labelled pid, user, command
 * (the program without its path), gpu (the host's index when it can be
 * told, else the process's own device number), cuda_device (the process's
 * own), UUID (with NVML), Hostname, and the container's identity when it
 * has one (container_id, pod_uid; pod, namespace, container from its
 * environment). With NVML, spillway_gpu_info per device, and where NVML
 * lists a device's processes, spillway_gpu_other_processes_used_bytes: the
 * memory of those not under spillway. */
void top_print_prometheus(FILE *f, const struct top_model *m);
#endif
