//! Logical and bitwise ops, one table (`Logic`: and, or, xor) read two ways:
//! - `logical_and/or/xor(a, b)` and `logical_not(x)`: any dtype in (nonzero, NaN included,
//!   is true), bool out, with broadcasting;
//! - `bitwise_and/or/xor(a, b)` and `bitwise_not(x)` (Python's `& | ^ ~`): integer and bool
//!   tensors only, with PyTorch's promotion (`bool & int64` is int64); bitwise on integers,
//!   logical on bools; a float operand is a `DTypeError` naming the op, as in PyTorch.
//!
//! Nothing here is recorded for autograd (the outputs are integers or bools). On CUDA the
//! operands are cast to the result dtype (bool for the logical form) and one `logic_*`
//! kernel applies the row (`cuda::arith_kernels`).

use super::{cast, check_same_device, from_vec};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;

macro_rules! logic_table {
    ($( $(#[doc = $doc:literal])* $V:ident $logical:ident $bitwise:ident $sym:literal
        |$a:ident, $b:ident| $e:expr; )*) => {
        /// A two-operand logical/bitwise op (one row of the table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Logic {
            $( $(#[doc = $doc])* $V, )*
        }

        impl Logic {
            /// Every row, in table order.
            pub const ALL: &[Logic] = &[$(Logic::$V),*];
            /// The logical op's name (`logical_and`).
            pub fn logical_name(self) -> &'static str {
                match self { $( Logic::$V => stringify!($logical), )* }
            }
            /// The bitwise op's name (`bitwise_and`).
            pub fn bitwise_name(self) -> &'static str {
                match self { $( Logic::$V => stringify!($bitwise), )* }
            }
            /// The Python operator (`&`).
            pub fn symbol(self) -> &'static str {
                match self { $( Logic::$V => $sym, )* }
            }
            /// The row over integers; on bools stored as 0/1 bytes it is the logical op.
            fn kernel_i64(self, a: &Tensor, b: &Tensor, shape: &[usize]) -> Vec<i64> {
                match self {
                    $( Logic::$V => cpu::zip::<i64, i64, _>(a.data(), b.data(), shape,
                        |$a: i64, $b: i64| $e), )*
                }
            }
            fn kernel_bool(self, a: &Tensor, b: &Tensor, shape: &[usize]) -> Vec<u8> {
                match self {
                    $( Logic::$V => cpu::zip::<u8, u8, _>(a.data(), b.data(), shape,
                        |$a: u8, $b: u8| $e), )*
                }
            }
        }

        $(
            $(#[doc = $doc])*
            /// Logical form: any dtype, nonzero is true; a bool tensor.
            pub fn $logical(a: &Tensor, b: &Tensor) -> Result<Tensor> {
                logic(Logic::$V, false, a, b)
            }
            $(#[doc = $doc])*
            /// Bitwise form: integer and bool tensors (logical on bools).
            pub fn $bitwise(a: &Tensor, b: &Tensor) -> Result<Tensor> {
                logic(Logic::$V, true, a, b)
            }
        )*

        impl Tensor {
            $(
                $(#[doc = $doc])*
                /// Logical form; see the function of the same name.
                pub fn $logical(&self, other: &Tensor) -> Result<Tensor> {
                    $logical(self, other)
                }
                $(#[doc = $doc])*
                /// Bitwise form; see the function of the same name.
                pub fn $bitwise(&self, other: &Tensor) -> Result<Tensor> {
                    $bitwise(self, other)
                }
            )*
        }
    };
}

logic_table! {
    /// And: true where both are true.
    And logical_and bitwise_and "&" |a, b| a & b;
    /// Or: true where either is true.
    Or logical_or bitwise_or "|" |a, b| a | b;
    /// Exclusive or: true where exactly one is true.
    Xor logical_xor bitwise_xor "^" |a, b| a ^ b;
}

/// Error unless `t` is an integer or bool tensor (the bitwise ops).
fn check_integral(op: &str, sym: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!(
                "expected integer or bool tensors, got a {} tensor of shape {} (the `{sym}` \
                 operator is bitwise; use logical ops or comparisons on floats)",
                t.dtype(),
                fmt_shape(t.shape())
            ),
        ));
    }
    Ok(())
}

