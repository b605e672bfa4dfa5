//! Lane `host`: quick checks that need no GPU and no large inputs.

use scankern::evidence::record;
use scankern::{
    exclusive_sum_f32, exclusive_sum_u32, inclusive_sum_f32, inclusive_sum_u32,
    segmented_inclusive_sum_u32, VARIANT,
};

#[test]
fn known_small_scans() {
    assert_eq!(inclusive_sum_u32(&[1, 2, 3, 4]), [1, 3, 6, 10]);
    assert_eq!(exclusive_sum_u32(&[1, 2, 3, 4]), [0, 1, 3, 6]);
    assert_eq!(inclusive_sum_f32(&[0.5, 1.5, -1.0]), [0.5, 2.0, 1.0]);
    assert_eq!(exclusive_sum_f32(&[0.5, 1.5, -1.0]), [0.0, 0.5, 2.0]);
    assert_eq!(
        segmented_inclusive_sum_u32(&[1, 1, 1, 1, 1], &[true, false, true, false, false]),
        [1, 2, 1, 2, 3]
    );
    record("smoke", "host", "inclusive_u32_1to4", "1,3,6,10");
}

#[test]
fn variant_is_named() {
    assert!(matches!(VARIANT, "serial" | "blocked"));
    assert_eq!(VARIANT == "blocked", cfg!(feature = "fast"));
}

#[test]
fn empty_inputs() {
    assert!(inclusive_sum_u32(&[]).is_empty());
    assert!(exclusive_sum_f32(&[]).is_empty());
    assert!(segmented_inclusive_sum_u32(&[], &[]).is_empty());
}
