//! Lane `contract`: documented contracts of the scan API, one ignored arm each.
//! The contract lane runs them with `--ignored`.
//!
//! Evidence: suite `contract`, one arm per test, named after it.

use scankern::evidence::record;
use scankern::{
    exclusive_sum_f32, exclusive_sum_in_place, exclusive_sum_u32, inclusive_sum_f32,
    inclusive_sum_in_place, inclusive_sum_u32, inputs, segmented_inclusive_sum_in_place,
    segmented_inclusive_sum_u32,
};

#[test]
#[ignore = "contract arm: run by the contract lane"]
fn empty_input() {
    let lens = [
        ("inclusive_u32_len", inclusive_sum_u32(&[]).len()),
        ("exclusive_u32_len", exclusive_sum_u32(&[]).len()),
        ("inclusive_f32_len", inclusive_sum_f32(&[]).len()),
        ("exclusive_f32_len", exclusive_sum_f32(&[]).len()),
        (
            "segmented_u32_len",
            segmented_inclusive_sum_u32(&[], &[]).len(),
        ),
    ];
    for (key, len) in lens {
        assert_eq!(len, 0, "{key}");
        record("contract", "empty_input", key, len);
    }
}

#[test]
#[ignore = "contract arm: run by the contract lane"]
fn in_place_equivalence() {
    let sizes = [1, 7, 8, 9, 100, 4097];
    for n in sizes {
        let values = inputs::u32s(n as u64, n);
        let floats = inputs::f32s(n as u64, n);
        let heads = inputs::heads(n as u64, n, 5);

        let mut data = values.clone();
        inclusive_sum_in_place(&mut data);
        assert_eq!(data, inclusive_sum_u32(&values), "inclusive u32 n={n}");

        let mut data = values.clone();
        exclusive_sum_in_place(&mut data);
        assert_eq!(data, exclusive_sum_u32(&values), "exclusive u32 n={n}");

        let mut data = floats.clone();
        inclusive_sum_in_place(&mut data);
        assert_eq!(data, inclusive_sum_f32(&floats), "inclusive f32 n={n}");

        let mut data = floats.clone();
        exclusive_sum_in_place(&mut data);
        assert_eq!(data, exclusive_sum_f32(&floats), "exclusive f32 n={n}");

        let mut data = values.clone();
        segmented_inclusive_sum_in_place(&mut data, &heads);
        let expected = segmented_inclusive_sum_u32(&values, &heads);
        assert_eq!(data, expected, "segmented u32 n={n}");
    }
    record(
        "contract",
        "in_place_equivalence",
        "sizes_checked",
        sizes.len(),
    );
}

#[test]
#[ignore = "contract arm: run by the contract lane"]
fn u32_overflow_wraps() {
    assert_eq!(inclusive_sum_u32(&[u32::MAX, 1, 2]), [u32::MAX, 0, 2]);
    assert_eq!(exclusive_sum_u32(&[u32::MAX, 1, 2]), [0, u32::MAX, 0]);
    let max_4096 = *inclusive_sum_u32(&[u32::MAX; 4096]).last().unwrap();
    assert_eq!(max_4096, 0u32.wrapping_sub(4096));
    record("contract", "u32_overflow_wraps", "max_3", "4294967295,0,2");
    record("contract", "u32_overflow_wraps", "max_4096_sum", max_4096);
}

/// Not an arm: runs in every plain `cargo test`.
#[test]
fn exclusive_is_inclusive_shifted() {
    let values = inputs::u32s(9, 33);
    let inclusive = inclusive_sum_u32(&values);
    let exclusive = exclusive_sum_u32(&values);
    assert_eq!(exclusive[0], 0);
    assert_eq!(exclusive[1..], inclusive[..32]);
}
