//! Lane `record`: captures golden outputs for fixed inputs as evidence (suite `golden`).
//! Run it by name: `cargo test --release --test scan_record -- --ignored`.
//!
//! The inputs are exact in every variant, so the capture does not depend on `fast`.

use scankern::evidence::record;
use scankern::{
    exclusive_sum_u32, inclusive_sum_f32, inclusive_sum_u32, inputs, segmented_inclusive_sum_u32,
};

fn join<T: ToString>(values: &[T]) -> String {
    values
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// FNV-1a over the little-endian bytes.
fn fnv1a(values: &[u32]) -> u64 {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

#[test]
#[ignore = "record arm: captures goldens; run by name"]
fn record_golden() {
    let ramp: Vec<u32> = (1..=16).collect();
    record(
        "golden",
        "u32",
        "inclusive_ramp16",
        join(&inclusive_sum_u32(&ramp)),
    );
    record(
        "golden",
        "u32",
        "exclusive_ramp16",
        join(&exclusive_sum_u32(&ramp)),
    );
    record(
        "golden",
        "u32",
        "inclusive_wrap3",
        join(&inclusive_sum_u32(&[u32::MAX, 1, 2])),
    );
    let random = inputs::u32s(7, 4096);
    record(
        "golden",
        "u32",
        "inclusive_seed7_4096_fnv1a",
        format!("{:016x}", fnv1a(&inclusive_sum_u32(&random))),
    );

    let halves: Vec<f32> = (1..=16).map(|i| i as f32 * 0.5).collect();
    record(
        "golden",
        "f32",
        "inclusive_halves16",
        join(&inclusive_sum_f32(&halves)),
    );
    let dyadic = inputs::dyadic_f32s(7, 4096);
    let last = *inclusive_sum_f32(&dyadic).last().unwrap();
    record("golden", "f32", "inclusive_dyadic_seed7_4096_last", last);

    let heads: Vec<bool> = (0..16).map(|i| i % 4 == 0).collect();
    record(
        "golden",
        "segmented",
        "ramp16_every4",
        join(&segmented_inclusive_sum_u32(&ramp, &heads)),
    );
}
