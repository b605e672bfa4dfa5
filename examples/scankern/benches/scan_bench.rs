//! Lane `bench`: timings only, no verdict and no evidence (timings are not
//! deterministic). `cargo bench --bench scan_bench` passes `--bench`; without it (as in
//! `cargo test --all-targets`) each kernel runs once on a small input as a smoke test.
//!
//! With `SCANKERN_MEASURE` set (relgate points it at a fresh file), every timing is
//! also appended there as a measurement row: `kernel,n,variant,mode,ns_per_elem` (CSV).

use std::fs::OpenOptions;
use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

use scankern::{inclusive_sum_in_place, inputs, segmented_inclusive_sum_in_place, VARIANT};

/// Elements scanned per kernel and size; keeps the whole run well under two seconds.
const WORK: usize = 1 << 23;

/// Best time per element over `reps` runs of `run` on a fresh copy of `input`.
fn time<T: Copy>(input: &[T], reps: usize, mut run: impl FnMut(&mut [T])) -> f64 {
    let mut data = input.to_vec();
    let mut best = Duration::MAX;
    for _ in 0..reps {
        data.copy_from_slice(input);
        let start = Instant::now();
        run(black_box(&mut data));
        best = best.min(start.elapsed());
        black_box(&data);
    }
    best.as_nanos() as f64 / input.len() as f64
}

/// Measurement rows for relgate: CSV with a header, appended to `$SCANKERN_MEASURE`.
fn record(rows: &[(String, usize, f64)], mode: &str) {
    let Some(path) = std::env::var_os("SCANKERN_MEASURE") else {
        return;
    };
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("open $SCANKERN_MEASURE");
    if file.metadata().map(|m| m.len() == 0).unwrap_or(true) {
        writeln!(file, "kernel,n,variant,mode,ns_per_elem").expect("write $SCANKERN_MEASURE");
    }
    for (kernel, n, ns) in rows {
        writeln!(file, "{kernel},{n},{VARIANT},{mode},{ns:.4}").expect("write $SCANKERN_MEASURE");
    }
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let sizes: &[usize] = if full {
        &[1 << 10, 1 << 16, 1 << 20]
    } else {
        &[1 << 10]
    };
    let mode = if full { "bench" } else { "smoke" };
    println!("bench variant={VARIANT} mode={mode}");
    let mut rows = Vec::new();
    for &n in sizes {
        let reps = if full { (WORK / n).max(1) } else { 1 };
        let values = inputs::u32s(1, n);
        let floats = inputs::f32s(2, n);
        let heads = inputs::heads(3, n, 16);
        let u32_ns = time(&values, reps, inclusive_sum_in_place);
        let f32_ns = time(&floats, reps, inclusive_sum_in_place);
        let seg_ns = time(&values, reps, |d| {
            segmented_inclusive_sum_in_place(d, &heads)
        });
        println!("bench scan_u32 n={n} ns_per_elem={u32_ns:.3}");
        println!("bench scan_f32 n={n} ns_per_elem={f32_ns:.3}");
        println!("bench segmented_u32 n={n} ns_per_elem={seg_ns:.3}");
        rows.push(("scan_u32".to_string(), n, u32_ns));
        rows.push(("scan_f32".to_string(), n, f32_ns));
        rows.push(("segmented_u32".to_string(), n, seg_ns));
    }
    record(&rows, mode);
}
