//! The GPIO measurement logic against the in-memory chip: every mode, both edge directions,
//! edge selection, lost-edge accounting and the errors for busy or missing lines. The mock
//! delays each wire by a fixed time, so the intervals have a known lower bound; no upper bound
//! (which load could break) is asserted.

use rtscope_core::Nanos;
use rtscope_engine::Policy;
use rtscope_respond::gpio::{
    Edge, EdgeSelect, Gpio, GpioConfig, GpioError, GpioResult, GpioRun, InputLine, InputOptions,
    Interval, LineId, LineSel, Mode, OutputLine, Responder,
};
use rtscope_respond::RespondError;
use rtscope_testkit::gpio::MockGpio;
use std::time::Duration;

const DELAY: Nanos = Nanos::from_us(50);

fn line(n: u32) -> LineId {
    LineId {
        chip: Some("mock".into()),
        line: LineSel::Offset(n),
    }
}

fn config(
    stimulus: Option<u32>,
    input: u32,
    response: Option<u32>,
    watch: Option<u32>,
) -> GpioConfig {
    GpioConfig {
        stimulus: stimulus.map(line),
        input: line(input),
        response: response.map(line),
        watch: watch.map(line),
        responder: Responder::Own,
        // A deep event buffer: a responder starved by load on the shared test machine catches up
        // instead of losing edges (the lost-edge accounting has its own test).
        options: InputOptions {
            kernel_buffer: Some(1024),
            ..InputOptions::default()
        },
        interval: Nanos::from_ms(2),
        count: Some(40),
        duration: None,
        policy: Policy::Other,
        priority: 0,
        responder_cpu: None,
        stimulus_cpu: None,
    }
}

fn interval(
    r: &GpioResult,
    i: Interval,
    e: Edge,
) -> Option<&rtscope_respond::gpio::IntervalResult> {
    r.intervals.iter().find(|x| x.interval == i && x.edge == e)
}

#[test]
fn loopback_reports_three_intervals_per_edge_direction() {
    let mut gpio = MockGpio::new(8);
    gpio.wire(0, 1);
    gpio.set_delay(DELAY);
    let r = GpioRun::start(&mut gpio, config(Some(0), 1, Some(2), None))
        .unwrap()
        .finish();
    assert_eq!(r.error, None);
    assert_eq!(r.mode, Mode::Loopback);
    assert_eq!(r.stimulus_edges, 80);
    assert_eq!((r.input.rising, r.input.falling, r.input.lost), (40, 40, 0));
    assert_eq!(r.input.last_level, Some(false));
    for e in [Edge::Rising, Edge::Falling] {
        let s2t = interval(&r, Interval::StimulusToTimestamp, e).unwrap();
        assert_eq!(s2t.stats.count, 40);
        assert!(s2t.stats.min >= DELAY, "{e:?}: {:?}", s2t.stats);
        assert_eq!(
            interval(&r, Interval::TimestampToWake, e)
                .unwrap()
                .stats
                .count,
            40
        );
        assert_eq!(
            interval(&r, Interval::WakeToResponse, e)
                .unwrap()
                .stats
                .count,
            40
        );
        assert!(interval(&r, Interval::Response, e).is_none());
    }
    assert!(
        !gpio.level(2),
        "the response line follows the input and ends low"
    );
    assert_eq!(gpio.writes(), 80 + 80, "80 stimulus writes, 80 responses");
}

#[test]
fn scope_equivalent_times_the_response_between_two_kernel_timestamps() {
    let mut gpio = MockGpio::new(8);
    gpio.wire(0, 1).wire(2, 3);
    gpio.set_delay(DELAY);
    let r = GpioRun::start(&mut gpio, config(Some(0), 1, Some(2), Some(3)))
        .unwrap()
        .finish();
    assert_eq!(r.mode, Mode::ScopeEquivalent);
    assert_eq!(
        (r.watch.rising, r.watch.falling, r.watch.lost),
        (40, 40, 0),
        "{r:?}"
    );
    for e in [Edge::Rising, Edge::Falling] {
        let resp = interval(&r, Interval::Response, e).unwrap();
        let wake = interval(&r, Interval::TimestampToWake, e).unwrap();
        assert_eq!(resp.stats.count, 40);
        // ts(J) − ts(I) spans the responder's wake-up and its write.
        assert!(resp.stats.min >= wake.stats.min, "{e:?}");
    }
}

