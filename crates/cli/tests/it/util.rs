//! Small helpers: a temporary library with a family, and a way to run the binary in it.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// The clock of views compared across a test's steps: scores age with the clock, so two reads
/// of the same library are equal only at the same one.
pub(crate) const FIXED_CLOCK: &str = "2026-12-31T00:00:00Z";

/// A library in a temp dir with owner `ada` and, on demand, agents with workspaces.
pub(crate) struct TestLibrary {
    pub dir: tempfile::TempDir,
}

impl TestLibrary {
    pub(crate) fn new() -> TestLibrary {
        let lib = TestLibrary {
            dir: tempfile::tempdir().unwrap(),
        };
        lib.ok(&["init"]);
        lib.ok(&["owner", "add", "ada"]);
        lib
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub(crate) fn workspace(&self, agent: &str) -> PathBuf {
        self.dir.path().join("ws").join(agent)
    }

    /// Adds an agent of `owner` with an empty `bots/<agent>/` and a bot.env.
    pub(crate) fn agent(&self, agent: &str, owner: &str) -> PathBuf {
        let bots = self.workspace(agent).join("bots").join(agent);
        std::fs::create_dir_all(&bots).unwrap();
        std::fs::write(
            bots.join("bot.env"),
            format!("BOT_USERNAME={agent}\nPASSWORD=pw-{agent}-s3cret77\nSERVER=localhost\n"),
        )
        .unwrap();
        let workspace = self.workspace(agent);
        self.ok(&[
            "agent",
            "add",
            agent,
            "--owner",
            owner,
            "--workspace",
            workspace.to_str().unwrap(),
        ]);
        bots
    }

    pub(crate) fn write_script(&self, agent: &str, name: &str, source: &str) {
        let path = self
            .workspace(agent)
            .join("bots")
            .join(agent)
            .join(format!("{name}.ts"));
        std::fs::write(path, source).unwrap();
    }

    /// The binary with this library as its home, as a plain `std` command (for spawning).
    pub(crate) fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"));
        cmd.env("MINDRUNE_HOME", self.home())
            .env_remove("MINDRUNE_LOG")
            // The library is this one's SQLite file, whatever database the caller's shell chose.
            .env_remove("MINDRUNE_DATABASE_URL")
            .current_dir(self.dir.path());
        cmd
    }

    pub(crate) fn cmd(&self) -> Command {
        Command::from_std(self.std_cmd())
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    /// Runs with another library home and expects success; returns stdout.
    pub(crate) fn ok_in(&self, home: &std::path::Path, args: &[&str]) -> String {
        let output = self
            .cmd()
            .env("MINDRUNE_HOME", home)
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "mindrune {args:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Runs and expects success; returns stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "mindrune {args:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Writes events (one JSON value per line) to a file and records it.
    pub(crate) fn record(&self, events: &[serde_json::Value]) -> Output {
        let path = self.events_file(events);
        self.run(&["record", path.to_str().unwrap()])
    }

    pub(crate) fn events_file(&self, events: &[serde_json::Value]) -> PathBuf {
        let text: String = events.iter().map(|e| format!("{e}\n")).collect();
        let path = self
            .dir
            .path()
            .join(format!("events-{}.jsonl", rand_suffix()));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `skills --json` at one fixed clock ([`FIXED_CLOCK`]), so two reads compare equal
    /// whenever they are made.
    pub(crate) fn skills_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["skills", "--json", "--as-of", FIXED_CLOCK])).unwrap()
    }

    pub(crate) fn skill_json(&self, skill: &str) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["skill", "show", skill, "--json"])).unwrap()
    }

    /// Every byte the library keeps on disk (database, WAL), for leak checks.
    pub(crate) fn stored_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(self.home()).unwrap().flatten() {
            if entry.path().is_file() {
                bytes.extend(std::fs::read(entry.path()).unwrap());
            }
        }
        bytes
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// A small real-looking rs-sdk script; `n` varies its code.
pub(crate) fn script(n: u32) -> String {
    format!(
        "import {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot, sdk }}) => {{\n  await bot.walkTo(3200, {n});\n}}, {{ timeout: 60_000 }});\n"
    )
}

pub(crate) fn shell(agent: &str, command: &str, ok: bool) -> serde_json::Value {
    serde_json::json!({"agent": agent, "kind": "shell", "command": command, "cwd": "/work", "ok": ok, "duration_ms": 60000,
                       "at": "2026-11-28T10:00:00Z"})
}

/// Every visible file under a directory (hidden entries such as the mirror's manifest and temp
/// files left out), relative path → bytes. A missing directory has none.
pub(crate) fn visible_files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().into_string().unwrap();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            for (inner, bytes) in visible_files(&path) {
                files.insert(format!("{name}/{inner}"), bytes);
            }
        } else {
            files.insert(name, std::fs::read(&path).unwrap());
        }
    }
    files
}

/// The permission bits of a path (not following a symlink).
pub(crate) fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// A small xorshift generator: the tests need no more, and print their seeds, so a failing run
/// can be repeated.
pub(crate) struct Rng(pub u64);

