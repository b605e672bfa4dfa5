/* host: the library reports the project's version (argv[1], from CMakeLists.txt) and
 * says which compiler and C standard built it. */
#include "vecops.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_version EXPECTED_VERSION\n");
        return 2;
    }
#if defined(__clang__)
    printf("compiler clang %s\n", __clang_version__);
#elif defined(__GNUC__)
    printf("compiler gcc %d.%d.%d\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    printf("compiler unknown\n");
#endif
    printf("c standard %ld\n", (long)__STDC_VERSION__);
    printf("sizeof(size_t) %zu\n", sizeof(size_t));
    const int ok = strcmp(vo_version(), argv[1]) == 0;
    printf("%s version %s (expected %s)\n", ok ? "ok  " : "FAIL", vo_version(), argv[1]);
    return !ok;
}
