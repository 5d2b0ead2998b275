/* api_openapi_blob.c - docs/openapi.json embedded in the binary at build
 * time (HS_OPENAPI_PATH is set by CMake, which also rebuilds this file when
 * the document changes), NUL-terminated. */
#ifndef HS_OPENAPI_PATH
#error "HS_OPENAPI_PATH must name docs/openapi.json"
#endif

__asm__(".section .rodata\n"
        ".global api_openapi_json\n"
        ".type api_openapi_json, @object\n"
        ".balign 16\n"
        "api_openapi_json:\n"
        ".incbin \"" HS_OPENAPI_PATH "\"\n"
        ".byte 0\n"
        ".size api_openapi_json, . - api_openapi_json\n"
        ".previous\n");
