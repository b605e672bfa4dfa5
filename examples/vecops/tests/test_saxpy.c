/* gate: vo_saxpy against a double-precision reference, and its edge cases. */
#include "check.h"
#include "vecops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    const size_t sizes[] = {1, 7, 64, 1000, 4097};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s];
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        if (x == NULL || y == NULL)
            return 1;
        vo_inputs(x, y, n);
        int exact = 1;
        float *want = malloc(n * sizeof(float));
        if (want == NULL)
            return 1;
        for (size_t i = 0; i < n; i++)
            want[i] = (float)(-1.5 * (double)x[i] + (double)y[i]);
        vo_saxpy(y, -1.5f, x, n);
        for (size_t i = 0; i < n; i++)
            exact &= y[i] == want[i]; /* small integers and halves: exact in float */
        char what[64];
        snprintf(what, sizeof what, "saxpy n=%zu a=-1.5 exact", n);
        check(what, exact);
        free(x);
        free(y);
        free(want);
    }
    float one = 4.0f;
    vo_saxpy(&one, 2.0f, &one, 0);
    check("saxpy n=0 leaves y alone", one == 4.0f);
    float v[3] = {1.0f, -2.0f, 0.5f};
    vo_scale(v, -2.0f, 3);
    check("scale by -2", v[0] == -2.0f && v[1] == 4.0f && v[2] == -1.0f);
    float big = 3e38f, xs = 3e38f;
    vo_saxpy(&big, 1.0f, &xs, 1);
    check("saxpy overflow gives inf", isinf(big));
    printf("test_saxpy: %d failed\n", failed);
    return failed != 0;
}
