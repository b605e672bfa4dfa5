//! Lane `gate`: the segmented scan against the reference.
//!
//! Evidence: suite `scan`, arm `segmented`.

use scankern::evidence::record;
use scankern::{inclusive_sum_u32, inputs, reference, segmented_inclusive_sum_u32};

const SIZES: [usize; 7] = [0, 1, 7, 8, 9, 1000, 65537];

#[test]
fn random_heads_match_reference() {
    for n in SIZES {
        for one_in in [2, 16, 1000] {
            let values = inputs::u32s(n as u64, n);
            let heads = inputs::heads(one_in, n, one_in);
            let out = segmented_inclusive_sum_u32(&values, &heads);
            assert_eq!(
                out,
                reference::segmented_inclusive_sum_u32(&values, &heads),
                "n={n} one_in={one_in}"
            );
            if one_in == 16 {
                // Index 0 starts a segment whether or not it is flagged.
                let segments = heads.iter().skip(1).filter(|&&h| h).count() + usize::from(n > 0);
                let checksum = out.iter().fold(0u32, |acc, &x| acc.wrapping_add(x));
                record("scan", "segmented", &format!("segments_{n}"), segments);
                record("scan", "segmented", &format!("checksum_{n}"), checksum);
            }
        }
    }
}

#[test]
fn no_heads_is_a_plain_inclusive_scan() {
    let values = inputs::u32s(3, 4099);
    let out = segmented_inclusive_sum_u32(&values, &vec![false; values.len()]);
    assert_eq!(out, inclusive_sum_u32(&values));
}

#[test]
fn all_heads_is_the_identity() {
    let values = inputs::u32s(4, 4099);
    let out = segmented_inclusive_sum_u32(&values, &vec![true; values.len()]);
    assert_eq!(out, values);
}

#[test]
#[should_panic(expected = "heads.len() must equal values.len()")]
fn mismatched_heads_panic() {
    segmented_inclusive_sum_u32(&[1, 2, 3], &[true]);
}
