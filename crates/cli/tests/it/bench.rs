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
        &["lab", "--files", "20", "--mebibytes", "1", "--json"][..],
        &["search", "--skills", "40", "--json"][..],
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
                ["pass", "fail", "info"].contains(&row["result"].as_str().unwrap()),
                "{row}"
            );
        }
    }
}

/// `bench lab` and `bench search`: two informational rows each, beside their baselines, with
/// no budget (the target column is "—").
#[test]
fn bench_lab_and_search_print_informational_rows() {
    for (args, group, baseline) in [
        (
            &["lab", "--files", "20", "--mebibytes", "1"][..],
            "lab: ",
            "read the same files",
        ),
        (
            &["search", "--skills", "40"][..],
            "search: find",
            "read every SKILL.md",
        ),
        // The search by the query's length, up to its cap, and a 1 MB query refused.
        (
            &["search", "--skills", "40"][..],
            "search: a ",
            "a 64-byte query",
        ),
    ] {
        let out = bench(args);
        let rows: Vec<&str> = out.lines().filter(|l| l.starts_with(group)).collect();
        let expected = if group == "search: a " { 4 } else { 2 };
        assert_eq!(rows.len(), expected, "{out}");
        for row in rows {
            assert!(row.contains(" info "), "a row with a verdict: {row}");
            assert!(row.contains(baseline), "a row without its baseline: {row}");
        }
    }
}

/// `bench record --database postgres://…`: the SQLite figures and, in the same run, the same
/// uses on PostgreSQL beside bare PostgreSQL inserts; the scratch schema is gone afterwards.
/// PostgreSQL: MINDRUNE_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test);
/// when it cannot be reached the test fails, as the other PostgreSQL tests do.
#[test]
fn bench_record_on_postgres_prints_both_backends_and_drops_its_schema() {
    let url = std::env::var("MINDRUNE_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap_or_else(|err| {
        panic!("PostgreSQL is not reachable: {err}; point MINDRUNE_TEST_DATABASE_URL at one")
    });
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .env("MINDRUNE_HOME", dir.path().join("home"))
        .env_remove("MINDRUNE_DATABASE_URL")
        .args([
            "--database",
            &url,
            "bench",
            "record",
            "--uses",
            "300",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "mindrune bench record on PostgreSQL failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for (backend, baseline) in [
        (&value, "baseline_bare_sqlite"),
        (&value["postgresql"], "baseline_bare_postgresql"),
    ] {
        for figures in [&backend["mindrune"], &backend[baseline]] {
            for field in ["uses_per_second", "p50_us", "p99_us", "mean_us"] {
                assert!(
                    figures[field].as_f64().is_some_and(|v| v > 0.0),
                    "{field} missing in {figures} ({baseline})"
                );
            }
        }
        assert!(
            backend["ratio"].as_f64().is_some_and(|r| r > 0.0),
            "{value}"
        );
    }
    let targets = value["postgresql"]["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 1, "only the ratio is a target: {value}");
    assert_eq!(targets[0]["figure"], "ratio");
    assert!(targets[0]["pass"].is_boolean());

    // The scratch schema it named, and any other of this process's, is gone.
    let schema = value["postgresql"]["schema"].as_str().expect("schema");
    assert!(
        schema.starts_with(&format!("bench_record_{pid}_")),
        "{schema}"
    );
    let left: i64 = client
        .query_one(
            "SELECT count(*) FROM information_schema.schemata
             WHERE schema_name = $1 OR schema_name LIKE $2",
            &[&schema, &format!("bench\\_record\\_{pid}\\_%")],
        )
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "bench record left its schema {schema} behind");
}

/// `bench tags`: the vocabulary build beside a plain automaton's, mapping throughput beside a
/// plain scan of the same text with its verdict, and the linear check, in text and in JSON.
#[test]
fn bench_tags_prints_the_build_the_rate_and_the_linear_check() {
    let out = bench(&["tags", "--megabytes", "1"]);
    for expected in [
        "build: ",
        "baseline: plain aho-corasick build",
        "MindRune (spelling rules, whole words, aliases, exact tags)",
        "baseline: plain aho-corasick, same names",
        "map     target ≥ 200 MB/s",
        "linear: the same lines as one text",
    ] {
        assert!(out.contains(expected), "{expected:?} missing in:\n{out}");
    }
    for line in out
        .lines()
        .filter(|l| l.contains("target ≥") || l.starts_with("linear:"))
    {
        assert!(
            line.ends_with("pass") || line.ends_with("FAIL"),
            "a verdict line without a verdict: {line}"
        );
    }

    let value: serde_json::Value =
        serde_json::from_str(&bench(&["tags", "--megabytes", "1", "--json"])).unwrap();
    assert_eq!(value["benchmark"], "tags");
    assert!(value["build"]["names"].as_u64().unwrap() > 2_000, "{value}");
    assert!(value["map"]["tags_found"].as_u64().unwrap() > 0, "{value}");
    for field in [
        "mb_per_second",
        "baseline_plain_aho_corasick_mb_per_second",
        "ratio",
    ] {
        assert!(
            value["map"][field].as_f64().unwrap() > 0.0,
            "{field}: {value}"
        );
    }
    let linear = &value["linear"];
    assert!(
        linear["small_over_large"].as_f64().unwrap() > 0.0,
        "{value}"
    );
    assert!(linear["large_text_bytes"].as_u64() > linear["small_text_bytes"].as_u64());
    assert!(linear["pass"].is_boolean(), "{value}");
}
