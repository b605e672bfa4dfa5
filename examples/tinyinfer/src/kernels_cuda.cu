/* CUDA versions of the tinyinfer kernels. The exported functions take host
 * pointers, copy to the device, launch, and copy back. Every CUDA call is
 * checked; on error the function releases what it allocated and returns the
 * cudaError_t value (always nonzero). */
#include "tinyinfer.h"

#include <cuda_runtime.h>

#include <stdint.h>
#include <time.h>

#define TI_RMSNORM_THREADS 256
#define TI_MATVEC_THREADS 128

#define TI_CHECK(call)                 \
    do {                               \
        err = (call);                  \
        if (err != cudaSuccess)        \
            goto done;                 \
    } while (0)

__global__ void ti_rmsnorm_kernel(float *out, const float *x, const float *w,
                                  size_t n, float eps)
{
    __shared__ float partial[TI_RMSNORM_THREADS];
    const unsigned t = threadIdx.x;

    float ss = 0.0f;
    for (size_t i = t; i < n; i += blockDim.x)
        ss += x[i] * x[i];
    partial[t] = ss;
    __syncthreads();

    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        __syncthreads();
    }

    const float scale = rsqrtf(partial[0] / (float)n + eps);
    for (size_t i = t; i < n; i += blockDim.x)
        out[i] = x[i] * scale * w[i];
}

__global__ void ti_matvec_kernel(float *y, const float *W, const float *x,
                                 size_t rows, size_t cols)
{
    const size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const float *row = W + r * cols;
    float acc = 0.0f;
    for (size_t c = 0; c < cols; c++)
        acc += row[c] * x[c];
    y[r] = acc;
}

extern "C" int ti_cuda_available(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear it so later calls don't see it */
        return 0;
    }
    return count > 0 ? 1 : 0;
}

extern "C" int ti_cuda_rmsnorm_f32(float *out, const float *x, const float *w,
                                   size_t n, float eps)
{
    if (n == 0)
        return 0;
    if (n > SIZE_MAX / sizeof(float))
        return (int)cudaErrorInvalidValue;

    cudaError_t err = cudaSuccess;
    const size_t bytes = n * sizeof(float);
    float *d_out = NULL, *d_x = NULL, *d_w = NULL;

    TI_CHECK(cudaMalloc((void **)&d_out, bytes));
    TI_CHECK(cudaMalloc((void **)&d_x, bytes));
    TI_CHECK(cudaMalloc((void **)&d_w, bytes));
    TI_CHECK(cudaMemcpy(d_x, x, bytes, cudaMemcpyHostToDevice));
    TI_CHECK(cudaMemcpy(d_w, w, bytes, cudaMemcpyHostToDevice));
    ti_rmsnorm_kernel<<<1, TI_RMSNORM_THREADS>>>(d_out, d_x, d_w, n, eps);
    TI_CHECK(cudaGetLastError());
    TI_CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));

done:
    cudaFree(d_w);
    cudaFree(d_x);
    cudaFree(d_out);
    return (int)err;
}

