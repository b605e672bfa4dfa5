//! Lane `gate`: the kernels against the reference on several sizes.
//!
//! Evidence: suite `scan`, arm `parity`.

use scankern::check::{f32_scan_tolerance, max_abs_diff};
use scankern::evidence::record;
use scankern::{inputs, reference, VARIANT};

/// Around the block size, and a few larger sizes (65537 leaves a partial block).
const SIZES: [usize; 8] = [0, 1, 7, 8, 9, 1000, 4096, 65537];

#[test]
fn u32_inclusive_matches_reference() {
    for (seed, n) in SIZES.into_iter().enumerate() {
        let input = inputs::u32s(seed as u64, n);
        let out = scankern::inclusive_sum_u32(&input);
        assert_eq!(out, reference::inclusive_sum_u32(&input), "n={n}");
        record(
            "scan",
            "parity",
            &format!("u32_sum_{n}"),
            out.last().copied().unwrap_or(0),
        );
    }
    record("scan", "parity", "variant", VARIANT);
}

#[test]
fn u32_exclusive_matches_reference() {
    for (seed, n) in SIZES.into_iter().enumerate() {
        let input = inputs::u32s(seed as u64, n);
        let out = scankern::exclusive_sum_u32(&input);
        assert_eq!(out, reference::exclusive_sum_u32(&input), "n={n}");
    }
}

#[test]
fn f32_inclusive_within_tolerance() {
    for (seed, n) in SIZES.into_iter().enumerate() {
        let input = inputs::f32s(seed as u64, n);
        let err = max_abs_diff(
            &scankern::inclusive_sum_f32(&input),
            &reference::inclusive_sum_f32(&input),
        );
        let tol = f32_scan_tolerance(&input);
        assert!(err <= tol, "n={n}: max abs error {err} > tolerance {tol}");
        record("scan", "parity", &format!("f32_max_abs_err_{n}"), err);
    }
}

#[test]
fn f32_exclusive_within_tolerance() {
    for (seed, n) in SIZES.into_iter().enumerate() {
        let input = inputs::f32s(seed as u64, n);
        let err = max_abs_diff(
            &scankern::exclusive_sum_f32(&input),
            &reference::exclusive_sum_f32(&input),
        );
        let tol = f32_scan_tolerance(&input);
        assert!(err <= tol, "n={n}: max abs error {err} > tolerance {tol}");
    }
}

#[test]
fn f32_dyadic_inputs_are_exact() {
    for n in [1, 7, 8, 9, 1000, 4096] {
        let input = inputs::dyadic_f32s(n as u64, n);
        let out = scankern::inclusive_sum_f32(&input);
        assert_eq!(out, reference::inclusive_sum_f32(&input), "n={n}");
        if n == 4096 {
            record("scan", "parity", "f32_dyadic_sum_4096", out[n - 1]);
        }
    }
}