struct LogicOp {
    f: Logic,
    bitwise: bool,
}

impl Op for LogicOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        if self.bitwise {
            self.f.bitwise_name()
        } else {
            self.f.logical_name()
        }
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (inputs[0], inputs[1]);
        let shape = broadcast_shapes(self.name(), a.shape(), b.shape())?;
        let dt = if self.bitwise {
            crate::ops::result_dtype(a, b)
        } else {
            DType::Bool
        };
        if dt == DType::Bool {
            let (a, b) = (cast(a, DType::Bool)?, cast(b, DType::Bool)?);
            return Ok(from_vec(self.f.kernel_bool(&a, &b, &shape), &shape));
        }
        // int32 operands sign-extend to int64 and truncate back: the same bits.
        let (a, b) = (cast(a, DType::I64)?, cast(b, DType::I64)?);
        cast(&from_vec(self.f.kernel_i64(&a, &b, &shape), &shape), dt)
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (inputs[0], inputs[1]);
        let shape = broadcast_shapes(self.name(), a.shape(), b.shape())?;
        let dt = if self.bitwise {
            crate::ops::result_dtype(a, b)
        } else {
            DType::Bool
        };
        let (a, b) = (cast(a, dt)?, cast(b, dt)?);
        let code = Logic::ALL.iter().position(|f| *f == self.f).unwrap_or(0) as i32;
        crate::cuda::launch::logic(self.name(), code, &a, &b, &shape)
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![None, None])
    }
}

/// Apply one row, logically (any dtype, bool out) or bitwise (integers and bools).
pub fn logic(f: Logic, bitwise: bool, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let op = LogicOp { f, bitwise };
    let name = op.name();
    check_same_device(name, &[a, b])?;
    broadcast_shapes(name, a.shape(), b.shape())?;
    if bitwise {
        check_integral(name, f.symbol(), a)?;
        check_integral(name, f.symbol(), b)?;
    }
    apply(op, &[a, b], &[])
}

struct NotOp {
    bitwise: bool,
}

impl Op for NotOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        if self.bitwise {
            "bitwise_not"
        } else {
            "logical_not"
        }
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        if !self.bitwise || x.dtype() == DType::Bool {
            let b = cast(x, DType::Bool)?;
            let v = cpu::gather::<u8>(b.data());
            return Ok(from_vec(
                cpu::collect_exact(v.into_iter().map(|e| (e == 0) as u8)),
                x.shape(),
            ));
        }
        let i = cast(x, DType::I64)?;
        let v = cpu::gather::<i64>(i.data());
        let out = from_vec(cpu::collect_exact(v.into_iter().map(|e| !e)), x.shape());
        cast(&out, x.dtype())
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let x = if self.bitwise {
            x.clone()
        } else {
            cast(x, DType::Bool)?
        };
        crate::cuda::launch::logic_not(self.name(), &x)
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![None])
    }
}

/// Where `x` is zero (any dtype in; a bool tensor).
pub fn logical_not(x: &Tensor) -> Result<Tensor> {
    apply(NotOp { bitwise: false }, &[x], &[])
}

/// `~x`: bitwise not of an integer tensor, logical not of a bool tensor (floats refused).
pub fn bitwise_not(x: &Tensor) -> Result<Tensor> {
    check_integral("bitwise_not", "~", x)?;
    apply(NotOp { bitwise: true }, &[x], &[])
}

impl Tensor {
    /// Where `self` is zero; see [`logical_not`].
    pub fn logical_not(&self) -> Result<Tensor> {
        logical_not(self)
    }
    /// `~self`; see [`bitwise_not`].
    pub fn bitwise_not(&self) -> Result<Tensor> {
        bitwise_not(self)
    }
}
