/* test_npy.c - .npy files written by hloscope read back bit-exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hloscope/hs_npy.h"

static void npy_round_trips_f32_with_aligned_header(void **state)
{
    (void)state;
    char dir[] = "/tmp/hs_npy_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/sub/dir/a.npy", dir);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    hs_error e;
    assert_int_equal(hs_mkdirs(sub, &e), HS_OK);

    hs_shape s = hs_shape_make(HS_F32, 3, (int64_t[]){2, 3, 4});
    hs_tensor *t = hs_tensor_new(&s);
    for (int i = 0; i < 24; i++)
        hs_tensor_f32(t)[i] = (float)i * 0.25f - 3.0f;
    assert_int_equal(hs_npy_write(path, t, &e), HS_OK);

    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal((size - 24 * 4) % 64, 0); /* header padded to 64 */

    hs_tensor *r = hs_npy_read(path, &e);
    assert_non_null(r);
    assert_int_equal(r->shape.rank, 3);
    assert_int_equal(r->shape.dims[2], 4);
    assert_memory_equal(r->data, t->data, 24 * 4);
    hs_tensor_free(r);
    hs_tensor_free(t);
    remove(path);
}

static void npy_rejects_missing_and_foreign_files(void **state)
{
    (void)state;
    hs_error e;
    hs_error_clear(&e);
    assert_null(hs_npy_read("/nonexistent/x.npy", &e));
    assert_int_equal(e.status, HS_ERR_IO);
    char path[] = "/tmp/hs_npy_bad_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hello world, not numpy", 22), 22);
    close(fd);
    assert_null(hs_npy_read(path, &e));
    assert_int_equal(e.status, HS_ERR_PARSE);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(npy_round_trips_f32_with_aligned_header),
        cmocka_unit_test(npy_rejects_missing_and_foreign_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
