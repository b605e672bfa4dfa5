/* vecops CLI: run a kernel on the deterministic inputs and print one line.
 *
 *   vecops --version
 *   vecops [--device cpu|cuda] saxpy N     saxpy n=N a=2 device=D checksum=C
 *   vecops [--device cpu|cuda] dot N       dot n=N device=D value=V
 *
 * --device cuda exists only in the CUDA build (vecops-cuda). Bad usage exits 2; a
 * CUDA error, or --device cuda with no CUDA device, exits 1. */
#include "vecops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: vecops --version | vecops [--device cpu|cuda] saxpy|dot N\n");
    return 2;
}

static int parse_n(const char *text, size_t *n)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v == 0 || v > (1ull << 26) || text[0] == '-')
        return -1;
    *n = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *device = "cpu";
    int i = 1;
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("vecops %s\n", vo_version());
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "--device") == 0) {
        device = argv[2];
        i = 3;
    }
#ifdef VO_WITH_CUDA
    const int cuda = strcmp(device, "cuda") == 0;
    if (!cuda && strcmp(device, "cpu") != 0)
        return usage();
    if (cuda && !vo_cuda_available()) {
        fprintf(stderr, "vecops: --device cuda: no CUDA device\n");
        return 1;
    }
#else
    const int cuda = 0;
    if (strcmp(device, "cpu") != 0)
        return usage();
#endif
    size_t n = 0;
    if (argc != i + 2 || parse_n(argv[i + 1], &n) != 0)
        return usage();
    float *x = malloc(n * sizeof(float));
    float *y = malloc(n * sizeof(float));
    if (x == NULL || y == NULL) {
        fprintf(stderr, "vecops: out of memory\n");
        free(x);
        free(y);
        return 1;
    }
    vo_inputs(x, y, n);
    int status = 0;
    if (strcmp(argv[i], "saxpy") == 0) {
#ifdef VO_WITH_CUDA
        status = cuda ? vo_cuda_saxpy(y, 2.0f, x, n) : (vo_saxpy(y, 2.0f, x, n), 0);
#else
        vo_saxpy(y, 2.0f, x, n);
#endif
        double sum = 0.0;
        for (size_t k = 0; k < n; k++)
            sum += y[k];
        if (status == 0)
            printf("saxpy n=%zu a=2 device=%s checksum=%g\n", n, device, sum);
    } else if (strcmp(argv[i], "dot") == 0) {
        double value = 0.0;
#ifdef VO_WITH_CUDA
        status = cuda ? vo_cuda_dot(&value, x, y, n) : (value = vo_dot(x, y, n), 0);
#else
        value = vo_dot(x, y, n);
#endif
        if (status == 0)
            printf("dot n=%zu device=%s value=%g\n", n, device, value);
    } else {
        status = -1;
    }
    (void)cuda;
    free(x);
    free(y);
    if (status == -1)
        return usage();
    if (status != 0) {
        fprintf(stderr, "vecops: CUDA error %d\n", status);
        return 1;
    }
    return 0;
}
