//! Prefix-scan kernels in the style of a GPU kernel crate.
//!
//! * Inclusive and exclusive sums over `u32` (wrapping) and `f32`.
//! * A segmented inclusive sum: a `true` head flag restarts the running sum.
//! * [`reference`](mod@reference): straightforward implementations the kernels are checked against.
//! * Two kernel variants: [`serial`] and [`blocked`] (fixed-size blocks, unrolled local
//!   scan, then a carry). The `fast` feature makes the top-level functions use
//!   [`blocked`]; [`VARIANT`] names the one in use. Both give identical `u32` results;
//!   `f32` results differ only by rounding, within [`check::f32_scan_tolerance`].
//! * [`evidence`]: how tests record evidence cells for release qualification.

use std::fmt::Debug;

#[cfg(feature = "fast")]
use blocked as active;
#[cfg(not(feature = "fast"))]
use serial as active;

/// The kernel variant behind the top-level functions: `"blocked"` with the `fast`
/// feature, `"serial"` without.
pub const VARIANT: &str = if cfg!(feature = "fast") {
    "blocked"
} else {
    "serial"
};

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for f32 {}
}

/// An element the kernels scan: `u32` (wrapping addition) or `f32`.
pub trait Element: Copy + PartialEq + Debug + sealed::Sealed {
    /// The identity of [`Element::combine`].
    const ZERO: Self;
    /// The scan operator: wrapping addition for `u32`, addition for `f32`.
    fn combine(self, rhs: Self) -> Self;
}

impl Element for u32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn combine(self, rhs: Self) -> Self {
        self.wrapping_add(rhs)
    }
}

impl Element for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn combine(self, rhs: Self) -> Self {
        self + rhs
    }
}

fn check_heads(len: usize, heads: &[bool]) {
    assert_eq!(
        heads.len(),
        len,
        "segmented scan: heads.len() must equal values.len()"
    );
}

/// An exclusive scan from an inclusive one: scan all but the last element, then shift
/// everything one place right, with zero in front.
fn exclusive_with<T: Element>(data: &mut [T], inclusive: fn(&mut [T])) {
    if let Some((last, init)) = data.split_last_mut() {
        inclusive(init);
        *last = T::ZERO;
        data.rotate_right(1);
    }
}

/// One element at a time.
pub mod serial {
    use super::{check_heads, exclusive_with, Element};

    /// Runs an inclusive scan over `data`, starting from `acc`.
    pub(crate) fn scan_from<T: Element>(data: &mut [T], mut acc: T) {
        for x in data {
            acc = acc.combine(*x);
            *x = acc;
        }
    }

    /// Inclusive scan in place: `data[i] = data[0] + … + data[i]`.
    pub fn inclusive_in_place<T: Element>(data: &mut [T]) {
        scan_from(data, T::ZERO);
    }

    /// Exclusive scan in place: `data[i] = data[0] + … + data[i - 1]`, `data[0] = 0`.
    pub fn exclusive_in_place<T: Element>(data: &mut [T]) {
        exclusive_with(data, inclusive_in_place);
    }

    /// Segmented inclusive scan in place; `heads[i]` starts a new segment at `i`.
    ///
    /// # Panics
    /// If `heads.len() != data.len()`.
    pub fn segmented_inclusive_in_place<T: Element>(data: &mut [T], heads: &[bool]) {
        check_heads(data.len(), heads);
        let mut acc = T::ZERO;
        for (x, &head) in data.iter_mut().zip(heads) {
            if head {
                acc = T::ZERO;
            }
            acc = acc.combine(*x);
            *x = acc;
        }
    }
}

/// Fixed-size blocks: an unrolled local scan per block, then the carry from the blocks
/// before it.
pub mod blocked {
    use super::{check_heads, exclusive_with, serial, Element};

    /// Elements per block.
    pub const BLOCK: usize = 8;

