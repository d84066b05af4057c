use super::*;
use std::sync::Mutex;

/// `--follow-symlinks` is process-wide: the tests that read or set it take turns.
static FOLLOW: Mutex<()> = Mutex::new(());

/// A turn at [`FOLLOW`]; the mutex guards no data, so one failed test does not fail the others.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    FOLLOW
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rtscope-outfile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write_text(path: &Path, text: &str) -> Result<(), OutError> {
    write(path, &mut io::sink(), |w| w.write_all(text.as_bytes()))
}

/// N1: `mknod mynull c 1 3; rtscope … --ci-output junit=mynull` left a regular file.
#[test]
fn a_device_is_written_through_never_replaced() {
    let _g = turn();
    let d = dir("device");
    let node = d.join("mynull");
    let st = std::process::Command::new("mknod")
        .args(["-m", "666"])
        .arg(&node)
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    rtscope_testkit::require!(
        st.success(),
        "mknod of a character device needs root (CAP_MKNOD)"
    );
    assert_eq!(Dest::resolve(&node).unwrap(), Dest::Special(node.clone()));
    write_text(&node, "<testsuites/>\n").unwrap();
    let t = std::fs::symlink_metadata(&node).unwrap().file_type();
    assert!(t.is_char_device(), "still a device");
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "no temporary file left"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_fifo_is_written_through() {
    let _g = turn();
    let d = dir("fifo");
    let fifo = d.join("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    write_text(&fifo, "{}\n").unwrap();
    assert_eq!(reader.join().unwrap(), "{}\n");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_symlink_is_refused_unless_followed() {
    let _g = turn();
    let d = dir("symlink");
    let victim = d.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = d.join("out.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let e = write_text(&link, "{}").unwrap_err();
    assert!(matches!(e, OutError::Symlink { .. }), "{e}");
    assert!(e.to_string().contains("--follow-symlinks"), "{e}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    set_follow_symlinks(true);
    let r = write_text(&link, "{}");
    set_follow_symlinks(false);
    r.unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "{}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // A link to a file not there yet: the file is created where the link points.
    let dangling = d.join("dangling");
    std::os::unix::fs::symlink("new.json", &dangling).unwrap();
    set_follow_symlinks(true);
    let r = write_text(&dangling, "[]");
    set_follow_symlinks(false);
    r.unwrap();
    assert_eq!(std::fs::read_to_string(d.join("new.json")).unwrap(), "[]");
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    let _ = std::fs::remove_dir_all(&d);
}

/// `--json=/dev/stdout` is a common harness idiom: it means standard output, as `-` does.
#[test]
fn dash_and_dev_stdout_are_standard_output() {
    let _g = turn();
    for p in ["-", "/dev/stdout"] {
        let mut out = Vec::new();
        write(Path::new(p), &mut out, |w| w.write_all(b"x")).unwrap();
        assert_eq!(out, b"x");
    }
}

/// N11: a write to /dev/full reported success.
#[test]
fn every_write_error_is_returned_naming_the_file() {
    let _g = turn();
    let e = write_text(Path::new("/dev/full"), "{}").unwrap_err();
    assert_eq!(e.io_kind(), Some(io::ErrorKind::StorageFull), "{e}");
    assert!(e.to_string().contains("/dev/full"), "{e}");
    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::StorageFull.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let e = write(Path::new("-"), &mut Full, |w| w.write_all(b"x")).unwrap_err();
    assert!(e.to_string().contains("standard output"), "{e}");
}

#[test]
fn a_regular_file_is_replaced_whole_and_bad_paths_fail_before() {
    let _g = turn();
    let d = dir("regular");
    let f = d.join("r.xml");
    std::fs::write(&f, "old").unwrap();
    write_text(&f, "new").unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
    let e = write(&f, &mut io::sink(), |_| Err(io::Error::other("disk full"))).unwrap_err();
    assert!(e.to_string().contains("disk full"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "new",
        "the old file stays"
    );
    assert_eq!(
        std::fs::read_dir(&d).unwrap().count(),
        1,
        "no temporary file left"
    );
    assert!(matches!(
        Dest::resolve(&d.join("no/such.xml")),
        Err(OutError::NoDirectory { .. })
    ));
    assert!(matches!(Dest::resolve(&d), Err(OutError::Directory { .. })));
    let _ = std::fs::remove_dir_all(&d);
}
