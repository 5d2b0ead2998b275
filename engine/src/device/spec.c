/* spec.c - device presets from published figures (see docs/DEVICES.md). */
#include <string.h>

#include "device/device_internal.h"

#define GiB (1024.0 * 1024.0 * 1024.0)
#define MiB (1024.0 * 1024.0)
#define GB 1e9
#define TFLOPS 1e12

/* peak_flops is the dense bf16 matrix peak: the figure the vendors publish
 * and the one a compiler's roofline uses for matmul-bound work. */
static const hs_device_spec presets[] = {
    {"tpu-v5e", "tpu", 16 * GiB, 197 * TFLOPS, 819 * GB, 32 * GB, 48 * GB,
     "Google Cloud TPU v5e documentation (system architecture): 16 GiB "
     "HBM2, 197 TFLOP/s bf16, 819 GB/s HBM bandwidth; host link: PCIe 4.0 "
     "x16 nominal 32 GB/s per direction (assumption, Google does not publish "
     "it); host memory: 48 GB of a ct5lp-hightpu-1t VM"},
    {"tpu-v5p", "tpu", 95 * GiB, 459 * TFLOPS, 2765 * GB, 32 * GB, 112 * GB,
     "Google Cloud TPU v5p documentation (system architecture): 95 GiB "
     "HBM2e, 459 TFLOP/s bf16, 2765 GB/s HBM bandwidth; host link: PCIe 4.0 "
     "x16 nominal 32 GB/s (assumption); host memory: 448 GB per 4-chip "
     "ct5p-hightpu-4t VM, 112 GB per chip"},
    {"tpu-v4", "tpu", 32 * GiB, 275 * TFLOPS, 1200 * GB, 32 * GB, 100 * GB,
     "Google Cloud TPU v4 documentation (system architecture): 32 GiB HBM2, "
     "275 TFLOP/s bf16, 1200 GB/s HBM bandwidth; host link: PCIe 4.0 x16 "
     "nominal 32 GB/s (assumption); host memory: 407 GB per 4-chip "
     "ct4p-hightpu-4t VM, ~100 GB per chip"},
    {"gpu-a100-40g", "gpu", 40 * GiB, 312 * TFLOPS, 1555 * GB, 32 * GB,
     128 * GB,
     "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB SXM): 40 GB HBM2, "
     "312 TFLOP/s bf16 dense, 1555 GB/s; host link: PCIe 4.0 x16 32 GB/s; "
     "host memory: 1 TB per 8-GPU DGX A100, 128 GB per GPU"},
    {"gpu-a100-80g", "gpu", 80 * GiB, 312 * TFLOPS, 2039 * GB, 32 * GB,
     256 * GB,
     "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM): 80 GB HBM2e, "
     "312 TFLOP/s bf16 dense, 2039 GB/s; host link: PCIe 4.0 x16 32 GB/s; "
     "host memory: 2 TB per 8-GPU DGX A100 640GB, 256 GB per GPU"},
    {"gpu-h100-sxm", "gpu", 80 * GiB, 989 * TFLOPS, 3350 * GB, 64 * GB,
     256 * GB,
     "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM): 80 GB HBM3, 989 "
     "TFLOP/s bf16 dense (1979 with sparsity), 3.35 TB/s; host link: PCIe "
     "5.0 x16 64 GB/s; host memory: 2 TB per 8-GPU DGX H100, 256 GB per GPU"},
    {"teach-16m", "teaching", 16 * MiB, 100e9, 10 * GB, 1 * GB, 256 * MiB,
     "hloscope teaching preset: invented, small and slow so that memory "
     "limits and offload costs are visible on toy models"},
    {"teach-64m", "teaching", 64 * MiB, 100e9, 10 * GB, 1 * GB, 1024 * MiB,
     "hloscope teaching preset: invented, small and slow so that memory "
     "limits and offload costs are visible on toy models"},
};

const hs_device_spec *hs_device_presets(int *count)
{
    if (count)
        *count = (int)(sizeof presets / sizeof presets[0]);
    return presets;
}

const hs_device_spec *hs_device_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

const char *hs_device_default_name(void) { return "tpu-v5e"; }
