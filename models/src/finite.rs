//! Which parameters of a module hold NaN or ±∞: weights read from a file are checked with it.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;

/// The paths (`encoder.layers.0.norm1.gamma`) of `module`'s float parameters that hold a NaN or
/// an infinity, in visiting order.
pub fn non_finite_parameters<M: Module>(module: &M) -> Vec<String> {
    let mut visitor = NonFinite::default();
    module.visit(&mut visitor);
    visitor.found
}

#[derive(Default)]
struct NonFinite {
    path: Vec<String>,
    found: Vec<String>,
}

impl ModuleVisitor for NonFinite {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        // NaN and ±∞ survive a sum of absolute values.
        if !param.val().abs().sum().into_scalar::<f32>().is_finite() {
            self.found.push(self.path.join("."));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use attnzoo_backends::{Backend, DeviceSpec};
    use burn::nn::LinearConfig;

    #[test]
    fn names_each_parameter_holding_nan_or_infinity() {
        let device = Backend::Ndarray.open(DeviceSpec::Cpu).unwrap();
        let mut linear = LinearConfig::new(2, 2).init(&device);
        assert!(non_finite_parameters(&linear).is_empty());
        linear.weight = Param::from_tensor(Tensor::from_data(
            [[0.0, f32::INFINITY], [0.0, 0.0]],
            &device,
        ));
        linear.bias = Some(Param::from_tensor(Tensor::from_data(
            [f32::NAN, 0.0],
            &device,
        )));
        assert_eq!(non_finite_parameters(&linear), ["weight", "bias"]);
    }
}
