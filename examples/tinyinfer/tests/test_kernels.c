/* Checks the CPU kernels against a double-precision reference.
 * Prints one line per case and a summary; exits 1 on any mismatch.
 * With TINYINFER_EVIDENCE=FILE, appends evidence cells
 * (suite<TAB>arm<TAB>key<TAB>value) to FILE. */
#include "tinyinfer.h"
#include "ti_inputs.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EPS 1e-5f

static int n_pass, n_fail;

/* Deterministic pseudo-random floats in [-2, 2) (xorshift32). */
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

static void ref_rmsnorm(double *out, const float *x, const float *w, size_t n,
                        double eps)
{
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    const double scale = 1.0 / sqrt(ss / (double)n + eps);
    for (size_t i = 0; i < n; i++)
        out[i] = (double)x[i] * scale * w[i];
}

static void ref_matvec(double *y, double *bound, const float *W,
                       const float *x, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        double acc = 0.0, abs_acc = 0.0;
        for (size_t c = 0; c < cols; c++) {
            const double p = (double)W[r * cols + c] * x[c];
            acc += p;
            abs_acc += fabs(p);
        }
        y[r] = acc;
        /* Forward error bound of a float dot product: ~cols * u * sum|p|. */
        bound[r] = (double)(cols + 2) * FLT_EPSILON * abs_acc + FLT_MIN;
    }
}

static void report(int ok, const char *what, double err)
{
    printf("%-4s %s max_abs_err=%.3g\n", ok ? "ok" : "FAIL", what, err);
    if (ok)
        n_pass++;
    else
        n_fail++;
}

/* Returns the max abs error of this case. in_place: out aliases x. */
static double check_rmsnorm(size_t n, int in_place)
{
    float *x = malloc(n * sizeof *x), *w = malloc(n * sizeof *w);
    float *out = malloc(n * sizeof *out);
    double *ref = malloc(n * sizeof *ref);
    if (!x || !w || !out || !ref) {
        fprintf(stderr, "test_kernels: out of memory\n");
        exit(1);
    }
    fill_random(x, n, (uint32_t)n);
    fill_random(w, n, (uint32_t)n + 1000u);
    ref_rmsnorm(ref, x, w, n, EPS);
    if (in_place)
        ti_rmsnorm_f32(x, x, w, n, EPS);
    else
        ti_rmsnorm_f32(out, x, w, n, EPS);
    const float *got = in_place ? x : out;

    double max_err = 0.0;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        const double err = fabs((double)got[i] - ref[i]);
        const double tol = (double)(n + 8) * FLT_EPSILON * fabs(ref[i]) + FLT_MIN;
        if (err > max_err)
            max_err = err;
        if (!(err <= tol))
            ok = 0;
    }
    char what[64];
    snprintf(what, sizeof what, "rmsnorm n=%zu%s", n, in_place ? " in-place" : "");
    report(ok, what, max_err);
    free(ref);
    free(out);
    free(w);
    free(x);
    return max_err;
}

static double check_matvec(size_t rows, size_t cols)
{
    float *W = malloc(rows * cols * sizeof *W), *x = malloc(cols * sizeof *x);
    float *y = malloc(rows * sizeof *y);
    double *ref = malloc(rows * sizeof *ref), *bound = malloc(rows * sizeof *bound);
    if (!W || !x || !y || !ref || !bound) {
        fprintf(stderr, "test_kernels: out of memory\n");
        exit(1);
    }
    fill_random(W, rows * cols, (uint32_t)(rows * 31 + cols));
    fill_random(x, cols, (uint32_t)cols + 7u);
    ref_matvec(ref, bound, W, x, rows, cols);
    ti_matvec_f32(y, W, x, rows, cols);

    double max_err = 0.0;
    int ok = 1;
    for (size_t r = 0; r < rows; r++) {
        const double err = fabs((double)y[r] - ref[r]);
        if (err > max_err)
            max_err = err;
        if (!(err <= bound[r]))
            ok = 0;
    }
    char what[64];
    snprintf(what, sizeof what, "matvec %zux%zu", rows, cols);
    report(ok, what, max_err);
    free(bound);
    free(ref);
    free(y);
    free(x);
    free(W);
    return max_err;
}

