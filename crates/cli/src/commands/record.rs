//! `mindrune record`: event lines read with a cap, each recorded and then answered.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use mindrune_engine::{IngestError, Recorder};

use super::EXIT_BAD_INPUT;
use crate::library;
use crate::progress::{Progress, Unit};
use crate::render::{self};

pub(crate) fn record(home: &Path, file: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let recorder = Recorder::new(&*store);
    // A file's size, for the progress bar (standard input has none).
    let mut size = None;
    let (label, mut reader): (String, Box<dyn std::io::BufRead>) = match file {
        None => ("<stdin>".into(), Box::new(std::io::stdin().lock())),
        Some(path) if path == Path::new("-") => {
            ("<stdin>".into(), Box::new(std::io::stdin().lock()))
        }
        Some(path) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            size = file
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            (
                path.display().to_string(),
                Box::new(std::io::BufReader::new(file)),
            )
        }
    };
    let mut report = RecordReport {
        label: &label,
        json,
        summary: render::RecordSummary::default(),
        out: std::io::stdout().lock(),
        err: std::io::stderr().lock(),
    };
    // A bar over the file's bytes, when a person watches (not with --json, whose lines are the
    // output).
    let progress = size
        .filter(|_| !json)
        .map(|size| Progress::bar(size, "recording", Unit::Bytes));
    let mut bytes = Vec::new();
    let mut line_no = 0usize;
    // Each line is committed before its answer is printed, and one at a time: a host that
    // sends again what was not acknowledged (after a kill) counts at most the one event in
    // flight twice when it has no id. Recording many lines in one transaction would leave every
    // committed but unprinted line of it to be counted twice.
    loop {
        line_no += 1;
        let read = read_capped_line(&mut reader, &mut bytes, MAX_EVENT_LINE_BYTES)
            .with_context(|| format!("cannot read {label}"))?;
        if let Some(progress) = &progress {
            progress.advance(bytes.len() as u64 + 1);
        }
        let refused = match read {
            LineRead::End => break,
            LineRead::TooLong => IngestError::Invalid {
                field: None,
                message: format!(
                    "the line is longer than {MAX_EVENT_LINE_BYTES} bytes (the server's limit for a request of events); split it or save long code as a script"
                ),
            },
            LineRead::Line => match std::str::from_utf8(&bytes) {
                Err(_) => IngestError::Invalid {
                    field: None,
                    message: "the line is not UTF-8 text".into(),
                },
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => {
                    let recorded = recorder.record_line(text);
                    // What an answer prints (a warning, an error) goes above the bar.
                    let quiet = matches!(&recorded, Ok(r) if r.warnings.is_empty());
                    let answered = match &progress {
                        Some(progress) if !quiet => {
                            progress.suspend(|| report.answer(line_no, recorded))
                        }
                        _ => report.answer(line_no, recorded),
                    };
                    answered.map_err(|err| {
                        err.context(format!(
                            "{label}:{line_no}: cannot record into the library at {}",
                            library::database(home)
                        ))
                    })?;
                    continue;
                }
            },
        };
        // A line too long is named at once, before the rest of it is skipped, so a line that
        // never ends (`record /dev/zero`) is named now, not never.
        match &progress {
            Some(progress) => progress.suspend(|| report.answer(line_no, Err(refused)))?,
            None => report.answer(line_no, Err(refused))?,
        }
        if read == LineRead::TooLong {
            report.out.flush()?;
            let ended = skip_line(&mut reader, MAX_SKIPPED_LINE_BYTES)
                .with_context(|| format!("cannot read {label}"))?;
            if !ended {
                // An input that never ends its line (`record /dev/zero`): stop reading it.
                report.endless(line_no)?;
                break;
            }
        }
    }
    drop(progress);
    let RecordReport {
        summary, mut out, ..
    } = report;
    if !json {
        render::record_summary(&mut out, &summary)?;
    }
    Ok(if summary.rejected > 0 {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    })
}

/// The most of one line too long that is read past, looking for its end, before `record`
/// takes the input for endless and stops: a 100 MB line is skipped and the lines after it are
/// recorded; `/dev/zero` stops after this much.
pub(crate) const MAX_SKIPPED_LINE_BYTES: u64 = 128 * 1024 * 1024;

/// Where `mindrune record` says what each line did, and the running summary.
struct RecordReport<'a> {
    label: &'a str,
    json: bool,
    summary: render::RecordSummary,
    out: std::io::StdoutLock<'static>,
    err: std::io::StderrLock<'static>,
}

impl RecordReport<'_> {
    /// Says that the line `line_no`, already refused as too long, did not end within
    /// [`MAX_SKIPPED_LINE_BYTES`], and that nothing after it is read.
    fn endless(&mut self, line_no: usize) -> anyhow::Result<()> {
        let message = format!(
            "the line does not end within {} MiB; the input is taken for endless and nothing after it is read (event lines end with a newline)",
            MAX_SKIPPED_LINE_BYTES / (1024 * 1024)
        );
        writeln!(self.err, "{}:{line_no}: error: {message}", self.label)?;
        if self.json {
            serde_json::to_writer(
                &mut self.out,
                &serde_json::json!({"line": line_no, "error": message, "stopped": true}),
            )?;
            writeln!(self.out)?;
        }
        Ok(())
    }

    /// Prints one line's answer; the library failing stops the whole run (not the line's fault:
    /// stop, so nothing is silently lost).
    fn answer(
        &mut self,
        line_no: usize,
        result: Result<mindrune_engine::Recorded, IngestError>,
    ) -> anyhow::Result<()> {
        let label = self.label;
        match result {
            Ok(recorded) => {
                for warning in &recorded.warnings {
                    writeln!(self.err, "{label}:{line_no}: warning: {warning}")?;
                }
                if self.json {
                    serde_json::to_writer(
                        &mut self.out,
                        &serde_json::json!({"line": line_no, "recorded": recorded}),
                    )?;
                    writeln!(self.out)?;
                }
                self.summary.add(&recorded);
            }
            Err(IngestError::Store(store_error)) => return Err(store_error.into()),
            Err(error) => {
                self.summary.lines += 1;
                self.summary.rejected += 1;
                writeln!(
                    self.err,
                    "{label}:{line_no}: error: {error}; nothing of this line was recorded"
                )?;
                if self.json {
                    serde_json::to_writer(
                        &mut self.out,
                        &serde_json::json!({"line": line_no, "error": error.to_string()}),
                    )?;
                    writeln!(self.out)?;
                }
            }
        }
        Ok(())
    }
}

