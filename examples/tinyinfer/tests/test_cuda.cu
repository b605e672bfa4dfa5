/* Checks the CUDA kernels against the CPU kernels.
 * Exits 77 (skip) when no CUDA device is present, 1 on any mismatch.
 * With TINYINFER_EVIDENCE=FILE, appends evidence cells with arm "cuda". */
#include "tinyinfer.h"
#include "ti_inputs.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EPS 1e-5f

static int n_pass, n_fail;

static float *alloc_f(size_t n)
{
    float *p = (float *)malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "test_cuda: out of memory\n");
        exit(1);
    }
    return p;
}

static void fill_random(float *p, size_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 0x9e3779b9u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        p[i] = (float)(s >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
    }
}

static void report(int ok, const char *what, double err)
{
    printf("%-4s %s max_abs_diff=%.3g\n", ok ? "ok" : "FAIL", what, err);
    if (ok)
        n_pass++;
    else
        n_fail++;
}

static int cuda_status(int st, const char *what)
{
    if (st != 0)
        fprintf(stderr, "test_cuda: %s: CUDA error %d\n", what, st);
    return st;
}

static double check_rmsnorm(size_t n)
{
    float *x = alloc_f(n), *w = alloc_f(n), *cpu = alloc_f(n), *gpu = alloc_f(n);
    fill_random(x, n, (uint32_t)n);
    fill_random(w, n, (uint32_t)n + 1000u);
    ti_rmsnorm_f32(cpu, x, w, n, EPS);
    int ok = cuda_status(ti_cuda_rmsnorm_f32(gpu, x, w, n, EPS), "rmsnorm") == 0;

    double max_diff = 0.0;
    for (size_t i = 0; ok && i < n; i++) {
        const double d = fabs((double)gpu[i] - cpu[i]);
        /* Both sides carry ~n*u relative error from the sum of squares. */
        const double tol = 2.0 * (double)(n + 8) * FLT_EPSILON * fabs(cpu[i]) + FLT_MIN;
        if (d > max_diff)
            max_diff = d;
        if (!(d <= tol))
            ok = 0;
    }
    char what[64];
    snprintf(what, sizeof what, "rmsnorm n=%zu", n);
    report(ok, what, max_diff);
    free(gpu);
    free(cpu);
    free(w);
    free(x);
    return max_diff;
}

static double check_matvec(size_t rows, size_t cols)
{
    float *W = alloc_f(rows * cols), *x = alloc_f(cols);
    float *cpu = alloc_f(rows), *gpu = alloc_f(rows);
    fill_random(W, rows * cols, (uint32_t)(rows * 31 + cols));
    fill_random(x, cols, (uint32_t)cols + 7u);
    ti_matvec_f32(cpu, W, x, rows, cols);
    int ok = cuda_status(ti_cuda_matvec_f32(gpu, W, x, rows, cols), "matvec") == 0;

    double max_diff = 0.0;
    for (size_t r = 0; ok && r < rows; r++) {
        double abs_acc = 0.0;
        for (size_t c = 0; c < cols; c++)
            abs_acc += fabs((double)W[r * cols + c] * x[c]);
        const double d = fabs((double)gpu[r] - cpu[r]);
        const double tol = 2.0 * (double)(cols + 2) * FLT_EPSILON * abs_acc + FLT_MIN;
        if (d > max_diff)
            max_diff = d;
        if (!(d <= tol))
            ok = 0;
    }
    char what[64];
    snprintf(what, sizeof what, "matvec %zux%zu", rows, cols);
    report(ok, what, max_diff);
    free(gpu);
    free(cpu);
    free(x);
    free(W);
    return max_diff;
}

int main(void)
{
    if (!ti_cuda_available()) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }

    static const size_t rms_sizes[] = {1, 2, 3, 7, 64, 255, 1000, 4097};
    static const size_t mv_sizes[][2] = {
        {1, 1}, {1, 7}, {3, 5}, {17, 33}, {64, 48}, {129, 257}, {1000, 3},
    };
    double rms_diff = 0.0, mv_diff = 0.0, e;

    for (size_t k = 0; k < sizeof rms_sizes / sizeof rms_sizes[0]; k++)
        if ((e = check_rmsnorm(rms_sizes[k])) > rms_diff)
            rms_diff = e;
    for (size_t k = 0; k < sizeof mv_sizes / sizeof mv_sizes[0]; k++)
        if ((e = check_matvec(mv_sizes[k][0], mv_sizes[k][1])) > mv_diff)
            mv_diff = e;

    /* The CLI's deterministic inputs give exact dot products, so the CUDA
     * checksum must equal the CPU one bit for bit. */
    const size_t rows = 64, cols = 48;
    float *W = alloc_f(rows * cols), *x = alloc_f(cols);
    float *cpu = alloc_f(rows), *gpu = alloc_f(rows);
    ti_det_fill(W, rows * cols, TI_SEED_W);
    ti_det_fill(x, cols, TI_SEED_X);
    ti_matvec_f32(cpu, W, x, rows, cols);
    const int st = cuda_status(ti_cuda_matvec_f32(gpu, W, x, rows, cols), "matvec");
    const double cpu_sum = ti_checksum(cpu, rows);
    const double gpu_sum = st == 0 ? ti_checksum(gpu, rows) : NAN;
    report(st == 0 && gpu_sum == cpu_sum, "matvec 64x48 exact checksum",
           fabs(gpu_sum - cpu_sum));
    free(gpu);
    free(cpu);
    free(x);
    free(W);

    const char *path = getenv("TINYINFER_EVIDENCE");
    if (path && *path) {
        FILE *f = fopen(path, "a");
        if (!f) {
            perror(path);
            return 1;
        }
        fprintf(f, "# tinyinfer %s test_cuda\n", TI_VERSION);
        fprintf(f, "kernels\tcuda\tcases_passed\t%d\n", n_pass);
        fprintf(f, "kernels\tcuda\tcases_failed\t%d\n", n_fail);
        fprintf(f, "kernels\tcuda\trmsnorm_max_abs_diff_vs_cpu\t%.2g\n", rms_diff);
        fprintf(f, "kernels\tcuda\tmatvec_max_abs_diff_vs_cpu\t%.2g\n", mv_diff);
        fprintf(f, "kernels\tcuda\tmatvec_checksum_64x48\t%.6g\n", gpu_sum);
        if (fclose(f) != 0) {
            perror(path);
            return 1;
        }
    }

    printf("test_cuda: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail == 0 ? 0 : 1;
}
