use super::*;

fn toy() -> clap::Command {
    clap::Command::new("rtscope")
        .version("9.9.9 (x86_64-unknown-linux-musl, commit abc)")
        .about("Timer wake-up latency")
        .subcommand(
            clap::Command::new("measure")
                .about("Measure latency")
                .arg(clap::Arg::new("duration").long("duration").short('D')),
        )
        .subcommand(
            clap::Command::new("runs")
                .about("Runs")
                .subcommand(clap::Command::new("show").about("Show one run")),
        )
        .subcommand(clap::Command::new("hidden").hide(true))
}

#[test]
fn one_page_per_visible_subcommand_at_any_depth() {
    let names: Vec<_> = pages(&toy(), Inputs::default())
        .into_iter()
        .map(|p| p.file_name())
        .collect();
    assert_eq!(
        names,
        [
            "rtscope.1",
            "rtscope-measure.1",
            "rtscope-runs.1",
            "rtscope-runs-show.1"
        ]
    );
}

#[test]
fn page_has_name_options_exit_codes_and_references() {
    let p = page(&toy(), &["measure"], Inputs::default()).unwrap();
    let th = p.roff.lines().find(|l| l.starts_with(".TH")).unwrap();
    assert_eq!(
        th,
        ".TH \"RTSCOPE-MEASURE\" \"1\" \"\" \"rtscope 9.9.9\" \"rtscope manual\""
    );
    assert_eq!(
        p.roff.matches(".ds Aq").count(),
        2,
        "one preamble: {}",
        p.roff
    );
    assert!(p.roff.contains("rtscope\\-measure \\- Measure latency"));
    assert!(p.roff.contains("\\-\\-duration"));
    assert!(p.roff.contains(".SH \"EXIT STATUS\""));
    assert!(p.roff.contains("RTSCOPE_DB"));
    assert!(p.roff.contains("rtscope\\-runs(1)"), "siblings in SEE ALSO");
    assert!(matches!(
        page(&toy(), &["nope"], Inputs::default()),
        Err(ManualError::UnknownCommand(_))
    ));
}

#[test]
fn writes_pages_and_completions_replacing_symlinks() {
    let dir = std::env::temp_dir().join(format!("rtscope-manual-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("rtscope.1")).unwrap();
    let files = write_pages(&toy(), &dir, Inputs::default()).unwrap();
    assert_eq!(files.len(), 4);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(std::fs::read_to_string(dir.join("rtscope.1"))
        .unwrap()
        .contains("\n.TH \"RTSCOPE\" \"1\""));
    let c = write_completions(&toy(), &dir).unwrap();
    let names: Vec<_> = c
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["rtscope.bash", "_rtscope", "rtscope.fish"]);
    let fish = std::fs::read_to_string(dir.join("rtscope.fish")).unwrap();
    assert!(fish.contains("duration") && fish.contains("show"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The EXIT STATUS sections come from the one list of codes: the top-level page has every
/// code of `ExitStatus::ALL` with its meaning, and code 2 reads the same on every page.
#[test]
fn exit_status_sections_come_from_the_one_list_of_codes() {
    use rtscope_common::error::ExitStatus;
    let root = crate::notes::exit_codes(&crate::notes::for_command(""));
    assert_eq!(
        root.iter().map(|(s, t)| (s.code(), *t)).collect::<Vec<_>>(),
        ExitStatus::ALL
            .iter()
            .filter(|s| **s != ExitStatus::Success)
            .fold(vec![(0, "Success.")], |mut v, s| {
                v.push((s.code(), s.meaning()));
                v
            })
    );
    for key in ["measure", "runs show", "check", "cyclictest"] {
        let codes = crate::notes::exit_codes(&crate::notes::for_command(key));
        assert!(
            codes.contains(&(ExitStatus::Usage, ExitStatus::Usage.meaning())),
            "{key}"
        );
        assert!(
            codes.windows(2).all(|w| w[0].0.code() < w[1].0.code()),
            "{key}"
        );
    }
}