extern "C" int ti_cuda_matvec_f32(float *y, const float *W, const float *x,
                                  size_t rows, size_t cols)
{
    if (rows == 0)
        return 0;
    if (cols > 0 && rows > SIZE_MAX / sizeof(float) / cols)
        return (int)cudaErrorInvalidValue;
    const size_t blocks = (rows + TI_MATVEC_THREADS - 1) / TI_MATVEC_THREADS;
    if (blocks > 0x7fffffffu)
        return (int)cudaErrorInvalidValue;

    cudaError_t err = cudaSuccess;
    const size_t w_bytes = rows * cols * sizeof(float);
    const size_t x_bytes = cols * sizeof(float);
    const size_t y_bytes = rows * sizeof(float);
    float *d_y = NULL, *d_W = NULL, *d_x = NULL;

    TI_CHECK(cudaMalloc((void **)&d_y, y_bytes));
    if (cols > 0) {
        TI_CHECK(cudaMalloc((void **)&d_W, w_bytes));
        TI_CHECK(cudaMalloc((void **)&d_x, x_bytes));
        TI_CHECK(cudaMemcpy(d_W, W, w_bytes, cudaMemcpyHostToDevice));
        TI_CHECK(cudaMemcpy(d_x, x, x_bytes, cudaMemcpyHostToDevice));
    }
    ti_matvec_kernel<<<(unsigned)blocks, TI_MATVEC_THREADS>>>(d_y, d_W, d_x,
                                                               rows, cols);
    TI_CHECK(cudaGetLastError());
    TI_CHECK(cudaMemcpy(y, d_y, y_bytes, cudaMemcpyDeviceToHost));

done:
    cudaFree(d_x);
    cudaFree(d_W);
    cudaFree(d_y);
    return (int)err;
}

static double ti_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

extern "C" int ti_cuda_matvec_time(float *y, const float *W, const float *x,
                                   size_t rows, size_t cols, int runs,
                                   double *kernel_us, double *call_us)
{
    if (rows == 0 || cols == 0 || runs <= 0)
        return (int)cudaErrorInvalidValue;
    if (rows > SIZE_MAX / sizeof(float) / cols)
        return (int)cudaErrorInvalidValue;
    const size_t blocks = (rows + TI_MATVEC_THREADS - 1) / TI_MATVEC_THREADS;
    if (blocks > 0x7fffffffu)
        return (int)cudaErrorInvalidValue;

    cudaError_t err = cudaSuccess;
    const size_t w_bytes = rows * cols * sizeof(float);
    float *d_y = NULL, *d_W = NULL, *d_x = NULL;
    cudaEvent_t start = NULL, stop = NULL;

    TI_CHECK(cudaEventCreate(&start));
    TI_CHECK(cudaEventCreate(&stop));
    TI_CHECK(cudaMalloc((void **)&d_y, rows * sizeof(float)));
    TI_CHECK(cudaMalloc((void **)&d_W, w_bytes));
    TI_CHECK(cudaMalloc((void **)&d_x, cols * sizeof(float)));
    TI_CHECK(cudaMemcpy(d_W, W, w_bytes, cudaMemcpyHostToDevice));
    TI_CHECK(cudaMemcpy(d_x, x, cols * sizeof(float), cudaMemcpyHostToDevice));
    ti_matvec_kernel<<<(unsigned)blocks, TI_MATVEC_THREADS>>>(d_y, d_W, d_x, rows, cols);
    TI_CHECK(cudaGetLastError());
    TI_CHECK(cudaDeviceSynchronize()); /* the warm-up launch, not counted */
    for (int i = 0; i < runs; i++) {
        float ms = 0.0f;
        TI_CHECK(cudaEventRecord(start));
        ti_matvec_kernel<<<(unsigned)blocks, TI_MATVEC_THREADS>>>(d_y, d_W, d_x, rows, cols);
        TI_CHECK(cudaGetLastError());
        TI_CHECK(cudaEventRecord(stop));
        TI_CHECK(cudaEventSynchronize(stop));
        TI_CHECK(cudaEventElapsedTime(&ms, start, stop));
        kernel_us[i] = (double)ms * 1000.0;
    }
    TI_CHECK(cudaMemcpy(y, d_y, rows * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < runs; i++) {
        const double t0 = ti_now_us();
        const int st = ti_cuda_matvec_f32(y, W, x, rows, cols);
        if (st != 0) {
            err = (cudaError_t)st;
            goto done;
        }
        call_us[i] = ti_now_us() - t0;
    }

done:
    cudaFree(d_x);
    cudaFree(d_W);
    cudaFree(d_y);
    if (stop)
        cudaEventDestroy(stop);
    if (start)
        cudaEventDestroy(start);
    return (int)err;
}
