//! The step API of tests/common: a command line splits into the arguments it names, and a
//! stepper reports every wrong reply (a check that cannot fail would be a defect).

mod common;

use common::{split_args, step_lines, Server, Steps};

#[test]
fn command_lines_split_like_redis_cli() {
    let b = |v: &[&[u8]]| v.iter().map(|a| a.to_vec()).collect::<Vec<_>>();
    for (line, want) in [
        ("BF.ADD k a", b(&[b"BF.ADD", b"k", b"a"])),
        ("  BF.ADD\tk   a  ", b(&[b"BF.ADD", b"k", b"a"])),
        (r#"BF.ADD k """#, b(&[b"BF.ADD", b"k", b""])),
        (r#"BF.ADD k "a b""#, b(&[b"BF.ADD", b"k", b"a b"])),
        (
            r#"BF.ADD k "a\x00\xffb""#,
            b(&[b"BF.ADD", b"k", b"a\x00\xffb"]),
        ),
        (r#"BF.ADD k "q\"\\""#, b(&[b"BF.ADD", b"k", b"q\"\\"])),
        (r#"BF.ADD k "\n\r\t""#, b(&[b"BF.ADD", b"k", b"\n\r\t"])),
        (
            r"BF.ADD k 'it\'s \x00'",
            b(&[b"BF.ADD", b"k", b"it's \\x00"]),
        ),
        ("", b(&[])),
    ] {
        assert_eq!(split_args(line), want, "{line:?}");
    }
}

#[test]
fn malformed_command_lines_are_refused() {
    for line in [r#"BF.ADD k "a"#, r#"BF.ADD k "a"b"#, r#"BF.ADD k "\x1""#] {
        assert!(
            std::panic::catch_unwind(|| split_args(line)).is_err(),
            "{line:?} was accepted"
        );
    }
}

#[test]
fn step_scripts_read_one_step_a_line() {
    let steps: Vec<_> = step_lines(
        "
        # a comment
        BF.ADD k a     -> 1

        BF.INFO k x -> (error) ERR invalid information value -> not this
        ",
    )
    .collect();
    assert_eq!(
        steps,
        [
            ("BF.ADD k a", "1"),
            (
                "BF.INFO k x",
                "(error) ERR invalid information value -> not this"
            )
        ]
    );
}

#[test]
fn steps_check_replies_and_report_every_mismatch() {
    let s = Server::start();
    let mut t = Steps::new(&s);
    t.ok("BF.RESERVE k 0.01 100");
    t.eq("BF.MADD k a b", "[1,1]");
    t.eq(args!["BF.ADD", "k", b"bin\x00ary"], "1");
    t.err(
        "BF.ADD",
        "ERR wrong number of arguments for 'bf.add' command",
    );
    t.steps(
        r#"
        BF.EXISTS k "bin\x00ary" -> 1
        BF.MEXISTS k a b c       -> [1,1,0]
        BF.INFO k CAPACITY       -> [100]
        SET str "a b"            -> OK
        GET str                  -> "a b"
        BF.INFO nokey            -> (error) ERR not found
        "#,
    );
    drop(t);

    // Wrong expectations are all reported, not only the first.
    let mut t = Steps::new(&s);
    t.eq("BF.ADD k a", "1");
    t.err("BF.CARD k", "ERR not found");
    t.steps("GET str -> a b");
    let report = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(t)))
        .expect_err("a stepper with mismatches must panic when dropped");
    let text = report.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.starts_with("3 mismatch(es)"), "{text}");
    for want in ["got:      0", "got:      3", "got:      \"a b\""] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
}
