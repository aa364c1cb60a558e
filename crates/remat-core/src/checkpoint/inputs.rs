//! The inputs of a checkpointed call, in the forms the Rust API takes them: a slice, an
//! array or a `Vec` of tensors, one tensor, or a tuple of tensor references
//! (`group.checkpoint_fn((&a, &b), |inputs| ...)`).

use crate::tensor::Tensor;

/// Something that names the tensors a checkpointed function takes (cloning the handles, not
/// the data).
pub trait SegmentInputs {
    /// The tensors, in order.
    fn into_tensors(self) -> Vec<Tensor>;
}

impl SegmentInputs for &[Tensor] {
    fn into_tensors(self) -> Vec<Tensor> {
        self.to_vec()
    }
}

impl<const N: usize> SegmentInputs for &[Tensor; N] {
    fn into_tensors(self) -> Vec<Tensor> {
        self.to_vec()
    }
}

impl SegmentInputs for Vec<Tensor> {
    fn into_tensors(self) -> Vec<Tensor> {
        self
    }
}

impl SegmentInputs for &Vec<Tensor> {
    fn into_tensors(self) -> Vec<Tensor> {
        self.clone()
    }
}

impl SegmentInputs for &Tensor {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.clone()]
    }
}

/// Tuples of tensor references, one impl per arity.
macro_rules! tuple_inputs {
    ($($name:ident),+) => {
        impl SegmentInputs for ($(tuple_inputs!(@ref $name),)+) {
            fn into_tensors(self) -> Vec<Tensor> {
                #[allow(non_snake_case)]
                let ($($name,)+) = self;
                vec![$($name.clone()),+]
            }
        }
    };
    (@ref $name:ident) => { &Tensor };
}

tuple_inputs!(A);
tuple_inputs!(A, B);
tuple_inputs!(A, B, C);
tuple_inputs!(A, B, C, D);
tuple_inputs!(A, B, C, D, E);
tuple_inputs!(A, B, C, D, E, F);
