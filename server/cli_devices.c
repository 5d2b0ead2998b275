/* cli_devices.c - `hloscope devices`: the emulated device presets. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hloscope/hs_device.h"

int cli_devices(int argc, char **argv)
{
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        cli_usage("devices", stdout);
        return HS_EXIT_OK;
    }
    if (argc > 0) {
        fprintf(stderr, "hloscope: devices takes no arguments, not '%s'\n", argv[0]);
        return HS_EXIT_USAGE;
    }
    int n;
    const hs_device_spec *d = hs_device_presets(&n);
    printf("%-16s %-9s %12s %14s %12s %12s\n", "name", "kind", "HBM GiB",
           "peak TFLOP/s", "HBM GB/s", "link GB/s");
    for (int k = 0; k < n; k++)
        printf("%-16s %-9s %12.3f %14.1f %12.1f %12.1f\n", d[k].name, d[k].kind,
               d[k].hbm_bytes / (1024.0 * 1024 * 1024), d[k].peak_flops / 1e12,
               d[k].hbm_bandwidth / 1e9, d[k].host_link_bandwidth / 1e9);
    return HS_EXIT_OK;
}
