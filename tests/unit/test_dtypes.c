/*
 * test_dtypes.c - every primitive type of XLA's xla_data.proto (but
 * OPAQUE_TYPE) parses, prints back, has XLA's width, and converts to and
 * from f32 in a module that verifies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hloscope/hs_hlo_text.h"
#include "hloscope/hs_ir.h"
#include "hlo_test_helpers.h"

/* XLA's names and bit widths (primitive_util::BitWidth). */
static const struct {
    const char *name;
    int bits;
    bool is_float;
} xla_types[] = {
    {"pred", 8, false},   {"s1", 1, false},    {"s2", 2, false},
    {"s4", 4, false},     {"s8", 8, false},    {"s16", 16, false},
    {"s32", 32, false},   {"s64", 64, false},  {"u1", 1, false},
    {"u2", 2, false},     {"u4", 4, false},    {"u8", 8, false},
    {"u16", 16, false},   {"u32", 32, false},  {"u64", 64, false},
    {"f16", 16, true},    {"bf16", 16, true},  {"f32", 32, true},
    {"f64", 64, true},    {"f8e5m2", 8, true}, {"f8e4m3", 8, true},
    {"f8e4m3fn", 8, true}, {"f8e4m3b11fnuz", 8, true},
    {"f8e3m4", 8, true},  {"f8e5m2fnuz", 8, true},
    {"f8e4m3fnuz", 8, true}, {"f4e2m1fn", 4, true},
    {"f8e8m0fnu", 8, true}, {"c64", 64, false}, {"c128", 128, false},
};

static void every_xla_type_has_its_name_and_width(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof xla_types / sizeof xla_types[0]; k++) {
        hs_dtype t;
        const char *n = xla_types[k].name;
        if (!hs_dtype_parse(n, strlen(n), &t))
            fail_msg("%s is not parsed", n);
        assert_string_equal(hs_dtype_name(t), n);
        assert_int_equal(hs_dtype_bits(t), xla_types[k].bits);
        if (hs_dtype_is_float(t) != xla_types[k].is_float)
            fail_msg("%s: is_float %d", n, hs_dtype_is_float(t));
    }
    /* Sub-byte arrays are packed: 9 x s1 take 2 bytes, 3 x f4 2. */
    hs_shape s1 = hs_shape_make(HS_S1, 1, (int64_t[]){9});
    assert_int_equal(hs_shape_bytes(&s1), 2);
    hs_shape f4 = hs_shape_make(HS_F4E2M1FN, 1, (int64_t[]){3});
    assert_int_equal(hs_shape_bytes(&f4), 2);
}

static void every_type_converts_round_trip_and_prints_back(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof xla_types / sizeof xla_types[0]; k++) {
        const char *n = xla_types[k].name;
        char text[600];
        snprintf(text, sizeof text,
                 "HloModule types\n\n"
                 "ENTRY %%main (x: f32[4]) -> (%s[4], f32[4]) {\n"
                 "  %%x = f32[4]{0} parameter(0)\n"
                 "  %%c = %s[4]{0} convert(f32[4]{0} %%x)\n"
                 "  %%b = f32[4]{0} convert(%s[4]{0} %%c)\n"
                 "  ROOT %%t = (%s[4]{0}, f32[4]{0}) tuple(%s[4]{0} %%c, "
                 "f32[4]{0} %%b)\n"
                 "}\n",
                 n, n, n, n, n);
        hs_module *m = parse(text);
        hs_error e;
        hs_error_clear(&e);
        if (hs_module_verify(m, &e) != HS_OK)
            fail_msg("%s: %s", n, e.message);
        char *printed = print(m);
        assert_string_equal(printed, text);
        free(printed);
        hs_module_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_xla_type_has_its_name_and_width),
        cmocka_unit_test(every_type_converts_round_trip_and_prints_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
