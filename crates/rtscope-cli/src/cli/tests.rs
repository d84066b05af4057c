//! The clap definition's own checks.

#[test]
fn clap_definition_is_consistent() {
    crate::cli::command().debug_assert();
}

#[test]
fn measure_defaults_are_clap_defaults() {
    let d = crate::cli::measure::MeasureArgs::default();
    assert_eq!(d.interval, "1ms");
    assert_eq!(d.sched.priority, None, "90 for fifo/rr, 0 for other/batch");
    assert_eq!(d.sched.policy, rtscope_session::PolicyChoice::Fifo);
    assert_eq!(d.event_capacity, 10_000);
    assert!(d.duration.is_none() && d.cpus.is_none());
}
