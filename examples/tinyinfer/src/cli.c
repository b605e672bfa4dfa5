/* tinyinfer: run a kernel on deterministic inputs and print a checksum. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "tinyinfer.h"
#include "ti_inputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TI_MAX_DIM 16384u
#define TI_EPS 1e-5f
#define TI_MAX_RUNS 1000

enum device { DEV_CPU, DEV_CUDA };

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tinyinfer [OPTIONS] COMMAND [ARGS]\n"
            "\n"
            "Run a tinyinfer kernel on deterministic inputs and print a checksum.\n"
            "\n"
            "Commands:\n"
            "  matvec ROWS COLS   y = W x with W of ROWS x COLS\n"
            "  rmsnorm N          RMS-normalise a vector of N elements\n"
            "  time-matvec N RUNS time matvec on an N x N matrix: one warm-up, then RUNS\n"
            "                     timed runs in this process; one `bench` line per timing\n"
            "\n"
            "Options:\n"
#ifdef TI_WITH_CUDA
            "  --device cpu|cuda  where to run the kernel (default: cpu)\n"
#endif
            "  --help             show this help and exit\n"
            "  --version          print the version and exit\n"
            "\n"
            "Dimensions are integers in 1..%u.\n",
            TI_MAX_DIM);
}

static int usage_error(const char *msg, const char *arg)
{
    if (arg)
        fprintf(stderr, "tinyinfer: %s: '%s'\n", msg, arg);
    else
        fprintf(stderr, "tinyinfer: %s\n", msg);
    fprintf(stderr, "Try 'tinyinfer --help' for more information.\n");
    return 2;
}

static int parse_dim(const char *s, size_t *out)
{
    char *end = NULL;
    if (s[0] < '0' || s[0] > '9')
        return -1;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > TI_MAX_DIM)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* The deterministic matvec inputs W (rows x cols) and x, and room for y. */
struct matvec_io {
    float *W, *x, *y;
};

static int matvec_inputs(struct matvec_io *io, size_t rows, size_t cols)
{
    io->W = malloc(rows * cols * sizeof *io->W);
    io->x = malloc(cols * sizeof *io->x);
    io->y = malloc(rows * sizeof *io->y);
    if (!io->W || !io->x || !io->y) {
        fprintf(stderr, "tinyinfer: out of memory\n");
        return -1;
    }
    ti_det_fill(io->W, rows * cols, TI_SEED_W);
    ti_det_fill(io->x, cols, TI_SEED_X);
    return 0;
}

static void matvec_free(struct matvec_io *io)
{
    free(io->y);
    free(io->x);
    free(io->W);
}

static int run_matvec(enum device dev, size_t rows, size_t cols)
{
    struct matvec_io io;
    int rc = 1;
    if (matvec_inputs(&io, rows, cols) != 0)
        goto out;
    float *W = io.W, *x = io.x, *y = io.y;
    if (dev == DEV_CPU) {
        ti_matvec_f32(y, W, x, rows, cols);
    } else {
#ifdef TI_WITH_CUDA
        int st = ti_cuda_matvec_f32(y, W, x, rows, cols);
        if (st != 0) {
            fprintf(stderr, "tinyinfer: CUDA error %d\n", st);
            goto out;
        }
#endif
    }
    printf("matvec rows=%zu cols=%zu device=%s checksum=%.6g\n", rows, cols,
           dev == DEV_CPU ? "cpu" : "cuda", ti_checksum(y, rows));
    rc = 0;
out:
    matvec_free(&io);
    return rc;
}

