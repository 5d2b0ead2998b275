/*
 * invariant.h - HS_ASSERT(cond): a programmer error, checked in debug
 * builds.
 *
 * Two kinds of failure, kept apart (docs/ARCHITECTURE.md, "Errors and
 * assertions"): what a user's input can cause is an hs_error value that
 * says where (instruction, line:column, JSON path), in every build; what
 * only a bug in hloscope can cause (a rule breaking its contract, a
 * table out of step with the opcode list) is an HS_ASSERT, which stops a
 * debug build at once with file:line and the condition, and compiles to
 * nothing under NDEBUG (release builds: CMake's RelWithDebInfo and
 * Release define it). An assertion is never the only guard on a path
 * user input reaches: where a broken invariant would crash a release
 * build, the code after the assertion still fails safely.
 */
#ifndef HS_IR_INVARIANT_H
#define HS_IR_INVARIANT_H

/* Prints "hloscope: internal error: FILE:LINE: assertion 'COND' failed"
 * to stderr and aborts. */
void hs__assert_fail(const char *file, int line, const char *cond)
    __attribute__((noreturn, cold));

#ifdef NDEBUG
/* Not evaluated (sizeof), but still compiled: the condition stays
 * correct code, and its variables count as used. */
#define HS_ASSERT(cond) ((void)sizeof(!(cond)))
#else
#define HS_ASSERT(cond)                                                    \
    ((cond) ? (void)0 : hs__assert_fail(__FILE__, __LINE__, #cond))
#endif

#endif