#[test]
fn another_programs_response_is_watched_on_j() {
    let mut gpio = MockGpio::new(8);
    // O → I (the other program's input) and O → K (rtscope's stimulus watch); R → J.
    gpio.wire(0, 1).wire(0, 4).wire(2, 3);
    gpio.set_delay(DELAY);
    let mut other = gpio.clone();
    let deep = InputOptions {
        kernel_buffer: Some(1024),
        ..InputOptions::default()
    };
    let mut inp = other.request_input(&[line(1)], &deep).unwrap();
    let mut out = other.request_output(&line(2), false).unwrap();
    let responder = std::thread::spawn(move || {
        let mut n = 0;
        while n < 80 && inp.wait(Duration::from_secs(5)).unwrap() {
            let ev = inp.read().unwrap();
            out.set(ev.edge == Edge::Rising).unwrap();
            n += 1;
        }
        n
    });
    let mut c = config(Some(0), 1, None, Some(3));
    c.responder = Responder::External {
        stimulus_watch: Some(line(4)),
    };
    let r = GpioRun::start(&mut gpio, c).unwrap().finish();
    assert_eq!(responder.join().unwrap(), 80);
    assert_eq!(r.error, None);
    assert_eq!((r.watch.rising, r.watch.falling), (40, 40));
    for e in [Edge::Rising, Edge::Falling] {
        assert_eq!(interval(&r, Interval::Response, e).unwrap().stats.count, 40);
        assert!(interval(&r, Interval::TimestampToWake, e).is_none());
    }
}

#[test]
fn an_external_stimulus_is_answered_until_the_count() {
    let mut gpio = MockGpio::new(4);
    let mut c = config(None, 1, Some(2), None);
    c.count = Some(20);
    let run = GpioRun::start(&mut gpio, c).unwrap();
    let generator = gpio.clone();
    for k in 0..20 {
        std::thread::sleep(Duration::from_millis(1));
        generator.drive(1, k % 2 == 0);
    }
    let r = run.finish();
    assert_eq!(r.mode, Mode::External);
    assert_eq!((r.input.rising, r.input.falling, r.input.lost), (10, 10, 0));
    assert_eq!(r.stimulus_edges, 0);
    assert_eq!(
        interval(&r, Interval::WakeToResponse, Edge::Rising)
            .unwrap()
            .stats
            .count,
        10
    );
}

#[test]
fn rising_only_keeps_the_stimulus_paired_with_its_edge() {
    let mut gpio = MockGpio::new(4);
    gpio.wire(0, 1);
    gpio.set_delay(DELAY);
    let mut c = config(Some(0), 1, None, None);
    c.options.edges = EdgeSelect::Rising;
    let r = GpioRun::start(&mut gpio, c).unwrap().finish();
    assert_eq!((r.input.rising, r.input.falling), (40, 0));
    let s2t = interval(&r, Interval::StimulusToTimestamp, Edge::Rising).unwrap();
    assert_eq!(s2t.stats.count, 40);
    assert!(s2t.stats.min >= DELAY);
    assert!(interval(&r, Interval::StimulusToTimestamp, Edge::Falling).is_none());
}

#[test]
fn edges_dropped_by_a_full_kernel_buffer_are_counted() {
    let mut gpio = MockGpio::new(4);
    let mut c = config(None, 1, None, None);
    c.count = None;
    c.duration = Some(Nanos::from_ms(400));
    c.options.kernel_buffer = Some(1);
    // Eight edges in a burst: with a buffer of one event, the kernel (and the mock) drop the
    // oldest when the responder has not read them yet; whatever was dropped shows as a gap in
    // the line sequence numbers of the next edge read. Two more edges, slowly, end the burst.
    let generator = gpio.clone();
    let run = GpioRun::start(&mut gpio, c).unwrap();
    for k in 0..8 {
        generator.drive(1, k % 2 == 0);
    }
    std::thread::sleep(Duration::from_millis(20));
    generator.drive(1, true);
    std::thread::sleep(Duration::from_millis(20));
    generator.drive(1, false);
    let r = run.finish();
    let total = r.input.rising + r.input.falling;
    assert_eq!(total + r.input.lost, 10, "{:?}", r.input);
}

#[test]
fn busy_and_missing_lines_are_refused_with_a_line_list() {
    let mut gpio = MockGpio::new(4);
    gpio.set_busy(1, "other-daemon");
    let e = GpioRun::start(&mut gpio, config(Some(0), 1, None, None))
        .err()
        .unwrap();
    let RespondError::Gpio(GpioError::Busy {
        consumer, lines, ..
    }) = &e
    else {
        panic!("{e}");
    };
    assert_eq!(consumer, "other-daemon");
    assert!(lines.contains("line   3"));
    assert!(e.to_string().contains("busy"));
    let e = GpioRun::start(&mut gpio, config(Some(0), 9, None, None))
        .err()
        .unwrap();
    assert!(
        matches!(e, RespondError::Gpio(GpioError::NoLine { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("does not exist"));
}

#[test]
fn inconsistent_wiring_is_a_usage_error() {
    let mut gpio = MockGpio::new(4);
    // A watched input without a response line to watch.
    let e = GpioRun::start(&mut gpio, config(Some(0), 1, None, Some(3)))
        .err()
        .unwrap();
    assert!(matches!(e, RespondError::Invalid(_)), "{e}");
    assert_eq!(
        LineId::parse("gpiochip0:17", None).unwrap(),
        LineId {
            chip: Some("gpiochip0".into()),
            line: LineSel::Offset(17)
        }
    );
    assert_eq!(
        LineId::parse("GPIO17", None).unwrap().line,
        LineSel::Name("GPIO17".into())
    );
}
