/* cli.h - the command-line interface of the hloscope binary. */
#ifndef HLOSCOPE_CLI_H
#define HLOSCOPE_CLI_H

enum { HS_EXIT_OK = 0, HS_EXIT_RUNTIME = 1, HS_EXIT_USAGE = 2 };

int hs_cli_compile(int argc, char **argv);
int hs_cli_run(int argc, char **argv);
int hs_cli_devices(int argc, char **argv);

#endif
