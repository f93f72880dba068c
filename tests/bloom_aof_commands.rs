//! What reaches the AOF (and, by the same path, replicas) for add commands (`docs/commands.md` ("Replication and AOF")):
//! implicit creations spelled out as BF.INSERT with their parameters, exactly the added items,
//! nothing for adds that changed nothing, and never an item the primary refused — so a replay
//! never sees an error and builds the same bits.

mod common;

use common::Server;

/// The commands of the server's incremental AOF file, as lists of arguments.
fn aof_commands(server: &Server) -> Vec<Vec<String>> {
    let dir = server.dir.path().join("appendonlydir");
    let incr = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .expect("incremental AOF file");
    let data = std::fs::read(incr).unwrap();
    let mut out = Vec::new();
    let mut pos = 0;
    let line = |pos: &mut usize| -> String {
        let end = *pos + data[*pos..].windows(2).position(|w| w == b"\r\n").unwrap();
        let s = String::from_utf8_lossy(&data[*pos..end]).into_owned();
        *pos = end + 2;
        s
    };
    while pos < data.len() {
        let head = line(&mut pos);
        let n: usize = head[1..].parse().unwrap();
        let mut args = Vec::new();
        for _ in 0..n {
            let len: usize = line(&mut pos)[1..].parse().unwrap();
            args.push(String::from_utf8_lossy(&data[pos..pos + len]).into_owned());
            pos += len + 2;
        }
        out.push(args);
    }
    out.into_iter()
        .filter(|c| c[0].to_ascii_uppercase().starts_with("BF."))
        .collect()
}

/// Runs a command line, its reply or its error as a value (the test only reads the AOF).
fn run(con: &mut redis::Connection, line: &str) -> redis::Value {
    common::cmd(line)
        .query(con)
        .unwrap_or_else(|e| redis::Value::SimpleString(format!("error: {e}")))
}

#[test]
fn aof_holds_exactly_the_added_items() {
    let mut server = Server::start_with(&[], &[("appendonly", "yes"), ("appendfsync", "always")]);
    let mut con = server.conn();
    for line in [
        "BF.MADD auto a b a",
        "BF.ADD auto a",    // changes nothing
        "BF.MADD auto a c", // only c is new: replicated as sent (nothing refused)
        "BF.RESERVE full 0.01 2 NONSCALING",
        "BF.MADD full x y z w", // z: full, w: not processed
        "BF.MADD full x q",     // nothing added
        "BF.INSERT ins CAPACITY 5 ERROR 0.1 ITEMS m m n",
        // BF.ADD's own creation path, and the kept option strings following the defaults.
        "BF.ADD one x",
        "CONFIG SET bf.error-rate 0.001",
        "CONFIG SET bf.expansion-factor 0",
        "BF.ADD two y",
        "CONFIG SET bf.error-rate 0.01",
        "CONFIG SET bf.expansion-factor 2",
        "BF.ADD three z",
        // 15 and 17 replicated arguments: either side of the 16 that go as `s` specifiers.
        "BF.MADD many 1 2 3 4 5 6 7",
        "BF.MADD more 1 2 3 4 5 6 7 8 9",
    ] {
        run(&mut con, line);
    }
    // Redis 8 (RedisBloom 8): BF.RESERVE's growth comes from bf-expansion-factor, spelled out
    // in the replicated command (a NONSCALING one as its header, below); a non-scaling
    // implicit filter stores growth 0.

    let redis8 = common::errors_by_line::redis8();
    let mut expected: Vec<Vec<String>> = [
        "BF.INSERT auto CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS a b",
        "BF.MADD auto a c",
        "BF.RESERVE full 0.01 2 NONSCALING",
        "BF.MADD full x y",
        "BF.INSERT ins CAPACITY 5 ERROR 0.1 EXPANSION 2 ITEMS m n",
        "BF.INSERT one CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS x",
        if redis8 {
            "BF.INSERT two CAPACITY 100 ERROR 0.001 EXPANSION 0 NONSCALING ITEMS y"
        } else {
            "BF.INSERT two CAPACITY 100 ERROR 0.001 EXPANSION 2 NONSCALING ITEMS y"
        },
        "BF.INSERT three CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS z",
        "BF.INSERT many CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS 1 2 3 4 5 6 7",
        "BF.INSERT more CAPACITY 100 ERROR 0.01 EXPANSION 2 ITEMS 1 2 3 4 5 6 7 8 9",
    ]
    .iter()
    .map(|l| l.split(' ').map(String::from).collect())
    .collect();
    if redis8 {
        // A Redis 8 NONSCALING reserve keeps the configured growth (2), which no BF.RESERVE
        // RedisBloom 8 accepts can say: it goes as the new filter's header.
        let header = redis_bf::bloom::dump::encode_header(
            &redis_bf::bloom::chain::Chain::new(2, 0.01, 2, true, u64::MAX).unwrap(),
        );
        expected[2] = vec![
            "BF.LOADCHUNK".into(),
            "full".into(),
            "1".into(),
            String::from_utf8_lossy(&header).into_owned(),
        ];
    }
    assert_eq!(aof_commands(&server), expected);

    // The replay builds the same filters and logs no error.
    let keys = ["auto", "full", "ins", "one", "two", "three", "many", "more"];
    let before: Vec<redis::Value> = keys
        .iter()
        .map(|k| run(&mut con, &format!("BF.DEBUG {k}")))
        .collect();
    drop(con);
    server.restart(&[]);
    let mut con = server.conn();
    let after: Vec<redis::Value> = keys
        .iter()
        .map(|k| run(&mut con, &format!("BF.DEBUG {k}")))
        .collect();
    assert_eq!(before, after);
    assert!(
        !server.log().contains("AOF-loading-client"),
        "the replay answered an error:\n{}",
        server.log()
    );
}