impl Rng {
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// A loopback port nobody listens on now (for a server a test starts).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The seed of a fault test's randomness: `MINDRUNE_FAULT_SEED` replays a run; otherwise a fresh
/// one, printed with how to repeat it.
pub(crate) fn fault_seed(test: &str) -> u64 {
    let seed = match std::env::var("MINDRUNE_FAULT_SEED") {
        Ok(seed) => seed.parse().expect("MINDRUNE_FAULT_SEED is a number"),
        Err(_) => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            (nanos ^ u64::from(std::process::id())) | 1
        }
    };
    eprintln!("{test}: seed {seed} (set MINDRUNE_FAULT_SEED={seed} to repeat)");
    seed
}

/// Runs `mindrune ARGS` on a terminal (util-linux `script` gives it one), in `dir` with the
/// library at `home`, and answers what the terminal showed; `None` (said on stderr) when this
/// machine has no `script`. Progress is drawn only on a terminal, so this is how its tests see
/// it.
pub(crate) fn on_a_terminal(
    args: &str,
    dir: &std::path::Path,
    home: &std::path::Path,
) -> Option<String> {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("no `script` here to make a terminal; the bar was not seen");
        return None;
    }
    let line = format!(
        "'{}' {args}",
        assert_cmd::cargo::cargo_bin("mindrune").display()
    );
    let output = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("MINDRUNE_HOME", home)
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .env_remove("MINDRUNE_LAB_CRASH_AT")
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{seen}");
    Some(seen)
}

/// The binary under test as `mindrune setup` names it in everything it writes: absolute and
/// canonical.
pub(crate) fn mindrune_bin() -> String {
    assert_cmd::cargo::cargo_bin("mindrune")
        .canonicalize()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

/// `PATH` without the folder of the binary under test: a hook setup installed must run without
/// it, as on a machine where `cargo build` left the binary in `target/`.
pub(crate) fn path_without_mindrune() -> String {
    let bin = assert_cmd::cargo::cargo_bin("mindrune");
    let folder = bin.parent().unwrap().canonicalize().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<std::path::PathBuf> = std::env::split_paths(&path)
        .filter(|dir| dir.canonicalize().ok().as_deref() != Some(folder.as_path()))
        .collect();
    std::env::join_paths(kept).unwrap().into_string().unwrap()
}

/// Waits until `done` holds, failing the test with `what` after `limit`.
pub(crate) fn wait_for(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A `mindrune serve` child process, killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
}

impl Server {
    pub(crate) fn start(lib: &TestLibrary, port: u16) -> Server {
        Server::start_with(lib, port, &[])
    }

    /// `mindrune serve` with more arguments (`--config FILE`).
    pub(crate) fn start_with(lib: &TestLibrary, port: u16, more: &[&str]) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(lib.dir.path().join("serve.log"))
            .unwrap();
        let child = lib
            .std_cmd()
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args(more)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let server = Server { child };
        wait_for(Duration::from_secs(30), "the server to listen", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        server
    }

    /// SIGKILL: no graceful shutdown, requests in flight cut off.
    pub(crate) fn kill_hard(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mindrune lab VERB --json` on the package at `target` (relative to `root`, the repository
/// root), with a home of its own under `root`: the JSON it printed.
pub(crate) fn lab_json(verb: &str, root: &std::path::Path, target: &str) -> serde_json::Value {
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["lab", verb, "--json", "--repo-root"])
        .arg(root)
        .args(["--target-dir", target])
        .env("MINDRUNE_HOME", root.join(".home"))
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .current_dir(root)
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "lab {verb} printed no JSON ({err}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Every receipt sealed into the workspace's store at `root` (`.runx/receipts`), as one text:
/// where a harness report names no step's error, the case's receipt still carries it.
pub(crate) fn sealed_receipts(root: &std::path::Path) -> String {
    fn walk(dir: &std::path::Path, text: &mut String) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, text);
            } else if let Ok(contents) = std::fs::read_to_string(&path) {
                // Each string the receipt holds, unescaped, one a line.
                match serde_json::from_str::<serde_json::Value>(&contents) {
                    Ok(value) => strings(&value, text),
                    Err(_) => text.push_str(&contents),
                }
                text.push('\n');
            }
        }
    }
    fn strings(value: &serde_json::Value, text: &mut String) {
        match value {
            serde_json::Value::String(string) => {
                text.push_str(string);
                text.push('\n');
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| strings(item, text)),
            serde_json::Value::Object(map) => map.values().for_each(|item| strings(item, text)),
            _ => {}
        }
    }
    let mut text = String::new();
    walk(&root.join(".runx/receipts"), &mut text);
    text
}

/// A workspace holding the test package `skills/gstep` ("Note a topic."), its X.yaml the
/// shared head (skill, version, an internal catalog entry, `harness:` and `cases:`) followed by
/// `cases_and_runners`: the cases at their list's indentation, then `runners:`.
pub(crate) fn gstep_package(cases_and_runners: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("skills/gstep");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("SKILL.md"),
        "---\nname: gstep\ndescription: Note a topic.\n---\nNote the topic.\n",
    )
    .unwrap();
    std::fs::write(
        package.join("X.yaml"),
        format!(
            "skill: gstep\nversion: \"0.1.0\"\ncatalog:\n  kind: skill\n  audience: public\n  \
             visibility: internal\n  role: canonical\nharness:\n  cases:\n{cases_and_runners}"
        ),
    )
    .unwrap();
    dir
}
