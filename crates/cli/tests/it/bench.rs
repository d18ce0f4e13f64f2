//! `mindrune bench` at small sizes: the table's columns and the JSON rows' shape. Timings are
//! never asserted here; budgets are judged from `mindrune bench`'s own table.

use assert_cmd::Command;

fn bench(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("mindrune")
        .unwrap()
        .env("MINDRUNE_HOME", dir.path().join("home"))
        .arg("bench")
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mindrune bench {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn bench_secrets_prints_a_table_of_rows() {
    let out = bench(&["secrets", "--megabytes", "2"]);
    let header = out
        .lines()
        .find(|l| l.starts_with("benchmark"))
        .expect("a table header");
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "benchmark",
            "size",
            "figure",
            "baseline",
            "ratio",
            "target",
            "result",
            "peak",
            "RSS"
        ]
    );
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("secrets: ")).collect();
    assert_eq!(rows.len(), 3, "{out}");
    for row in rows {
        assert!(
            row.contains(" pass ") || row.contains(" FAIL "),
            "a row without a verdict: {row}"
        );
    }
    assert!(out.contains("MB/s"), "{out}");
    assert!(out.contains("plain aho-corasick"), "{out}");
}

#[test]
fn bench_json_rows_have_every_field() {
    for args in [
        &["secrets", "--megabytes", "1", "--json"][..],
        &["near-repeat", "--snippets", "60", "--json"][..],
    ] {
        let out = bench(args);
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        let rows = value["rows"].as_array().expect("rows");
        assert!(!rows.is_empty());
        for row in rows {
            for field in [
                "group",
                "name",
                "size",
                "figure",
                "unit",
                "baseline_name",
                "baseline",
                "baseline_unit",
                "ratio",
                "target",
                "result",
                "peak_rss_mib",
            ] {
                assert!(row.get(field).is_some(), "{field} missing in {row}");
            }
            assert!(row["figure"].is_number(), "{row}");
            assert!(
                ["pass", "fail", "info", "not_built_yet"]
                    .contains(&row["result"].as_str().unwrap()),
                "{row}"
            );
        }
    }
}
