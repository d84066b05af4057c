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

fn parse(args: &[&str]) -> Result<crate::cli::Cli, clap::Error> {
    <crate::cli::Cli as clap::Parser>::try_parse_from(args)
}

#[test]
fn each_measuring_command_takes_its_own_policies_and_default_into_the_one_policy_type() {
    use crate::cli::Command;
    use rtscope_session::PolicyChoice;
    let policy = |args: &[&str]| match parse(args).map(|c| c.command) {
        Ok(Command::Measure(a)) => Some(a.sched.policy),
        Ok(Command::Noise(a)) => Some(a.threads.sched.policy),
        Ok(Command::Respond(a)) => Some(a.threads.sched.policy),
        _ => None,
    };
    assert_eq!(policy(&["rtscope", "measure"]), Some(PolicyChoice::Fifo));
    assert_eq!(policy(&["rtscope", "noise"]), Some(PolicyChoice::Other));
    assert_eq!(policy(&["rtscope", "respond"]), Some(PolicyChoice::Fifo));
    let deadline = ["rtscope", "measure", "--policy", "deadline"];
    assert_eq!(policy(&deadline), Some(PolicyChoice::Deadline));
    let rr = ["rtscope", "noise", "--policy", "rr"];
    assert_eq!(policy(&rr), Some(PolicyChoice::Rr));
    for sub in ["noise", "respond"] {
        let e = parse(&["rtscope", sub, "--policy", "batch"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{sub}");
    }
}

#[test]
fn the_priority_default_follows_the_policy() {
    let Ok(crate::cli::Command::Noise(a)) = parse(&["rtscope", "noise"]).map(|c| c.command) else {
        panic!("rtscope noise parses");
    };
    assert_eq!(a.threads.sched.priority_or(95), 0, "nice 0 for other");
    let Ok(crate::cli::Command::Respond(a)) =
        parse(&["rtscope", "respond", "-p", "-5"]).map(|c| c.command)
    else {
        panic!("rtscope respond -p -5 parses");
    };
    assert_eq!(
        a.threads.sched.priority_or(95),
        -5,
        "a priority given is kept"
    );
    let d = crate::cli::measure::MeasureArgs::default();
    assert_eq!(d.sched.priority_or(90), 90, "fifo's real-time default");
}

#[test]
fn an_import_format_is_parsed_into_the_importers_type() {
    let args = [
        "rtscope",
        "import",
        "--format",
        "rtla-osnoise-hist",
        "x.txt",
    ];
    let Ok(crate::cli::Command::Import(a)) = parse(&args).map(|c| c.command) else {
        panic!("rtscope import --format rtla-osnoise-hist parses");
    };
    assert_eq!(
        a.format,
        Some(rtscope_import::ImportFormat::RtlaOsnoiseHist)
    );
}
