/* CPU reference kernels. Accumulation is done in float, in a fixed order, so
 * results are deterministic run to run. */
#include "tinyinfer.h"

#include <math.h>

void ti_rmsnorm_f32(float *out, const float *x, const float *w, size_t n,
                    float eps)
{
    if (n == 0)
        return;
    float ss = 0.0f;
    for (size_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    const float scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] * scale * w[i];
}

void ti_matvec_f32(float *y, const float *W, const float *x, size_t rows,
                   size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        const float *row = W + r * cols;
        float acc = 0.0f;
        for (size_t c = 0; c < cols; c++)
            acc += row[c] * x[c];
        y[r] = acc;
    }
}
