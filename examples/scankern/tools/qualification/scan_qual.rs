//! Lane `qualification`: a larger sweep of every kernel against the reference.
//! Built only with the `qualification` feature:
//! `cargo test --release --features qualification --test scan_qual`.
//!
//! Prints one `qual …` summary line, records evidence (suite `qual`, arm `sweep`) and
//! exits 1 on any mismatch.

use std::process::ExitCode;

use scankern::check::{f32_scan_tolerance, max_abs_diff};
use scankern::evidence::record;
use scankern::{inputs, reference, VARIANT};

const SEEDS: [u64; 3] = [1, 2, 3];

/// Every size up to 257, then 2^k - 1, 2^k and 2^k + 1 up to 2^20.
fn sizes() -> Vec<usize> {
    let mut sizes: Vec<usize> = (0..=257).collect();
    for k in 9..=20 {
        sizes.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
    }
    sizes
}

#[derive(Default)]
struct Tally {
    cases: u64,
    mismatches: u64,
    max_f32_abs_err: f64,
    u32_checksum: u32,
}

impl Tally {
    fn check(&mut self, ok: bool, what: &str, n: usize, seed: u64) {
        self.cases += 1;
        if !ok {
            self.mismatches += 1;
            if self.mismatches <= 10 {
                eprintln!("MISMATCH {what} n={n} seed={seed}");
            }
        }
    }
}

fn main() -> ExitCode {
    let mut tally = Tally::default();
    for n in sizes() {
        for seed in SEEDS {
            let values = inputs::u32s(seed, n);
            let inclusive = scankern::inclusive_sum_u32(&values);
            let ok = inclusive == reference::inclusive_sum_u32(&values);
            tally.check(ok, "inclusive_u32", n, seed);
            let ok = scankern::exclusive_sum_u32(&values) == reference::exclusive_sum_u32(&values);
            tally.check(ok, "exclusive_u32", n, seed);
            let heads = inputs::heads(seed, n, 1 + seed * 7);
            let ok = scankern::segmented_inclusive_sum_u32(&values, &heads)
                == reference::segmented_inclusive_sum_u32(&values, &heads);
            tally.check(ok, "segmented_u32", n, seed);
            let last = inclusive.last().copied().unwrap_or(0);
            tally.u32_checksum = tally.u32_checksum.rotate_left(5) ^ last;

            let floats = inputs::f32s(seed, n);
            let tol = f32_scan_tolerance(&floats);
            for (what, out, expected) in [
                (
                    "inclusive_f32",
                    scankern::inclusive_sum_f32(&floats),
                    reference::inclusive_sum_f32(&floats),
                ),
                (
                    "exclusive_f32",
                    scankern::exclusive_sum_f32(&floats),
                    reference::exclusive_sum_f32(&floats),
                ),
            ] {
                let err = max_abs_diff(&out, &expected);
                tally.max_f32_abs_err = tally.max_f32_abs_err.max(err);
                tally.check(err <= tol, what, n, seed);
            }

            if n <= 4096 {
                let dyadic = inputs::dyadic_f32s(seed, n);
                let ok =
                    scankern::inclusive_sum_f32(&dyadic) == reference::inclusive_sum_f32(&dyadic);
                tally.check(ok, "dyadic_f32_exact", n, seed);
            }
        }
    }

    let verdict = if tally.mismatches == 0 {
        "pass"
    } else {
        "fail"
    };
    println!(
        "qual scankern variant={VARIANT} cases={} mismatches={} max_f32_abs_err={} u32_checksum={:08x} result={verdict}",
        tally.cases, tally.mismatches, tally.max_f32_abs_err, tally.u32_checksum
    );
    record("qual", "sweep", "variant", VARIANT);
    record("qual", "sweep", "cases", tally.cases);
    record("qual", "sweep", "mismatches", tally.mismatches);
    record("qual", "sweep", "max_f32_abs_err", tally.max_f32_abs_err);
    record(
        "qual",
        "sweep",
        "u32_checksum",
        format!("{:08x}", tally.u32_checksum),
    );
    if tally.mismatches == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
