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
    assert_eq!(d.sched.policy, rtscope_session::plan::PolicyChoice::Fifo);
    assert_eq!(d.event_capacity, 10_000);
    assert!(d.duration.is_none() && d.cpus.is_none());
}

fn command(args: &[&str]) -> crate::cli::Command {
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(args);
    cli.unwrap_or_else(|e| panic!("{args:?}: {e}")).command
}

#[test]
fn each_measuring_command_takes_its_own_policies_and_defaults_into_the_plans_types() {
    use crate::cli::Command::{Measure, Noise, Respond};
    use rtscope_session::plan::PolicyChoice::{Deadline, Fifo, Other, Rr};
    let sched = |args: &[&str]| match command(args) {
        Measure(a) => (a.sched.policy, a.sched.priority_or(90)),
        Noise(a) => (a.threads.sched.policy, a.threads.sched.priority_or(95)),
        Respond(a) => (a.threads.sched.policy, a.threads.sched.priority_or(95)),
        c => panic!("{c:?}"),
    };
    assert_eq!(sched(&["rtscope", "measure"]), (Fifo, 90));
    assert_eq!(
        sched(&["rtscope", "measure", "--policy", "deadline"]),
        (Deadline, 0)
    );
    assert_eq!(sched(&["rtscope", "noise"]), (Other, 0));
    assert_eq!(sched(&["rtscope", "noise", "--policy", "rr"]), (Rr, 95));
    assert_eq!(sched(&["rtscope", "respond", "-p", "-5"]), (Fifo, -5));
    for sub in ["noise", "respond"] {
        let e = <crate::cli::Cli as clap::Parser>::try_parse_from([
            "rtscope", sub, "--policy", "batch",
        ]);
        assert_eq!(
            e.unwrap_err().kind(),
            clap::error::ErrorKind::InvalidValue,
            "{sub}"
        );
    }
}

#[test]
fn a_value_of_a_lower_crate_is_parsed_into_its_type() {
    let crate::cli::Command::Import(a) = command(&[
        "rtscope",
        "import",
        "--format",
        "rtla-osnoise-hist",
        "x.txt",
    ]) else {
        panic!("not import");
    };
    assert_eq!(
        a.format,
        Some(rtscope_import::ImportFormat::RtlaOsnoiseHist)
    );
    let crate::cli::Command::Respond(a) = command(&["rtscope", "respond", "--bias", "pull-up"])
    else {
        panic!("not respond");
    };
    assert_eq!(a.bias, rtscope_respond::gpio::Bias::PullUp);
}
