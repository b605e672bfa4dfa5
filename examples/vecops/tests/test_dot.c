/* gate: vo_dot against a closed form on the deterministic inputs, and its edge cases. */
#include "check.h"
#include "vecops.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    const size_t sizes[] = {1, 5, 36, 1000, 100001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s];
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        if (x == NULL || y == NULL)
            return 1;
        vo_inputs(x, y, n);
        long long twice = 0; /* 2 * x[i] * y[i] is an integer: the exact sum */
        for (size_t i = 0; i < n; i++)
            twice += (long long)((long long)(i % 7) - 3) * (long long)(i % 5 + 1);
        const double got = vo_dot(x, y, n);
        char what[80];
        snprintf(what, sizeof what, "dot n=%zu = %.1f (exact)", n, (double)twice / 2.0);
        check(what, got == (double)twice / 2.0);
        free(x);
        free(y);
    }
    float a = 1.0f;
    check("dot n=0 is 0", vo_dot(&a, &a, 0) == 0.0);
    float big[2] = {3e38f, 3e38f};
    check("dot sums in double (no float overflow)", vo_dot(big, big, 2) > 1e77);
    printf("test_dot: %d failed\n", failed);
    return failed != 0;
}
