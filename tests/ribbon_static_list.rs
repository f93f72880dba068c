//! `examples/static_list.rs` (docs/examples.md, "A static list rebuilt on a schedule"), run
//! small against a test server: a 20,000-entry list rebuilt three times and swapped in with
//! `RENAME` while two readers ask it gives no false negative, a rate of false positives
//! within what was asked, and the report the doc shows (its header, one table row per round,
//! the readers' and memory lines, the verdict); rebuilding the read key in place instead is
//! caught by the same readers as false negatives. One server for both runs.

mod common;

#[allow(dead_code)]
#[path = "../examples/static_list.rs"]
mod static_list;

use common::Server;
use static_list::{entry, Config, Report, LIST, NEXT};

const ENTRIES: usize = 20_000;
const CHURN: usize = 500;
const ERROR: f64 = 0.01;

fn small(port: u16, rounds: u32, in_place: bool) -> Config {
    Config {
        url: format!("redis://127.0.0.1:{port}/"),
        entries: ENTRIES,
        rounds,
        churn: CHURN,
        readers: 2,
        probe_batch: 50,
        stage_batch: 2_000,
        error: ERROR,
        hour_ms: 20,
        in_place,
    }
}

/// The cells of a table row `| a | b | … |`.
fn cells(line: &str) -> Vec<&str> {
    let inner = line
        .trim()
        .strip_prefix('|')
        .and_then(|l| l.strip_suffix('|'));
    let inner = inner.unwrap_or_else(|| panic!("not a table row: {line}"));
    inner.split('|').map(str::trim).collect()
}

/// The printed report has the shape docs/examples.md shows.
fn check_text(report: &Report, rounds: u32) {
    let text = report.text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "static list 'passwords': {ENTRIES} entries, {rounds} rebuilds of {CHURN} out / {CHURN} in, error {ERROR}, "
        )),
        "{text}"
    );
    assert_eq!(
        cells(lines[1]),
        [
            "round",
            "entries",
            "in",
            "out",
            "stage s",
            "staged bytes",
            "build s",
            "swap ms",
            "built bytes",
            "bits/entry"
        ],
        "{text}"
    );
    for r in 0..=rounds as usize {
        let row = cells(lines[3 + r]);
        assert_eq!(row.len(), 10, "{text}");
        let (came_in, went_out) = if r == 0 { (ENTRIES, 0) } else { (CHURN, CHURN) };
        assert_eq!(
            row[..4],
            [
                r.to_string(),
                ENTRIES.to_string(),
                came_in.to_string(),
                went_out.to_string()
            ],
            "{text}"
        );
        let built: f64 = row[8].parse().unwrap();
        let bits: f64 = row[9].parse().unwrap();
        assert!(
            built > 0.0 && (bits - built * 8.0 / ENTRIES as f64).abs() < 0.01,
            "{text}"
        );
    }
    let rest = &lines[4 + rounds as usize..];
    let starts = [
        "readers: ",
        "  wait per call during staging (RF.MADD): ",
        "  wait per call during RF.BUILD: ",
        "  wait per call during RENAME: ",
        "  wait per call otherwise: ",
        "  entries on the list asked: ",
        "  entries not on the list asked: ",
        "  entries in or out during a swap (either answer right): ",
        "memory: Ribbon ",
    ];
    assert_eq!(rest.len(), starts.len() + 1, "{text}");
    for (line, start) in rest.iter().zip(starts) {
        assert!(
            line.starts_with(start),
            "{line:?} should start with {start:?}"
        );
    }
    let verdict = if report.false_negatives == 0 {
        "no false negatives".to_string()
    } else {
        format!("FALSE NEGATIVES: {} (first: ", report.false_negatives)
    };
    assert!(rest[starts.len()].starts_with(&verdict), "{text}");
}

#[test]
fn the_static_list_job_never_answers_0_for_a_listed_entry() {
    let server = Server::start();
    // (rebuilt in place, rounds): the swap the example shows, then the mistake it avoids.
    for (in_place, rounds) in [(false, 3), (true, 1)] {
        let cfg = small(server.port, rounds, in_place);
        let report = static_list::run(&cfg).unwrap();
        println!("{}", report.text());
        check_text(&report, rounds);
        assert_eq!(report.rounds.len(), rounds as usize + 1);
        assert_eq!((report.failed_calls, &report.first_error), (0, &None));
        // Every reader was answered at least once after each swap.
        assert!(report.calls >= 2 * (rounds as u64 + 1), "{report:?}");
        assert!(report.member_probes > 0 && report.absent_probes > 0);
        if in_place {
            // The key was missing, then partly staged, while readers asked it.
            assert!(report.false_negatives > 0, "{}", report.text());
            continue;
        }
        assert_eq!(
            (report.false_negatives, &report.first_false_negative),
            (0, &None),
            "{}",
            report.text()
        );
        // The readers' rate: within 5 standard deviations (plus 5) of what was asked.
        let expected = ERROR * report.absent_probes as f64;
        assert!(
            (report.false_positives as f64) <= expected + 5.0 * expected.sqrt() + 5.0,
            "{}",
            report.text()
        );
        let last = report.rounds.last().unwrap().built_bytes;
        assert!(last > 0 && report.bloom_bytes > last, "{report:?}");

        // The final key: built from the last list, every entry on it answers 1; the staging
        // key is gone (renamed).
        let mut con = server.conn();
        let card: u64 = common::cmd(["RF.CARD", LIST]).query(&mut con).unwrap();
        assert_eq!(card, ENTRIES as u64);
        let exists: u64 = common::cmd(["EXISTS", NEXT]).query(&mut con).unwrap();
        assert_eq!(exists, 0);
        // The last list again: every entry answers 1; as many entries never listed answer 1
        // at most at the rate asked.
        let last: Vec<String> = static_list::list_of(&cfg, rounds)
            .into_iter()
            .map(entry)
            .collect();
        assert_eq!(last.len(), ENTRIES);
        let answers: Vec<u8> = redis::cmd("RF.MEXISTS")
            .arg(LIST)
            .arg(&last)
            .query(&mut con)
            .unwrap();
        assert!(answers.iter().all(|&a| a == 1), "a listed entry answered 0");
        let never: Vec<String> = (0..ENTRIES as u64).map(static_list::absent).collect();
        let answers: Vec<u8> = redis::cmd("RF.MEXISTS")
            .arg(LIST)
            .arg(&never)
            .query(&mut con)
            .unwrap();
        let ones = answers.iter().filter(|&&a| a == 1).count();
        assert!(
            ones > 0 && ones as f64 <= ERROR * ENTRIES as f64,
            "{ones} of {ENTRIES} never-listed entries answered 1"
        );
    }
}
