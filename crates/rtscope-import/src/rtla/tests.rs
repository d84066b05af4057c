use super::*;

#[test]
fn rtla_s_escapes_are_taken_out_and_no_other() {
    let (l, clear) = clean(
        1,
        "\x1bc\x1b[2;37;40m  Operating System Noise \x1b[0;0;0m\r",
    )
    .unwrap();
    assert_eq!((l.as_ref(), clear), ("  Operating System Noise ", true));
    let (l, clear) = clean(1, "plain").unwrap();
    assert!(matches!(l, Cow::Borrowed("plain")) && !clear);
    for bad in [
        "\x1b[2J",
        "\x1b]0;x\x07",
        "a\x00b",
        "\x1b",
        "\x1b[1;2",
        "\x7f",
    ] {
        let e = clean(3, bad).unwrap_err();
        assert_eq!(e.at.as_deref(), Some("line 3"), "{bad:?}");
        assert!(
            !e.what.contains('\x1b') && !e.what.contains('\x07'),
            "{e:?}"
        );
    }
}

#[test]
fn durations_and_trailer_lines() {
    assert_eq!(duration_s("  0 00:00:10"), Some(10));
    assert_eq!(duration_s("2 01:02:03"), Some(2 * 86_400 + 3723));
    for bad in [
        "",
        "0",
        "0 00:00",
        "0 24:00:00",
        "x 00:00:01",
        "0 00:00:01 x",
        "99999999999 00:00:00",
    ] {
        assert_eq!(duration_s(bad), None, "{bad:?}");
    }
    let mut t = Trailer::default();
    assert!(t.take("rtla osnoise hit stop tracing") && t.stopped);
    assert!(t.take("  Saving trace to /tmp/\u{1b}x.txt"));
    assert_eq!(t.trace_saved.as_deref(), Some("/tmp/\\x1bx.txt"));
    assert!(t.take("unknown number of events missed, results might not be accurate"));
    assert_eq!(t.missed, Some(None));
    assert!(t.take("7 (0.01%) events missed, results might not be accurate"));
    assert_eq!(t.missed, Some(Some(7)));
    assert!(!t.take("many events missed, results might not be accurate"));
    assert!(!t.take("osnoise hit stop tracing now"));
}
