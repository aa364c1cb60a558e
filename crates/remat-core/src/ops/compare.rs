//! Comparisons (`eq ne lt le gt ge`) and float classification (`isnan isinf isfinite`):
//! elementwise predicates returning **bool** tensors, never recorded for autograd.
//!
//! Each family is one table: a comparison is a row of `compare_table!` (its enum variant,
//! public function, Tensor method and predicate), a classification a row of
//! `classify_table!`. Comparisons broadcast and promote like arithmetic (`int64 < 2.5`
//! compares in float32, `int32 == int64` in int64, as in PyTorch); NaN compares unequal to
//! everything, itself included. Comparisons run on CUDA too (`compare_*` kernels, every
//! dtype); so do the classifications (`classify_*` kernels for floats; integers and bools
//! are constant).

use super::{cast, check_same_device, from_vec};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::dtype::{DType, Scalar};
use crate::error::Result;
use crate::layout::broadcast_shapes;
use crate::tensor::Tensor;

macro_rules! compare_table {
    ($( $(#[doc = $doc:literal])* $V:ident $f:ident |$a:ident, $b:ident| $e:expr; )*) => {
        /// An elementwise comparison (one row of the comparison table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Compare {
            $( $(#[doc = $doc])* $V, )*
        }

        impl Compare {
            /// Every comparison, in table order.
            pub const ALL: &[Compare] = &[$(Compare::$V),*];
            /// The op's public name.
            pub fn name(self) -> &'static str {
                match self { $( Compare::$V => stringify!($f), )* }
            }
            /// The comparison over `T` (monomorphised per row).
            fn kernel<T: Scalar>(self, a: &Tensor, b: &Tensor, shape: &[usize]) -> Vec<u8> {
                match self {
                    $( Compare::$V => cpu::zip::<T, u8, _>(a.data(), b.data(), shape,
                        |$a: T, $b: T| ($e) as u8), )*
                }
            }
        }

        $(
            $(#[doc = $doc])*
            pub fn $f(a: &Tensor, b: &Tensor) -> Result<Tensor> {
                compare(Compare::$V, a, b)
            }
        )*

        impl Tensor {
            $(
                $(#[doc = $doc])*
                #[allow(clippy::should_implement_trait)]
                pub fn $f(&self, other: &Tensor) -> Result<Tensor> {
                    compare(Compare::$V, self, other)
                }
            )*
        }
    };
}

compare_table! {
    /// `a == b` elementwise (bool; NaN is unequal to everything).
    Eq eq |a, b| a == b;
    /// `a != b` elementwise (bool; NaN is unequal to everything, itself included).
    Ne ne |a, b| a != b;
    /// `a < b` elementwise (bool; false where either is NaN).
    Lt lt |a, b| a < b;
    /// `a <= b` elementwise (bool; false where either is NaN).
    Le le |a, b| a <= b;
    /// `a > b` elementwise (bool; false where either is NaN).
    Gt gt |a, b| a > b;
    /// `a >= b` elementwise (bool; false where either is NaN).
    Ge ge |a, b| a >= b;
}

struct CompareOp(Compare);

impl Op for CompareOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (inputs[0], inputs[1]);
        let shape = broadcast_shapes(self.0.name(), a.shape(), b.shape())?;
        let dt = crate::ops::result_dtype(a, b);
        let (a, b) = (cast(a, dt)?, cast(b, dt)?);
        let v = crate::dispatch_any!(dt, T => self.0.kernel::<T>(&a, &b, &shape));
        Ok(from_vec(v, &shape))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (inputs[0], inputs[1]);
        let shape = broadcast_shapes(self.0.name(), a.shape(), b.shape())?;
        let dt = crate::ops::result_dtype(a, b);
        let (a, b) = (cast(a, dt)?, cast(b, dt)?);
        // The kernel's row number is the table position.
        let code = Compare::ALL.iter().position(|c| *c == self.0).unwrap_or(0) as i32;
        crate::cuda::launch::compare(self.0.name(), code, &a, &b, &shape)
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // A bool output is never recorded, so this never runs.
        Ok(vec![None, None])
    }
}

/// Apply one comparison row: broadcast, promote, compare; a bool tensor.
pub fn compare(f: Compare, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_same_device(f.name(), &[a, b])?;
    broadcast_shapes(f.name(), a.shape(), b.shape())?;
    apply(CompareOp(f), &[a, b], &[])
}

macro_rules! classify_table {
    ($( $(#[doc = $doc:literal])* $V:ident $f:ident |$x:ident| $e:expr; )*) => {
        /// A float classification (one row of the classification table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Classify {
            $( $(#[doc = $doc])* $V, )*
        }

        impl Classify {
            /// Every classification, in table order.
            pub const ALL: &[Classify] = &[$(Classify::$V),*];
            /// The op's public name.
            pub fn name(self) -> &'static str {
                match self { $( Classify::$V => stringify!($f), )* }
            }
            /// The predicate over `T`'s elements (integers are finite: `to_f64` of an
            /// integer is never NaN or infinite).
            fn kernel<T: Scalar>(self, x: &Tensor) -> Vec<u8> {
                let v;
                let s = match cpu::contiguous_slice::<T>(x.data()) {
                    Some(s) => s,
                    None => {
                        v = cpu::gather::<T>(x.data());
                        &v[..]
                    }
                };
                match self {
                    $( Classify::$V => cpu::collect_exact(s.iter().map(|&e| {
                        let $x = e.to_f64();
                        ($e) as u8
                    })), )*
                }
            }
        }

        $(
            $(#[doc = $doc])*
            pub fn $f(x: &Tensor) -> Result<Tensor> {
                classify(Classify::$V, x)
            }
        )*

        impl Tensor {
            $(
                $(#[doc = $doc])*
                pub fn $f(&self) -> Result<Tensor> {
                    classify(Classify::$V, self)
                }
            )*
        }
    };
}

classify_table! {
    /// Where `x` is NaN (bool; all false for integer and bool tensors).
    IsNan isnan |x| x.is_nan();
    /// Where `x` is +inf or -inf (bool; all false for integer and bool tensors).
    IsInf isinf |x| x.is_infinite();
    /// Where `x` is neither NaN nor infinite (bool; all true for integer and bool tensors).
    IsFinite isfinite |x| x.is_finite();
}

struct ClassifyOp(Classify);

impl Op for ClassifyOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let v = crate::dispatch_any!(x.dtype(), T => self.0.kernel::<T>(x));
        Ok(from_vec(v, x.shape()))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        if !x.dtype().is_float() {
            // Integers and bools are never NaN or infinite.
            let finite = self.0 == Classify::IsFinite;
            return super::full(
                x.shape(),
                f64::from(u8::from(finite)),
                DType::Bool,
                x.device(),
            );
        }
        let code = Classify::ALL.iter().position(|c| *c == self.0).unwrap_or(0) as i32;
        crate::cuda::launch::classify(self.0.name(), code, x)
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![None])
    }
}

/// Apply one classification row: a bool tensor of `x`'s shape.
pub fn classify(f: Classify, x: &Tensor) -> Result<Tensor> {
    apply(ClassifyOp(f), &[x], &[])
}
