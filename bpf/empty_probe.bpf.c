// SPDX-License-Identifier: GPL-2.0
/* The floor: an empty uprobe. Benchmarks attach it to the same function the
 * agent probes, so the agent's cost is reported against what any uprobe pays. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int gl_empty(void *ctx) { return 0; }
