//! `mindrune record`: event lines read with a cap, and recorded in chunks.

use super::*;

pub(crate) fn record(home: &Path, file: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let recorder = Recorder::new(&*store);
    let (label, mut reader): (String, Box<dyn std::io::BufRead>) = match file {
        None => ("<stdin>".into(), Box::new(std::io::stdin().lock())),
        Some(path) if path == Path::new("-") => {
            ("<stdin>".into(), Box::new(std::io::stdin().lock()))
        }
        Some(path) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
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
    let mut bytes = Vec::new();
    let mut line_no = 0usize;
    // Lines are recorded RECORD_CHUNK_LINES at a time in one write transaction (one commit for
    // the lot), and each line's answer is printed once its chunk committed.
    let mut chunk: Vec<(usize, String)> = Vec::new();
    loop {
        line_no += 1;
        let read = read_capped_line(&mut reader, &mut bytes, MAX_EVENT_LINE_BYTES)
            .with_context(|| format!("cannot read {label}"))?;
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
                    chunk.push((line_no, text.to_string()));
                    if chunk.len() >= RECORD_CHUNK_LINES {
                        record_chunk(&recorder, home, &mut chunk, &mut report)?;
                    }
                    continue;
                }
            },
        };
        // A refused line is answered in its place: what came before it is recorded and
        // printed first. A line too long is named at once, before the rest of it is skipped,
        // so a line that never ends (`record /dev/zero`) is named now, not never.
        record_chunk(&recorder, home, &mut chunk, &mut report)?;
        report.answer(line_no, Err(refused))?;
        if read == LineRead::TooLong {
            report.out.flush()?;
            skip_line(&mut reader).with_context(|| format!("cannot read {label}"))?;
        }
    }
    record_chunk(&recorder, home, &mut chunk, &mut report)?;
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

/// Event lines recorded in one write transaction by `mindrune record`.
const RECORD_CHUNK_LINES: usize = 500;

/// Where `mindrune record` says what each line did, and the running summary.
struct RecordReport<'a> {
    label: &'a str,
    json: bool,
    summary: render::RecordSummary,
    out: std::io::StdoutLock<'static>,
    err: std::io::StderrLock<'static>,
}

impl RecordReport<'_> {
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

/// Records the chunk's lines in one write transaction and prints each line's answer after the
/// commit; empties the chunk.
fn record_chunk(
    recorder: &Recorder<'_>,
    home: &Path,
    chunk: &mut Vec<(usize, String)>,
    report: &mut RecordReport<'_>,
) -> anyhow::Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    let lines: Vec<&str> = chunk.iter().map(|(_, text)| text.as_str()).collect();
    let label = report.label;
    let cannot_record = |line_no: usize| {
        format!(
            "{label}:{line_no}: cannot record into the library at {}",
            library::database(home)
        )
    };
    let results = recorder.record_lines_together(&lines);
    for ((line_no, _), result) in chunk.iter().zip(results) {
        report
            .answer(*line_no, result)
            .map_err(|err| err.context(cannot_record(*line_no)))?;
    }
    chunk.clear();
    Ok(())
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

/// Consumes the input up to and including the next `\n` (or to its end), keeping nothing.
fn skip_line(reader: &mut dyn std::io::BufRead) -> std::io::Result<()> {
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let all = available.len();
                reader.consume(all);
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
                    skip_line(&mut reader).unwrap();
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
