/* Each worker sees only its own GPU. A worker started for GPU N (its job's "device", or the
 * PyTorch job's "cuda:N") runs with CUDA_VISIBLE_DEVICES naming that GPU's UUID and
 * KOPT_WORKER_PINNED=N, and opens CUDA's device 0 for it: its driver then sets up one GPU,
 * not every GPU of the host, and no context of it can land on another GPU (docs/scale.md,
 * "Each worker sees its own GPU"). KOPT_PIN_WORKERS=0 turns this off. */
#include "worker_int.h"
#include "eval_int.h"
#include "kopt/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kopt__job_gpu(const json_t *job)
{
    json_t *d = json_object_get(job, "device");
    const char *t = json_string_value(json_object_get(json_object_get(job, "torch"), "device"));
    char *end;
    long n;

    if (json_is_integer(d))
        return json_integer_value(d) >= 0 && json_integer_value(d) < KOPT_MAX_VISIBLE
                   ? (int)json_integer_value(d) : -1;
    if (!t || strncmp(t, "cuda:", 5) != 0 || t[5] < '0' || t[5] > '9')
        return -1;
    n = strtol(t + 5, &end, 10);
    return *end == 0 && n < KOPT_MAX_VISIBLE ? (int)n : -1;
}

void kopt__worker_pin_for(int gpu, int wrapped, kopt__worker_pin *p)
{
    const char *off = getenv("KOPT_PIN_WORKERS");
    kopt_device_info info;
    int mig = 0;

    memset(p, 0, sizeof(*p));
    p->gpu = -1;
    /* a wrapper (compute-sanitizer, ncu) is left as it was: it is told the GPU itself */
    if (gpu < 0 || wrapped || (off && strcmp(off, "0") == 0))
        return;
    if (kopt__device_nvml_mig(gpu, &info, &mig) != KOPT_OK || mig ||
        strncmp(info.uuid, "GPU-", 4) != 0 || strlen(info.uuid) >= sizeof(p->visible))
        return;                        /* no NVML, a GPU it cannot name, MIG: as before */
    p->gpu = gpu;
    snprintf(p->visible, sizeof(p->visible), "%s", info.uuid);
    snprintf(p->gpu_text, sizeof(p->gpu_text), "%d", gpu);
}

int kopt__pinned_ordinal(int gpu)
{
    const char *pinned = getenv("KOPT_WORKER_PINNED");
    char *end;

    if (!pinned || !pinned[0])
        return gpu;
    return strtol(pinned, &end, 10) == gpu && *end == 0 ? 0 : gpu;
}
