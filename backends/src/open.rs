//! Opening a device: a tiny computation run on it, and the panic by which Burn reports a device
//! that cannot open turned into a one-line reason. `Backend::open` calls it, and the probes of
//! `attnzoo backends` call `Backend::open`: the modules depend as probe → backend → open.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use burn::tensor::{Device, Tensor};

/// Runs a tiny computation on `device`. Burn reports a device that cannot open (no wgpu
/// adapter, no CUDA driver) by panicking; that panic is caught here and becomes the reason.
pub(crate) fn try_open(device: &Device) -> Result<(), String> {
    static QUIET_PANICS: Mutex<()> = Mutex::new(());
    let _one_probe_at_a_time = QUIET_PANICS.lock().unwrap_or_else(|p| p.into_inner());
    let previous_hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        Tensor::<1>::from_floats([1.0, 2.0], device)
            .sum()
            .into_scalar::<f32>()
    }));
    panic::set_hook(previous_hook);
    match outcome {
        Ok(3.0) => Ok(()),
        Ok(sum) => Err(format!("a test sum gave {sum} instead of 3")),
        Err(payload) => Err(panic_message(payload.as_ref())),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the backend panicked while opening the device".to_string());
    // The first line of the cause: a LibTorch error arrives as the `Debug` of `Torch("why\n
    // Exception raised from … frame #0 …")` inside an `unwrap` message, its newlines escaped.
    let first = text.lines().next().unwrap_or_default();
    let first = first.split("\\n").next().unwrap_or_default();
    let first = first
        .trim_start_matches("called `Result::unwrap()` on an `Err` value: ")
        .trim_start_matches("Torch(\"")
        .trim_end_matches("\")");
    first.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn a_panic_becomes_the_first_line_of_its_cause() {
        let torch = "called `Result::unwrap()` on an `Err` value: Torch(\"PyTorch is not linked \
                     with support for mps devices\\nException raised from getDeviceGuardImpl\\n\
                     frame #0: c10::Error::Error\")";
        assert_eq!(
            panic_message(&torch.to_string()),
            "PyTorch is not linked with support for mps devices"
        );
        assert_eq!(panic_message(&"no adapter\nmore"), "no adapter");
        assert_eq!(
            panic_message(&5_u8),
            "the backend panicked while opening the device"
        );
    }
}
