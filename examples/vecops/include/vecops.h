/* vecops: small vector kernels (CPU, optional CUDA). */
#ifndef VECOPS_H
#define VECOPS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version ("0.3.0"): the project's VERSION in CMakeLists.txt. */
const char *vo_version(void);

/* y[i] = a * x[i] + y[i], for i in [0, n). n == 0 is a no-op. */
void vo_saxpy(float *y, float a, const float *x, size_t n);

/* The dot product of x and y, summed in double. n == 0 gives 0. */
double vo_dot(const float *x, const float *y, size_t n);

/* x[i] = a * x[i]. */
void vo_scale(float *x, float a, size_t n);

/* The inputs every test and the CLI use: exact in float, so every device agrees.
 * x[i] = (i % 7) - 3, y[i] = (i % 5 + 1) / 2. */
void vo_inputs(float *x, float *y, size_t n);

/* CUDA entry points (only in builds with VO_WITH_CUDA). Pointers are host pointers;
 * each call allocates, copies, launches and copies back. 0 on success, else the CUDA
 * error (nonzero). */
int vo_cuda_available(void); /* 1 only if at least one CUDA device exists */
int vo_cuda_saxpy(float *y, float a, const float *x, size_t n);
int vo_cuda_dot(double *out, const float *x, const float *y, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* VECOPS_H */
