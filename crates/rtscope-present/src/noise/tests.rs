//! Tests of noise's text: the table's times, the limit lines, the hardware-only table.

use super::hwnoise;
use super::table::{table, time_cell};
use crate::table::render_checks;
use rtscope_core::Nanos;
use rtscope_session::field::Naming;
use rtscope_session::noise::hwlat::{HwlatOutcome, HwlatRow};
use rtscope_session::noise::{CpuNoise, NoiseCheck};
use rtscope_trace::hwlat::HwlatConfig;

fn row(cpu: usize) -> CpuNoise {
    CpuNoise {
        cpu,
        runtime_ns: 10_000_000_000,
        noise_ns: 8_791_850_500,
        available_percent: Some(12.0815),
        max_single_ns: Some(103_050_000),
        gaps_over_threshold: 2,
        gaps_dropped: 0,
        gaps_not_kept: 0,
        iterations: 1_000,
        iterations_per_s: Some(100.0),
        resolution_ns: Some(40),
        platform: Default::default(),
    }
}

#[test]
fn the_table_writes_long_times_in_seconds_and_short_ones_in_microseconds() {
    assert_eq!(time_cell(412_345), "412.3us");
    assert_eq!(time_cell(35_412_000), "35.412ms");
    assert_eq!(time_cell(8_791_850_000), "8.792s");
    let t = table(&[row(3)], Naming::Flags);
    let line = t.lines().nth(1).unwrap();
    assert!(line.contains(" 8.792s "), "{t}");
    assert!(line.contains(" 103.050ms "), "{t}");
    assert!(!t.contains("8791850"), "{t}");
    assert!(t.lines().next().unwrap().contains("NOISE "), "{t}");
}

#[test]
fn a_table_that_kept_fewer_gaps_than_it_counted_names_the_setting_to_raise() {
    let mut r = row(1);
    r.gaps_dropped = 4;
    r.gaps_not_kept = 7;
    let t = table(&[r.clone()], Naming::Flags);
    assert!(t.contains("4 gaps over the threshold were counted but not kept (the ring was full: raise --gap-capacity)"), "{t}");
    assert!(t.contains("7 shorter gaps over the threshold were counted but not kept (only the longest --keep-gaps per CPU are)"), "{t}");
}

#[test]
fn noise_limit_lines_put_failures_first_in_the_shape_measure_uses() {
    let check = |cpu, passed| NoiseCheck {
        cpu,
        stat: "max_single",
        limit: "20us".into(),
        value: if passed { "3us" } else { "31us" }.into(),
        passed,
    };
    assert_eq!(
        render_checks(&[check(1, true), check(2, false)]),
        "limit FAIL: CPU 2 max_single = 31us (limit 20us)\n\
         limit pass: CPU 1 max_single = 3us (limit 20us)\n"
    );
    let measure = rtscope_common::limits::Check {
        stat: "max".into(),
        scope: "all".into(),
        limit: 20_000,
        value: 12_300,
        passed: true,
    };
    assert_eq!(
        render_checks(&[measure]),
        format!(
            "limit pass: max on all = {} <= {}\n",
            Nanos(12_300),
            Nanos(20_000)
        )
    );
}

#[test]
fn the_hardware_only_table_and_document_say_the_kernel_measured_and_carry_their_schema() {
    let cfg = HwlatConfig {
        cpus: vec![1],
        width_us: 500_000,
        window_us: 1_000_000,
        threshold_us: 10,
    };
    let rows = [HwlatRow {
        cpu: 1,
        windows: 3,
        samples: 2,
        gaps_over_threshold: Some(9),
        max_inner_us: Some(15),
        max_outer_us: Some(30),
        nmis: 2,
        smis: None,
    }];
    let o = HwlatOutcome {
        samples: Vec::new(),
        signal: None,
        smi_unavailable: Some("no SMI counter".into()),
        ran: Nanos::from_ms(3_500),
    };
    let t = hwnoise::table(&cfg, &rows, &o);
    assert!(t.contains("measured by the kernel's hwlat tracer"), "{t}");
    assert!(t.contains("SMI: no SMI counter"), "{t}");
    let doc = serde_json::to_value(hwnoise::document(&cfg, &rows, &o, &[], 0)).unwrap();
    assert_eq!(doc["schema"], hwnoise::SCHEMA);
    assert_eq!(doc["cpus"][0]["max_outer_us"], 30);
    assert_eq!(doc["ran_ns"], 3_500_000_000u64);
}
