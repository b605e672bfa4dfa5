/* gate;cuda: the CUDA kernels against the CPU ones on the same inputs, bit-exact (the
 * inputs make every product and partial sum exact). No CUDA device: exits 77 and says
 * so; CTest counts that as a failure, never a pass (a run without a GPU proves nothing). */
#include "check.h"
#include "vecops.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    if (!vo_cuda_available()) {
        printf("test_cuda: no CUDA device: not run\n");
        return 77;
    }
    const size_t sizes[] = {1, 255, 256, 4097, 100000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s];
        float *x = (float *)malloc(n * sizeof(float));
        float *y = (float *)malloc(n * sizeof(float));
        float *yc = (float *)malloc(n * sizeof(float));
        if (x == NULL || y == NULL || yc == NULL)
            return 1;
        vo_inputs(x, y, n);
        vo_inputs(x, yc, n);
        double want = vo_dot(x, y, n), got = -1.0;
        char what[80];
        snprintf(what, sizeof what, "cuda dot n=%zu equals cpu", n);
        check(what, vo_cuda_dot(&got, x, y, n) == 0 && got == want);
        vo_saxpy(y, 2.0f, x, n);
        int same = vo_cuda_saxpy(yc, 2.0f, x, n) == 0;
        for (size_t i = 0; same && i < n; i++)
            same = yc[i] == y[i];
        snprintf(what, sizeof what, "cuda saxpy n=%zu equals cpu", n);
        check(what, same);
        free(x);
        free(y);
        free(yc);
    }
    printf("test_cuda: %d failed\n", failed);
    return failed != 0;
}
