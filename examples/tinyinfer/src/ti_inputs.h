/* Internal: deterministic inputs shared by the CLI and the tests.
 * Every value is k/16 with k in [-16, 16], so it is exact in float; products
 * are multiples of 1/256 and any dot product of fewer than 65536 terms is exact
 * in float, whatever the summation order. The CLI checksums are therefore
 * identical on every device and every run. */
#ifndef TI_INPUTS_H
#define TI_INPUTS_H

#include <stddef.h>
#include <stdint.h>

static inline float ti_det_value(size_t i, uint32_t seed)
{
    uint32_t h = (uint32_t)i * 2654435761u + seed * 40503u + 1u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return (float)((int)(h % 33u) - 16) / 16.0f;
}

static inline void ti_det_fill(float *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = ti_det_value(i, seed);
}

static inline double ti_checksum(const float *p, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)p[i];
    return s;
}

/* Seeds used for the CLI inputs (and the evidence checksums in the tests). */
#define TI_SEED_X 1u
#define TI_SEED_W 2u

#endif /* TI_INPUTS_H */
