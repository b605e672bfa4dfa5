/* The CUDA kernels of vecops. The exported functions take host pointers, copy to
 * the device, launch and copy back; every CUDA call is checked, and on an error the
 * function frees what it allocated and returns the cudaError_t (nonzero). */
#include "vecops.h"

#include <cuda_runtime.h>

#define VO_THREADS 256

#define VO_CHECK(call)          \
    do {                        \
        err = (call);           \
        if (err != cudaSuccess) \
            goto done;          \
    } while (0)

__global__ void vo_saxpy_kernel(float *y, float a, const float *x, size_t n)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

/* One block: each thread sums a stride, then a tree reduction in shared memory. */
__global__ void vo_dot_kernel(double *out, const float *x, const float *y, size_t n)
{
    __shared__ double partial[VO_THREADS];
    const unsigned t = threadIdx.x;
    double acc = 0.0;
    for (size_t i = t; i < n; i += blockDim.x)
        acc += (double)x[i] * (double)y[i];
    partial[t] = acc;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0)
        *out = partial[0];
}

extern "C" int vo_cuda_available(void)
{
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

extern "C" int vo_cuda_saxpy(float *y, float a, const float *x, size_t n)
{
    cudaError_t err = cudaSuccess;
    float *dx = NULL, *dy = NULL;
    const size_t bytes = n * sizeof(float);
    if (n == 0)
        return 0;
    VO_CHECK(cudaMalloc((void **)&dx, bytes));
    VO_CHECK(cudaMalloc((void **)&dy, bytes));
    VO_CHECK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
    VO_CHECK(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice));
    vo_saxpy_kernel<<<(unsigned)((n + VO_THREADS - 1) / VO_THREADS), VO_THREADS>>>(dy, a, dx, n);
    VO_CHECK(cudaGetLastError());
    VO_CHECK(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost));
done:
    cudaFree(dx);
    cudaFree(dy);
    return (int)err;
}

extern "C" int vo_cuda_dot(double *out, const float *x, const float *y, size_t n)
{
    cudaError_t err = cudaSuccess;
    float *dx = NULL, *dy = NULL;
    double *dout = NULL;
    const size_t bytes = n * sizeof(float);
    *out = 0.0;
    if (n == 0)
        return 0;
    VO_CHECK(cudaMalloc((void **)&dx, bytes));
    VO_CHECK(cudaMalloc((void **)&dy, bytes));
    VO_CHECK(cudaMalloc((void **)&dout, sizeof(double)));
    VO_CHECK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
    VO_CHECK(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice));
    vo_dot_kernel<<<1, VO_THREADS>>>(dout, dx, dy, n);
    VO_CHECK(cudaGetLastError());
    VO_CHECK(cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost));
done:
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dout);
    return (int)err;
}