static int run_rmsnorm(enum device dev, size_t n)
{
    float *x = malloc(n * sizeof *x);
    float *w = malloc(n * sizeof *w);
    float *out = malloc(n * sizeof *out);
    int rc = 1;
    if (!x || !w || !out) {
        fprintf(stderr, "tinyinfer: out of memory\n");
        goto out;
    }
    ti_det_fill(x, n, TI_SEED_X);
    ti_det_fill(w, n, TI_SEED_W);
    if (dev == DEV_CPU) {
        ti_rmsnorm_f32(out, x, w, n, TI_EPS);
    } else {
#ifdef TI_WITH_CUDA
        int st = ti_cuda_rmsnorm_f32(out, x, w, n, TI_EPS);
        if (st != 0) {
            fprintf(stderr, "tinyinfer: CUDA error %d\n", st);
            goto out;
        }
#endif
    }
    printf("rmsnorm n=%zu device=%s checksum=%.6g\n", n,
           dev == DEV_CPU ? "cpu" : "cuda", ti_checksum(out, n));
    rc = 0;
out:
    free(out);
    free(w);
    free(x);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One line in the format the sign-off reads (kv): the median and every run, in us.
 * `what` is the line's first word: "bench" for the figures a release is held to, "call"
 * for the whole library call, printed for people (allocation and pageable copies vary
 * too much from run to run to hold a release to 5 %). */
static void print_timing(const char *what, const char *device, size_t n, const char *timing,
                         const double *us, int runs, double checksum)
{
    double sorted[TI_MAX_RUNS];
    memcpy(sorted, us, (size_t)runs * sizeof *us);
    qsort(sorted, (size_t)runs, sizeof *sorted, cmp_double);
    const double median = runs % 2 ? sorted[runs / 2]
                                   : (sorted[runs / 2 - 1] + sorted[runs / 2]) / 2;
    printf("%s matvec device=%s n=%zu timing=%s dtype=f32 runs=%d median_us=%.2f runs_us=",
           what, device, n, timing, runs, median);
    for (int i = 0; i < runs; i++)
        printf("%s%.2f", i ? "," : "", us[i]);
    printf(" checksum=%.6g\n", checksum);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* CPU: the kernel timed in this process (no process start in the figure).
 * CUDA: the kernel alone by CUDA events (data resident on the device), and the
 * whole call (allocation, copies, launch, copy back) by the host clock. */
static int run_time_matvec(enum device dev, size_t n, int runs)
{
    struct matvec_io io;
    double kernel_us[TI_MAX_RUNS], call_us[TI_MAX_RUNS];
    int rc = 1;
    if (matvec_inputs(&io, n, n) != 0)
        goto out;
    float *W = io.W, *x = io.x, *y = io.y;
    if (dev == DEV_CPU) {
        ti_matvec_f32(y, W, x, n, n); /* warm-up, not counted */
        for (int i = 0; i < runs; i++) {
            const double t0 = now_us();
            ti_matvec_f32(y, W, x, n, n);
            kernel_us[i] = now_us() - t0;
        }
        print_timing("bench", "cpu", n, "kernel", kernel_us, runs, ti_checksum(y, n));
    } else {
#ifdef TI_WITH_CUDA
        int st = ti_cuda_matvec_time(y, W, x, n, n, runs, kernel_us, call_us);
        if (st != 0) {
            fprintf(stderr, "tinyinfer: CUDA error %d\n", st);
            goto out;
        }
        print_timing("bench", "cuda", n, "kernel", kernel_us, runs, ti_checksum(y, n));
        print_timing("call", "cuda", n, "call", call_us, runs, ti_checksum(y, n));
#endif
    }
    (void)call_us;
    rc = 0;
out:
    matvec_free(&io);
    return rc;
}

int main(int argc, char **argv)
{
    enum device dev = DEV_CPU;
    int i = 1;

    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("tinyinfer %s\n", TI_VERSION);
            return 0;
#ifdef TI_WITH_CUDA
        } else if (strcmp(argv[i], "--device") == 0) {
            if (++i >= argc)
                return usage_error("missing value for option", "--device");
            if (strcmp(argv[i], "cpu") == 0)
                dev = DEV_CPU;
            else if (strcmp(argv[i], "cuda") == 0)
                dev = DEV_CUDA;
            else
                return usage_error("unknown device", argv[i]);
#endif
        } else {
            return usage_error("unknown option", argv[i]);
        }
    }

    if (i >= argc)
        return usage_error("missing command", NULL);

    const char *cmd = argv[i++];
    const int nargs = argc - i;
    size_t a = 0, b = 0;

    if (strcmp(cmd, "matvec") == 0) {
        if (nargs != 2)
            return usage_error("usage: tinyinfer matvec ROWS COLS", NULL);
        if (parse_dim(argv[i], &a) != 0)
            return usage_error("invalid ROWS", argv[i]);
        if (parse_dim(argv[i + 1], &b) != 0)
            return usage_error("invalid COLS", argv[i + 1]);
    } else if (strcmp(cmd, "time-matvec") == 0) {
        if (nargs != 2)
            return usage_error("usage: tinyinfer time-matvec N RUNS", NULL);
        if (parse_dim(argv[i], &a) != 0)
            return usage_error("invalid N", argv[i]);
        if (parse_dim(argv[i + 1], &b) != 0 || b > TI_MAX_RUNS)
            return usage_error("invalid RUNS (1..1000)", argv[i + 1]);
    } else if (strcmp(cmd, "rmsnorm") == 0) {
        if (nargs != 1)
            return usage_error("usage: tinyinfer rmsnorm N", NULL);
        if (parse_dim(argv[i], &a) != 0)
            return usage_error("invalid N", argv[i]);
    } else {
        return usage_error("unknown command", cmd);
    }

    if (dev == DEV_CUDA) {
#ifdef TI_WITH_CUDA
        if (!ti_cuda_available()) {
            fprintf(stderr, "tinyinfer: no CUDA device available\n");
            return 1;
        }
#endif
    }
    if (strcmp(cmd, "time-matvec") == 0)
        return run_time_matvec(dev, a, (int)b);
    return strcmp(cmd, "matvec") == 0 ? run_matvec(dev, a, b)
                                      : run_rmsnorm(dev, a);
}
