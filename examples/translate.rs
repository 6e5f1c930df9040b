//! German → English from Rust code: load a trained checkpoint, translate a few sentences
//! greedily and with a beam of 5.
//!
//!     attnzoo demo --minutes 5        # or: attnzoo train --out runs/demo/model …
//!     cargo run --example translate -- runs/demo/model

use attnzoo::translation::{DecodeConfig, Translator};
use attnzoo_backends::{Backend, DeviceSpec};

fn main() -> Result<(), attnzoo::Error> {
    let dir = std::env::args().nth(1).unwrap_or("runs/demo/model".into());
    let device = Backend::Ndarray.open(DeviceSpec::Cpu)?;
    let translator = Translator::load(&dir, &device)?;
    let german = ["Wo ist der Bahnhof?", "Ich bin müde. Ich habe keine Zeit."];
    let greedy = translator.translate_text(&german, &DecodeConfig::default())?;
    let beam = translator.translate_text(&german, &DecodeConfig::beam(5))?;
    for ((de, greedy), beam) in german.iter().zip(greedy).zip(beam) {
        println!("{de}\n  greedy: {greedy}\n  beam 5: {beam}");
    }
    Ok(())
}