/* Checksum of the CLI's deterministic matvec (`tinyinfer matvec ROWS COLS`). */
static double det_matvec_checksum(size_t rows, size_t cols)
{
    float *W = malloc(rows * cols * sizeof *W), *x = malloc(cols * sizeof *x);
    float *y = malloc(rows * sizeof *y);
    if (!W || !x || !y) {
        fprintf(stderr, "test_kernels: out of memory\n");
        exit(1);
    }
    ti_det_fill(W, rows * cols, TI_SEED_W);
    ti_det_fill(x, cols, TI_SEED_X);
    ti_matvec_f32(y, W, x, rows, cols);
    const double sum = ti_checksum(y, rows);
    free(y);
    free(x);
    free(W);
    return sum;
}

static double det_rmsnorm_checksum(size_t n)
{
    float *x = malloc(n * sizeof *x), *w = malloc(n * sizeof *w);
    if (!x || !w) {
        fprintf(stderr, "test_kernels: out of memory\n");
        exit(1);
    }
    ti_det_fill(x, n, TI_SEED_X);
    ti_det_fill(w, n, TI_SEED_W);
    ti_rmsnorm_f32(x, x, w, n, EPS);
    const double sum = ti_checksum(x, n);
    free(w);
    free(x);
    return sum;
}

int main(void)
{
    static const size_t rms_sizes[] = {1, 2, 3, 7, 64, 255, 1000, 4097};
    static const size_t mv_sizes[][2] = {
        {1, 1}, {1, 7}, {3, 5}, {17, 33}, {64, 48}, {129, 257}, {1000, 3},
    };
    double rms_err = 0.0, mv_err = 0.0, e;

    for (size_t k = 0; k < sizeof rms_sizes / sizeof rms_sizes[0]; k++) {
        if ((e = check_rmsnorm(rms_sizes[k], 0)) > rms_err)
            rms_err = e;
    }
    if ((e = check_rmsnorm(33, 1)) > rms_err)
        rms_err = e;
    for (size_t k = 0; k < sizeof mv_sizes / sizeof mv_sizes[0]; k++) {
        if ((e = check_matvec(mv_sizes[k][0], mv_sizes[k][1])) > mv_err)
            mv_err = e;
    }

    /* rmsnorm of an all-zero vector must be exactly zero (eps keeps it finite). */
    {
        const float zx[5] = {0}, zw[5] = {1, 1, 1, 1, 1};
        float zo[5];
        int ok = 1;
        ti_rmsnorm_f32(zo, zx, zw, 5, EPS);
        for (int i = 0; i < 5; i++)
            ok &= zo[i] == 0.0f;
        report(ok, "rmsnorm zeros n=5", 0.0);
    }

    const double mv_sum = det_matvec_checksum(64, 48);
    const double rms_sum = det_rmsnorm_checksum(64);
    printf("info matvec_checksum_64x48=%.6g rmsnorm_checksum_64=%.6g\n", mv_sum,
           rms_sum);

    const char *path = getenv("TINYINFER_EVIDENCE");
    if (path && *path) {
        FILE *f = fopen(path, "a");
        if (!f) {
            perror(path);
            return 1;
        }
        fprintf(f, "# tinyinfer %s test_kernels\n", TI_VERSION);
        fprintf(f, "kernels\tcpu\tversion\t%s\n", TI_VERSION);
        fprintf(f, "kernels\tcpu\tcases_passed\t%d\n", n_pass);
        fprintf(f, "kernels\tcpu\tcases_failed\t%d\n", n_fail);
        fprintf(f, "kernels\tcpu\trmsnorm_max_abs_err\t%.2g\n", rms_err);
        fprintf(f, "kernels\tcpu\tmatvec_max_abs_err\t%.2g\n", mv_err);
        fprintf(f, "kernels\tcpu\tmatvec_checksum_64x48\t%.6g\n", mv_sum);
        fprintf(f, "kernels\tcpu\trmsnorm_checksum_64\t%.6g\n", rms_sum);
        if (fclose(f) != 0) {
            perror(path);
            return 1;
        }
    }

    printf("test_kernels: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail == 0 ? 0 : 1;
}
