//! Lane `contract`: the kernels do not depend on where a slice starts or how its
//! length falls on block boundaries. One ignored arm each, run with `--ignored`.
//!
//! Evidence: suite `contract`, one arm per test, named after it.

use scankern::blocked::BLOCK;
use scankern::evidence::record;
use scankern::{inclusive_sum_in_place, inclusive_sum_u32, inputs, reference};

#[test]
#[ignore = "contract arm: run by the contract lane"]
fn unaligned_subslices() {
    let len = 8 * BLOCK + 3;
    let values = inputs::u32s(11, len + BLOCK);
    for offset in 0..BLOCK {
        let mut buffer = values.clone();
        let window = &mut buffer[offset..offset + len];
        inclusive_sum_in_place(window);
        let expected = reference::inclusive_sum_u32(&values[offset..offset + len]);
        assert_eq!(window, &expected[..], "offset={offset}");
        assert_eq!(buffer[..offset], values[..offset], "before the window");
        assert_eq!(buffer[offset + len..], values[offset + len..], "after it");
    }
    record("contract", "unaligned_subslices", "offsets_checked", BLOCK);
}

#[test]
#[ignore = "contract arm: run by the contract lane"]
fn block_boundaries() {
    let mut checked = 0;
    for blocks in 0..5 {
        for extra in [0, 1, BLOCK - 1] {
            let n = blocks * BLOCK + extra;
            let values = inputs::u32s(n as u64, n);
            assert_eq!(
                inclusive_sum_u32(&values),
                reference::inclusive_sum_u32(&values),
                "u32 n={n}"
            );
            let floats = inputs::dyadic_f32s(n as u64, n);
            assert_eq!(
                scankern::inclusive_sum_f32(&floats),
                reference::inclusive_sum_f32(&floats),
                "dyadic f32 n={n}"
            );
            checked += 1;
        }
    }
    record("contract", "block_boundaries", "block", BLOCK);
    record("contract", "block_boundaries", "sizes_checked", checked);
}