/// The longest event line `record` reads: the server's limit for one request of events, so a
/// line refused here would be refused there too, and `record /dev/zero` cannot fill the memory.
pub(crate) const MAX_EVENT_LINE_BYTES: usize = mindrune_server::wire::MAX_EVENTS_BODY;

/// What [`read_capped_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum LineRead {
    /// A whole line is in the buffer, without its `\n`.
    Line,
    /// The line is longer than the cap: what was read of it is dropped, and the caller skips
    /// the rest with [`skip_line`] after saying so (at once, even if the line never ends).
    TooLong,
    /// The input has ended.
    End,
}

/// Reads one `\n`-terminated line into `line`, keeping at most `cap` bytes of it.
/// `BufRead::split` would hold the whole line, however long.
fn read_capped_line(
    reader: &mut dyn std::io::BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<LineRead> {
    line.clear();
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::End
            } else {
                LineRead::Line
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if line.len() + chunk.len() > cap {
            line.clear();
            return Ok(LineRead::TooLong);
        }
        line.extend_from_slice(chunk);
        let used = newline.map_or(available.len(), |end| end + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(LineRead::Line);
        }
    }
}

/// Consumes the input up to and including the next `\n` (or to its end), keeping nothing, and
/// reading at most `limit` bytes. Whether the line ended (a newline or the input's end) within
/// them.
fn skip_line(reader: &mut dyn std::io::BufRead, limit: u64) -> std::io::Result<bool> {
    let mut skipped = 0u64;
    loop {
        if skipped >= limit {
            return Ok(false);
        }
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(true);
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(true);
            }
            None => {
                let all = available.len();
                reader.consume(all);
                skipped += all as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], cap: usize) -> Vec<Result<Vec<u8>, ()>> {
        let mut reader = std::io::BufReader::with_capacity(7, input);
        let mut line = Vec::new();
        let mut found = Vec::new();
        loop {
            match read_capped_line(&mut reader, &mut line, cap).unwrap() {
                LineRead::End => return found,
                LineRead::Line => found.push(Ok(line.clone())),
                LineRead::TooLong => {
                    found.push(Err(()));
                    assert!(skip_line(&mut reader, u64::MAX).unwrap());
                }
            }
        }
    }

    #[test]
    fn a_line_over_the_cap_is_refused_and_the_next_line_is_read_whole() {
        let input = b"short\nthis one is far too long\nok\nlast";
        assert_eq!(
            lines(input, 10),
            vec![
                Ok(b"short".to_vec()),
                Err(()),
                Ok(b"ok".to_vec()),
                Ok(b"last".to_vec())
            ]
        );
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_kept() {
        assert_eq!(lines(b"0123456789\n", 10), vec![Ok(b"0123456789".to_vec())]);
        assert_eq!(lines(b"0123456789a\n", 10), vec![Err(())]);
    }

    #[test]
    fn a_never_ending_line_is_refused_after_reading_only_the_cap() {
        // `record /dev/zero`: the refusal comes after the cap, not at the line's end.
        let mut zeros = std::io::BufReader::new(std::io::repeat(0));
        let mut line = Vec::new();
        assert_eq!(
            read_capped_line(&mut zeros, &mut line, 1 << 16).unwrap(),
            LineRead::TooLong
        );
        assert!(line.capacity() <= 1 << 17, "{}", line.capacity());
        // Skipping it stops after the limit, saying the line did not end.
        assert!(!skip_line(&mut zeros, 1 << 20).unwrap());
    }

    #[test]
    fn a_line_that_ends_within_the_skip_limit_is_skipped_and_the_next_read() {
        let mut input = vec![b'x'; 5000];
        input.extend_from_slice(b"\nnext\n");
        let mut reader = std::io::BufReader::with_capacity(64, &input[..]);
        let mut line = Vec::new();
        assert_eq!(
            read_capped_line(&mut reader, &mut line, 100).unwrap(),
            LineRead::TooLong
        );
        assert!(skip_line(&mut reader, 6000).unwrap());
        assert_eq!(
            read_capped_line(&mut reader, &mut line, 100).unwrap(),
            LineRead::Line
        );
        assert_eq!(line, b"next");
    }

    proptest::proptest! {
        #[test]
        fn under_the_cap_the_lines_are_what_split_finds(
            input in proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', b'\n']), 0..200),
            cap in 1usize..40,
        ) {
            let expected: Vec<Result<Vec<u8>, ()>> = input
                .split(|&b| b == b'\n')
                .enumerate()
                // split gives an empty last piece after a final newline, which is no line.
                .filter(|(i, piece)| !(piece.is_empty() && *i == input.split(|&b| b == b'\n').count() - 1))
                .map(|(_, piece)| if piece.len() > cap { Err(()) } else { Ok(piece.to_vec()) })
                .collect();
            proptest::prop_assert_eq!(lines(&input, cap), expected);
        }
    }
}
