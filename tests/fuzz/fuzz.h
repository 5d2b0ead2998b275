/*
 * fuzz.h - what the harnesses under tests/fuzz/ share: libFuzzer's entry
 * points (also called by replay_main.c, the plain driver CTest uses) and
 * the way a harness reports a broken invariant.
 *
 * A harness returns 0 for every input the engine answers, whatever the
 * answer: an error with a message is a correct outcome. It aborts (through
 * FUZZ_CHECK) only when an invariant breaks; crashes, leaks and undefined
 * behaviour are reported by the sanitizers.
 */
#ifndef HLOSCOPE_FUZZ_H
#define HLOSCOPE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with the broken invariant, where it was checked. */
#define FUZZ_CHECK(cond, ...)                                          \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, \
                    __LINE__, #cond);                                  \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            abort();                                                   \
        }                                                              \
    } while (0)

#endif
