/* tinyinfer: a tiny inference-kernel library (CPU, optional CUDA). */
#ifndef TINYINFER_H
#define TINYINFER_H

#include <stddef.h>

#define TI_VERSION "0.3.0"
#define TI_VERSION_MAJOR 0
#define TI_VERSION_MINOR 3
#define TI_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], for i in [0, n).
 * out may alias x. n == 0 is a no-op. */
void ti_rmsnorm_f32(float *out, const float *x, const float *w, size_t n,
                    float eps);

/* y = W x, with W row-major (rows x cols). y must not alias W or x. */
void ti_matvec_f32(float *y, const float *W, const float *x, size_t rows,
                   size_t cols);

/* CUDA entry points (only in builds with TI_WITH_CUDA). All pointers are host
 * pointers; the functions allocate device memory, copy, launch and copy back.
 * They return 0 on success and a nonzero status on any CUDA error. */
int ti_cuda_available(void); /* 1 only if at least one CUDA device exists */
int ti_cuda_rmsnorm_f32(float *out, const float *x, const float *w, size_t n,
                        float eps);
int ti_cuda_matvec_f32(float *y, const float *W, const float *x, size_t rows,
                       size_t cols);
/* Times ti_matvec on the device: W and x copied once, one warm-up launch, then
 * `runs` launches each timed by CUDA events (kernel_us[i]: the kernel alone) and
 * `runs` whole calls of ti_cuda_matvec_f32 timed on the host (call_us[i]:
 * allocation, copies, launch, copy back). y holds the last kernel's result. */
int ti_cuda_matvec_time(float *y, const float *W, const float *x, size_t rows,
                        size_t cols, int runs, double *kernel_us,
                        double *call_us);

#ifdef __cplusplus
}
#endif

#endif /* TINYINFER_H */
