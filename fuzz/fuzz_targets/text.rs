//! Text in, as `attnzoo translate` reads it: any bytes through the CLI's line reader (invalid
//! UTF-8 is a one-line error), then each line through the sentence splitter, the tokenizer and
//! the source vocabulary, and `Translator::translate_text` (greedy, or beam 5) on the tiny
//! Transformer. Each must answer Ok or a one-line error, never panic; a split sentence is a
//! non-empty piece of its text.
#![no_main]

use attnzoo::files::read_lines;
use attnzoo::translation::vocab::tokenize;
use attnzoo::translation::{sentences, DecodeConfig, Search};
use attnzoo_fuzz::tiny_translator;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let lines = match read_lines(bytes, "stdin") {
        Ok(lines) => lines,
        Err(error) => {
            let message = error.to_string();
            assert!(!message.contains('\n'), "not one line: {message}");
            return;
        }
    };
    let translator = tiny_translator();
    for line in &lines {
        for sentence in sentences::split(line) {
            assert!(
                !sentence.trim().is_empty(),
                "an empty sentence from {line:?}"
            );
            assert!(
                line.contains(sentence),
                "{sentence:?} is not part of {line:?}"
            );
            let tokens = tokenize(sentence);
            let _ = translator.checkpoint().vocab.source(sentence, 50);
            assert!(tokens.iter().all(|token| !token.is_empty()));
        }
    }
    let config = DecodeConfig {
        search: match mode % 2 {
            0 => Search::Greedy,
            _ => Search::Beam {
                size: 5,
                alpha: 0.6,
                n_best: 1,
            },
        },
        ..DecodeConfig::default()
    };
    match translator.translate_text(&lines, &config) {
        Ok(translations) => assert_eq!(translations.len(), lines.len()),
        Err(error) => {
            let message = error.to_string();
            assert!(!message.contains('\n'), "not one line: {message}");
        }
    }
});
