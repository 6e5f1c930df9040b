//! The command line: one file per subcommand, each with its `Args` and `run`, calling the
//! library. Errors are `anyhow` with context; [`exit_status`] turns one into a status.

pub mod attend;
pub mod backends;
pub mod bleu;
pub mod data;
pub mod demo;
pub mod embed;
pub mod eval;
pub mod generate;
pub mod output;
pub mod parse;
pub mod perplexity;
#[cfg(feature = "serve")]
pub mod serve;
pub mod train;
pub mod translate;

use std::process::ExitCode;

use attnzoo_backends::{Backend, DeviceArgs, DeviceSpec};
use attnzoo_models::lm::GgufWeights;

use output::{BrokenPipe, StdoutFailed};

/// What a command's error means for its exit status: a reader that went away is a quiet 0, a
/// failing machine (a full disk, an unwritable stdout) 1, anything the user can fix 2.
pub fn exit_status(error: &anyhow::Error) -> Option<ExitCode> {
    if error.downcast_ref::<BrokenPipe>().is_some() {
        return None;
    }
    let environment = error.chain().any(|cause| {
        cause.is::<StdoutFailed>()
            || cause
                .downcast_ref::<attnzoo::Error>()
                .is_some_and(attnzoo::Error::is_environment)
            || cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(attnzoo::is_environment)
    });
    Some(ExitCode::from(if environment { 1 } else { 2 }))
}

/// How a GGUF model's weights are held: dequantized when `--dequantize` asks or the device is a
/// GPU (where multiplying from the blocks is a slow host fallback), else kept in their blocks.
pub fn gguf_weights(dequantize: bool, backend: Backend, device: &DeviceArgs) -> GgufWeights {
    let cpu = match backend {
        Backend::Ndarray | Backend::Flex => true,
        Backend::Tch => matches!(
            device.device.parse::<DeviceSpec>(),
            Ok(DeviceSpec::Default | DeviceSpec::Cpu)
        ),
        _ => device.device.parse::<DeviceSpec>() == Ok(DeviceSpec::Cpu),
    };
    if dequantize || !cpu {
        GgufWeights::Dequantized
    } else {
        GgufWeights::Quantized
    }
}