    /// Inclusive scan in place (see [`serial::inclusive_in_place`]).
    pub fn inclusive_in_place<T: Element>(data: &mut [T]) {
        let mut carry = T::ZERO;
        let mut blocks = data.chunks_exact_mut(BLOCK);
        for block in &mut blocks {
            for i in 1..BLOCK {
                block[i] = block[i - 1].combine(block[i]);
            }
            for x in block.iter_mut() {
                *x = carry.combine(*x);
            }
            carry = block[BLOCK - 1];
        }
        serial::scan_from(blocks.into_remainder(), carry);
    }

    /// Exclusive scan in place (see [`serial::exclusive_in_place`]).
    pub fn exclusive_in_place<T: Element>(data: &mut [T]) {
        exclusive_with(data, inclusive_in_place);
    }

    /// Segmented inclusive scan in place (see [`serial::segmented_inclusive_in_place`]).
    ///
    /// # Panics
    /// If `heads.len() != data.len()`.
    pub fn segmented_inclusive_in_place<T: Element>(data: &mut [T], heads: &[bool]) {
        check_heads(data.len(), heads);
        let mut carry = T::ZERO;
        for (block, block_heads) in data.chunks_mut(BLOCK).zip(heads.chunks(BLOCK)) {
            for i in 1..block.len() {
                if !block_heads[i] {
                    block[i] = block[i - 1].combine(block[i]);
                }
            }
            let open = block_heads
                .iter()
                .position(|&head| head)
                .unwrap_or(block.len());
            for x in &mut block[..open] {
                *x = carry.combine(*x);
            }
            carry = block[block.len() - 1];
        }
    }
}

/// Inclusive scan in place with the active variant.
pub fn inclusive_sum_in_place<T: Element>(data: &mut [T]) {
    active::inclusive_in_place(data);
}

/// Exclusive scan in place with the active variant.
pub fn exclusive_sum_in_place<T: Element>(data: &mut [T]) {
    active::exclusive_in_place(data);
}

/// Segmented inclusive scan in place with the active variant.
///
/// # Panics
/// If `heads.len() != data.len()`.
pub fn segmented_inclusive_sum_in_place<T: Element>(data: &mut [T], heads: &[bool]) {
    active::segmented_inclusive_in_place(data, heads);
}

/// `out[i] = input[0] + … + input[i]`, wrapping on overflow.
pub fn inclusive_sum_u32(input: &[u32]) -> Vec<u32> {
    let mut out = input.to_vec();
    inclusive_sum_in_place(&mut out);
    out
}

/// `out[i] = input[0] + … + input[i - 1]`, `out[0] = 0`, wrapping on overflow.
pub fn exclusive_sum_u32(input: &[u32]) -> Vec<u32> {
    let mut out = input.to_vec();
    exclusive_sum_in_place(&mut out);
    out
}

/// `out[i] = input[0] + … + input[i]` in `f32`.
pub fn inclusive_sum_f32(input: &[f32]) -> Vec<f32> {
    let mut out = input.to_vec();
    inclusive_sum_in_place(&mut out);
    out
}

/// `out[i] = input[0] + … + input[i - 1]`, `out[0] = 0.0`, in `f32`.
pub fn exclusive_sum_f32(input: &[f32]) -> Vec<f32> {
    let mut out = input.to_vec();
    exclusive_sum_in_place(&mut out);
    out
}

/// Segmented inclusive sum: `heads[i]` restarts the running sum at `i`.
///
/// # Panics
/// If `heads.len() != values.len()`.
pub fn segmented_inclusive_sum_u32(values: &[u32], heads: &[bool]) -> Vec<u32> {
    let mut out = values.to_vec();
    segmented_inclusive_sum_in_place(&mut out, heads);
    out
}

/// The obvious implementations, one element at a time. `f32` sums accumulate in `f64`
/// and are rounded once per element.
pub mod reference {
    /// See [`crate::inclusive_sum_u32`].
    pub fn inclusive_sum_u32(input: &[u32]) -> Vec<u32> {
        let mut acc = 0u32;
        input
            .iter()
            .map(|&x| {
                acc = acc.wrapping_add(x);
                acc
            })
            .collect()
    }

