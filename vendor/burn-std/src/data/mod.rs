mod compare;
mod tensor;

pub use compare::*;
pub use tensor::*;
