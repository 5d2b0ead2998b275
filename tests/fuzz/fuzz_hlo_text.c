/* fuzz_hlo_text.c - HLO text: parse -> verify -> print -> parse.
 *
 * Invariants: parsing never crashes and an error always has a message (in
 * valid UTF-8 when the input was); for a module that parses and verifies,
 * its printed text parses and verifies again and prints to the same text
 * (print(parse(print(parse(x)))) == print(parse(x)), hs_hlo_text.h). The
 * input is parsed as a split file (hs_hlo_parse_many), as the server and
 * the CLI read it. */
#include <string.h>

#include "fuzz.h"
#include "fuzz_utf8.h"
#include "hloscope/hs_hlo_text.h"

/* Beyond this the harness spends its time on size, not on structure. */
#define MAX_INPUT (64 * 1024)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    return 0;
}

static void check_error(const hs_error *e, const uint8_t *data, size_t size)
{
    size_t n = strnlen(e->message, sizeof e->message);
    FUZZ_CHECK(e->status != HS_OK, "a failure with status OK");
    FUZZ_CHECK(n > 0 && n < sizeof e->message, "an error without a message");
    if (fuzz_utf8_valid(data, size))
        FUZZ_CHECK(fuzz_utf8_valid((const uint8_t *)e->message, n),
                   "the message of valid UTF-8 input is not UTF-8: %s", e->message);
}

/* One module that verified: its print is a fixed point. */
static void round_trip(const hs_module *m)
{
    char *first = hs_hlo_print(m);
    FUZZ_CHECK(first, "print failed");
    hs_error e;
    hs_module *again = hs_hlo_parse(first, strlen(first), &e);
    FUZZ_CHECK(again, "printed text does not parse: %d:%d: %s\n--- text:\n%s",
               e.line, e.column, e.message, first);
    FUZZ_CHECK(hs_module_verify(again, &e) == HS_OK,
               "printed text does not verify: %s: %s\n--- text:\n%s", e.instruction,
               e.message, first);
    char *second = hs_hlo_print(again);
    FUZZ_CHECK(second, "print failed");
    FUZZ_CHECK(strcmp(first, second) == 0,
               "print is not a fixed point\n--- first:\n%s\n--- second:\n%s", first,
               second);
    free(second);
    hs_module_free(again);
    free(first);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT)
        return 0;
    hs_error e;
    hs_module **mods = NULL;
    int n = hs_hlo_parse_many((const char *)data, size, &mods, &e);
    if (n < 0) {
        check_error(&e, data, size);
        return 0;
    }
    for (int k = 0; k < n; k++) {
        if (hs_module_verify(mods[k], &e) == HS_OK)
            round_trip(mods[k]);
        else
            check_error(&e, data, size);
        hs_module_free(mods[k]);
    }
    free(mods);
    return 0;
}
