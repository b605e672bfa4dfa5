/* The CPU kernels of vecops. */
#include "vecops.h"

#ifndef VO_VERSION
#error "VO_VERSION is set by CMakeLists.txt (the project's VERSION)"
#endif

const char *vo_version(void)
{
    return VO_VERSION;
}

void vo_saxpy(float *y, float a, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
}

double vo_dot(const float *x, const float *y, size_t n)
{
    double acc = 0.0;
    for (size_t i = 0; i < n; i++)
        acc += (double)x[i] * (double)y[i];
    return acc;
}

void vo_scale(float *x, float a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
}

void vo_inputs(float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)(i % 7) - 3);
        y[i] = (float)(i % 5 + 1) / 2.0f;
    }
}
