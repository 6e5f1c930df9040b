//! A GGUF file as a user may download it: any bytes, written to a file and opened as
//! `attnzoo generate --model FILE` opens it (`LanguageModel::load_with`, the weights kept in
//! their blocks or dequantized, as the first byte says), then a few tokens generated when it
//! loads. Wrong magic or version, cut headers, counts and lengths past the end, offsets outside
//! the data, unknown types, missing or misshapen tensors: Ok or an error of one line, never a
//! panic or an allocation sized by an unchecked count.
#![no_main]

use std::io::Write;

use attnzoo::language_model::LanguageModel;
use attnzoo_fuzz::device;
use attnzoo_models::lm::{GenerationConfig, GgufWeights};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    let weights = if mode & 1 == 0 {
        GgufWeights::Quantized
    } else {
        GgufWeights::Dequantized
    };
    let one_line = |message: String| assert!(!message.contains('\n'), "not one line: {message}");
    match LanguageModel::load_with(file.path(), weights, device()) {
        Err(error) => one_line(error.to_string()),
        Ok(lm) => {
            let prompt = [0u32, 1, 2];
            let on_token = |_: u32, _: &str| Ok::<(), attnzoo::Error>(());
            if let Err(error) = lm.generate(&prompt, &GenerationConfig::greedy(2), on_token) {
                one_line(error.to_string());
            }
        }
    }
});
