/* The tests' one check: prints "ok   WHAT" or "FAIL WHAT" and counts the failures. */
#ifndef VECOPS_TESTS_CHECK_H
#define VECOPS_TESTS_CHECK_H

#include <stdio.h>

static int failed = 0;

static void check(const char *what, int ok)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    failed += !ok;
}

#endif
