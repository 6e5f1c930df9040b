//! `attnzoo embed`: sentences on stdin, one JSON array of floats per line on stdout.

use std::io::{Read, Write};
use std::path::Path;

use attnzoo_backends::DeviceArgs;

use crate::sentence_embedding::SentenceEmbedder;
use crate::CliError;

/// Embeds every stdin line (an empty line is the empty sentence), in input order.
pub fn embed(model_dir: &Path, device: &DeviceArgs, batch_size: usize) -> Result<(), CliError> {
    let (_, device) = device.open()?;
    let embedder = SentenceEmbedder::load(model_dir, &device)?;
    let sentences = read_lines(std::io::stdin().lock())?;
    let embeddings = embedder.embed(&sentences, batch_size)?;
    let mut stdout = std::io::stdout().lock();
    for vector in embeddings {
        let line = serde_json::to_string(&vector).expect("f32 vectors serialise");
        writeln!(stdout, "{line}").map_err(|error| CliError::Input(format!("stdout: {error}")))?;
    }
    Ok(())
}

/// UTF-8 lines of `input` (a final newline ends the last line; `\r\n` is one newline).
pub fn read_lines(mut input: impl Read) -> Result<Vec<String>, CliError> {
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|error| CliError::Input(format!("cannot read stdin: {error}")))?;
    let text = String::from_utf8(bytes).map_err(|error| {
        let offset = error.utf8_error().valid_up_to();
        let line = 1 + error.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        CliError::Input(format!("stdin is not UTF-8 (line {line}, byte {offset})"))
    })?;
    let body = text.strip_suffix('\n').unwrap_or(&text);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    Ok(body
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line).to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_empty_sentences_and_reject_bad_utf8() {
        assert_eq!(read_lines(&b""[..]).unwrap(), Vec::<String>::new());
        assert_eq!(read_lines(&b"\n"[..]).unwrap(), vec![""]);
        assert_eq!(
            read_lines(&b"a\n\nb\r\nc"[..]).unwrap(),
            vec!["a", "", "b", "c"]
        );
        let error = read_lines(&b"ok\nbad \xff\n"[..]).unwrap_err().to_string();
        assert_eq!(error, "stdin is not UTF-8 (line 2, byte 7)");
    }
}