    /// See [`crate::exclusive_sum_u32`].
    pub fn exclusive_sum_u32(input: &[u32]) -> Vec<u32> {
        let mut acc = 0u32;
        input
            .iter()
            .map(|&x| {
                let before = acc;
                acc = acc.wrapping_add(x);
                before
            })
            .collect()
    }

    /// See [`crate::inclusive_sum_f32`].
    pub fn inclusive_sum_f32(input: &[f32]) -> Vec<f32> {
        let mut acc = 0f64;
        input
            .iter()
            .map(|&x| {
                acc += f64::from(x);
                acc as f32
            })
            .collect()
    }

    /// See [`crate::exclusive_sum_f32`].
    pub fn exclusive_sum_f32(input: &[f32]) -> Vec<f32> {
        let mut acc = 0f64;
        input
            .iter()
            .map(|&x| {
                let before = acc;
                acc += f64::from(x);
                before as f32
            })
            .collect()
    }

    /// See [`crate::segmented_inclusive_sum_u32`].
    pub fn segmented_inclusive_sum_u32(values: &[u32], heads: &[bool]) -> Vec<u32> {
        super::check_heads(values.len(), heads);
        let mut acc = 0u32;
        values
            .iter()
            .zip(heads)
            .map(|(&x, &head)| {
                acc = if head { x } else { acc.wrapping_add(x) };
                acc
            })
            .collect()
    }
}

/// Deterministic inputs for tests, benches and the qualification tools.
pub mod inputs {
    /// SplitMix64: small, fast, and the same on every platform.
    pub struct Rng(u64);

    impl Rng {
        /// A generator seeded with `seed`.
        pub fn new(seed: u64) -> Self {
            Rng(seed)
        }

        /// The next 64 random bits.
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
    }

    /// `n` values over the whole `u32` range (sums wrap).
    pub fn u32s(seed: u64, n: usize) -> Vec<u32> {
        let mut rng = Rng::new(seed);
        (0..n).map(|_| (rng.next_u64() >> 32) as u32).collect()
    }

    /// `n` values in `[-1, 1)` with 24 random bits each.
    pub fn f32s(seed: u64, n: usize) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| (rng.next_u64() >> 40) as f32 / (1u32 << 23) as f32 - 1.0)
            .collect()
    }

    /// `n` multiples of 1/256 in `[-4, 4)`. Every partial sum of up to 4096 of them is
    /// exact in `f32`, in any order, so every variant must match the reference exactly.
    pub fn dyadic_f32s(seed: u64, n: usize) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| ((rng.next_u64() >> 54) as f32 - 512.0) / 256.0)
            .collect()
    }

    /// `n` head flags, each `true` with probability `1 / one_in`.
    pub fn heads(seed: u64, n: usize, one_in: u64) -> Vec<bool> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| rng.next_u64() % one_in.max(1) == 0)
            .collect()
    }
}

/// Comparisons shared by the tests and tools.
pub mod check {
    use crate::blocked::BLOCK;

    /// The largest `|a[i] - b[i]|`, in `f64` (exact for `f32` inputs); 0 when empty.
    ///
    /// # Panics
    /// If the lengths differ.
    pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f64 {
        assert_eq!(a.len(), b.len(), "max_abs_diff: lengths differ");
        a.iter()
            .zip(b)
            .map(|(&x, &y)| (f64::from(x) - f64::from(y)).abs())
            .fold(0.0, f64::max)
    }

    /// A bound on `|kernel - reference|` for any `f32` scan of `input` by either variant.
    ///
    /// Each rounding adds at most `u·|partial sum|` (`u` = half of `f32::EPSILON`), each
    /// block-local partial at most `u·BLOCK·Σ|x|`, and the reference rounds once. Using
    /// `EPSILON` for `u` leaves a factor of two for second-order terms.
    pub fn f32_scan_tolerance(input: &[f32]) -> f64 {
        let (mut partial, mut sum_partials, mut max_partial, mut sum_abs) =
            (0f64, 0f64, 0f64, 0f64);
        for &x in input {
            partial += f64::from(x);
            sum_partials += partial.abs();
            max_partial = max_partial.max(partial.abs());
            sum_abs += f64::from(x).abs();
        }
        f64::from(f32::EPSILON) * (sum_partials + BLOCK as f64 * sum_abs + max_partial)
    }
}

/// Evidence cells for release qualification.
///
/// A cell is one line `suite<TAB>arm<TAB>key<TAB>value`, appended to the file named by
/// `SCANKERN_EVIDENCE`. When a key is written twice, the last write wins. Values must be
/// deterministic: the same commit and features record the same cells.
pub mod evidence {
    use std::fmt::Display;
    use std::fs::OpenOptions;
    use std::io::Write;

    /// The environment variable that names the evidence file.
    pub const ENV: &str = "SCANKERN_EVIDENCE";

    /// Appends the cell `suite / arm / key = value` to the evidence file, if
    /// `SCANKERN_EVIDENCE` is set (an empty value counts as unset).
    ///
    /// # Panics
    /// If a field contains a tab or a line break, or the file cannot be opened for
    /// appending or written.
    pub fn record(suite: &str, arm: &str, key: &str, value: impl Display) {
        let Some(path) = std::env::var_os(ENV).filter(|path| !path.is_empty()) else {
            return;
        };
        let line = cell(suite, arm, key, value);
        let path = std::path::PathBuf::from(path);
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut file| file.write_all(line.as_bytes()))
            .unwrap_or_else(|err| {
                panic!(
                    "{ENV}={}: cannot append evidence to this file: {err}",
                    path.display()
                )
            });
    }

    /// Formats one cell as its line, newline included.
    ///
    /// # Panics
    /// If a field contains a tab or a line break.
    pub fn cell(suite: &str, arm: &str, key: &str, value: impl Display) -> String {
        let value = value.to_string();
        for (name, field) in [
            ("suite", suite),
            ("arm", arm),
            ("key", key),
            ("value", &value),
        ] {
            assert!(
                !field.is_empty() || name == "value",
                "evidence cell: empty {name}"
            );
            assert!(
                !field.contains(['\t', '\n', '\r']),
                "evidence cell: {name} {field:?} contains a tab or a line break"
            );
        }
        format!("{suite}\t{arm}\t{key}\t{value}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_agree_on_u32() {
        for n in [0, 1, 7, 8, 9, 16, 17, 100] {
            let input = inputs::u32s(1, n);
            let heads = inputs::heads(2, n, 3);
            let (mut s, mut b) = (input.clone(), input.clone());
            serial::inclusive_in_place(&mut s);
            blocked::inclusive_in_place(&mut b);
            assert_eq!(s, b, "inclusive n={n}");
            let (mut s, mut b) = (input.clone(), input.clone());
            serial::exclusive_in_place(&mut s);
            blocked::exclusive_in_place(&mut b);
            assert_eq!(s, b, "exclusive n={n}");
            let (mut s, mut b) = (input.clone(), input);
            serial::segmented_inclusive_in_place(&mut s, &heads);
            blocked::segmented_inclusive_in_place(&mut b, &heads);
            assert_eq!(s, b, "segmented n={n}");
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(inclusive_sum_u32(&[1, 2, 3, 4]), [1, 3, 6, 10]);
        assert_eq!(exclusive_sum_u32(&[1, 2, 3, 4]), [0, 1, 3, 6]);
        assert_eq!(inclusive_sum_f32(&[0.5, 0.25]), [0.5, 0.75]);
        assert_eq!(
            segmented_inclusive_sum_u32(&[1, 2, 3, 4], &[false, false, true, false]),
            [1, 3, 3, 7]
        );
    }

    #[test]
    fn evidence_cell_format() {
        assert_eq!(
            evidence::cell("scan", "parity", "u32_sum_4", 10),
            "scan\tparity\tu32_sum_4\t10\n"
        );
    }

    #[test]
    #[should_panic(expected = "contains a tab")]
    fn evidence_cell_rejects_tabs() {
        evidence::cell("scan", "par\tity", "k", 1);
    }
}
