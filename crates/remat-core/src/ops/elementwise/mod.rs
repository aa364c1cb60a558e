//! Elementwise ops from one table. Each row of the table (`table.rs`) names an op, what it
//! saves for backward, its forward formula for the CPU (a Rust closure over one element) and
//! for CUDA (a C expression), and its backward formula written with differentiable tensor
//! ops, so `create_graph` works through every row. From the rows the macros below generate:
//! - the enums [`Unary`] / [`Binary`] (one variant per row; the variant's code is the `case`
//!   of the generated CUDA `switch`, so a row without a kernel cannot exist);
//! - the CPU kernels (one monomorphised loop per row, on the widest vectors the CPU has);
//! - the CUDA source of the `unary_op` / `binary_op` device functions ([`cuda_source`]);
//! - the backward of every row;
//! - for each unary row written `fn(name)` (the parameterless ops): the public function
//!   `name(&Tensor)` and method `Tensor::name`, and its entry in the exported
//!   [`for_each_unary_fn!`](crate::for_each_unary_fn), which the Python bindings expand.
//!
//! Device dispatch is not here: `Op::forward` chooses between each row's CPU loop and its
//! CUDA kernel.

use crate::autograd::node::{apply, BackwardCtx, Op, Save};
use crate::error::Result;
use crate::layout::{broadcast_shapes, Dims};
use crate::tensor::Tensor;

/// What an elementwise row keeps for its backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saves {
    /// Nothing (the gradient does not depend on the values).
    Nothing,
    /// The input (unary rows).
    Input,
    /// The output (unary rows).
    Output,
    /// Both inputs (binary rows).
    Both,
}

impl Saves {
    pub(crate) fn list(self) -> &'static [Save] {
        match self {
            Saves::Nothing => &[],
            Saves::Input => &[Save::Input(0)],
            Saves::Output => &[Save::Output],
            Saves::Both => &[Save::Input(0), Save::Input(1)],
        }
    }
}

/// Generates [`Unary`] from the unary rows of the table, the public function and `Tensor`
/// method of every row written `fn(name)`, and the exported
/// [`for_each_unary_fn!`](crate::for_each_unary_fn) that hands those rows (doc and name) to
/// other crates.
///
/// A macro that writes a `macro_rules!` needs a `$` the outer macro does not interpret: the
/// entry arm passes one in as `$d` (the usual `$` escape), and `@rows` writes `$d cb` where the
/// generated macro has its own `$cb`.
macro_rules! unary_table {
    (@rows ($d:tt) $(
        $(#[doc = $doc:literal])*
        $V:ident $($name:literal)? $(fn($f:ident))? save($save:ident)
            cpu(|$x:ident, $p:ident| $cpu:expr) $(fast($fast:path))?
            cuda($cuda:literal)
            grad(|$g:ident, $s:ident, $gp:ident| $grad:expr);
    )*) => {
        /// A unary elementwise row of the op table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Unary { $($(#[doc = $doc])* $V,)* }

        impl Unary {
            /// Every row, in table order.
            pub const ALL: &'static [Unary] = &[$(Unary::$V,)*];

            /// The op's public name.
            pub fn name(self) -> &'static str {
                match self { $(Unary::$V => unary_table!(@name $($name)? $(fn($f))?),)* }
            }
            /// What the row saves for backward.
            pub fn saves(self) -> $crate::ops::elementwise::Saves {
                match self { $(Unary::$V => $crate::ops::elementwise::Saves::$save,)* }
            }
            /// The `case` of the generated CUDA `unary_op` (0 is the plain copy).
            pub fn code(self) -> i32 {
                self as i32 + 1
            }
            /// The row's CUDA C expression in `x` (the element) and `p` (the scalar).
            pub fn cuda_expr(self) -> &'static str {
                match self { $(Unary::$V => $cuda,)* }
            }
            /// The CPU kernel: the row's formula over every element of `x` (or the row's
            /// `fast` slice kernel, for the dtypes it takes).
            pub(crate) fn cpu(self, x: &$crate::tensor::Tensor, p: f64) -> $crate::tensor::Tensor {
                match self {
                    $(Unary::$V => {
                        $(if let Some(y) = $fast(x) { return y; })?
                        crate::dispatch!(x.dtype(), T => {
                        #[allow(unused_variables)]
                        let $p = <T as crate::dtype::Scalar>::from_f64(p);
                        #[allow(unused_imports)]
                        use crate::dtype::{Element as _, Scalar as _};
                        $crate::ops::from_vec(
                            crate::cpu::map_wide(x.data(), move |$x: T| $cpu),
                            x.shape(),
                        )
                    })},)*
                }
            }
            /// The CPU kernel over half storage (`x` bfloat16 or float16): the row's formula
            /// in float32 registers, chunk by chunk, each result rounded once
            /// (`cpu::half_map`). None for rows with a `fast` slice kernel, whose values the
            /// whole-tensor widening keeps.
            #[allow(unreachable_code)]
            pub(crate) fn cpu_half(self, x: &$crate::tensor::Tensor, p: f64) -> Option<$crate::tensor::Tensor> {
                match self {
                    $(Unary::$V => {
                        $(let _ = $fast; return None;)?
                        type T = f32;
                        #[allow(unused_variables)]
                        let $p = <T as crate::dtype::Scalar>::from_f64(p);
                        #[allow(unused_imports)]
                        use crate::dtype::{Element as _, Scalar as _};
                        let kernel = move |$x: T| -> T { $cpu };
                        let data = x.data();
                        Some(match x.dtype() {
                            $crate::dtype::DType::BF16 => $crate::ops::from_vec(
                                crate::cpu::half_map::map_half::<half::bf16, _>(data, kernel),
                                x.shape(),
                            ),
                            $crate::dtype::DType::F16 => $crate::ops::from_vec(
                                crate::cpu::half_map::map_half::<half::f16, _>(data, kernel),
                                x.shape(),
                            ),
                            _ => return None,
                        })
                    },)*
                }
            }
            /// The gradient of the input from the output gradient `g` and the saved tensor
            /// `s` (the input or the output, per the row; `g` itself when nothing is saved).
            #[allow(unused_variables)]
            pub(crate) fn grad(self, g: &$crate::tensor::Tensor, s: &$crate::tensor::Tensor, p: f64) -> $crate::error::Result<$crate::tensor::Tensor> {
                match self {
                    $(Unary::$V => {
                        let ($g, $s, $gp) = (g, s, p);
                        $grad
                    })*
                }
            }
        }

        $(unary_table!(@fn [$(#[doc = $doc])*] $V $($f)?);)*

        /// The public functions of the rows written `fn(name)` (re-exported by `ops`).
        pub mod unary_fns {
            pub use super::{$($($f,)?)*};
        }

        /// Calls `$cb! { $(#[doc = "..."])* name; ... }` with the rows of remat-core's unary op
        /// table that are written `fn(name)`: the parameterless unary ops, each
        /// `remat_core::ops::name(&Tensor) -> Result<Tensor>` and `Tensor::name(&self)`, in
        /// table order with the row's doc. Generated from the table, so a binding that expands
        /// its ops from this list gets every new row without a line of its own.
        #[macro_export]
        macro_rules! for_each_unary_fn {
            ($d cb:ident) => {
                $d crate::__unary_fn_rows! { $d cb [] $([$(#[doc = $doc])*] [$($f)?])* }
            };
        }
    };
    // The op's name: the row's `"name"`, or its `fn(name)` spelled as a string.
    (@name $name:literal) => { $name };
    (@name fn($f:ident)) => { stringify!($f) };
    // A row written `fn(name)`: its public function and `Tensor` method.
    (@fn [$($doc:tt)*] $V:ident) => {};
    (@fn [$($doc:tt)*] $V:ident $f:ident) => {
        $($doc)*
        pub fn $f(x: &$crate::tensor::Tensor) -> $crate::error::Result<$crate::tensor::Tensor> {
            $crate::ops::elementwise::unary(Unary::$V, x, 0.0)
        }
        impl $crate::tensor::Tensor {
            $($doc)*
            pub fn $f(&self) -> $crate::error::Result<$crate::tensor::Tensor> {
                $f(self)
            }
        }
    };
    ($($rows:tt)*) => { unary_table!(@rows ($) $($rows)*); };
}

/// `for_each_unary_fn!`'s filter: drops the rows without `fn(name)` and calls the callback with
/// the rest (`[docs] [name]` in, `docs name;` out). Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __unary_fn_rows {
    ($cb:ident [$($out:tt)*]) => { $cb! { $($out)* } };
    ($cb:ident [$($out:tt)*] [$($doc:tt)*] [] $($rest:tt)*) => {
        $crate::__unary_fn_rows! { $cb [$($out)*] $($rest)* }
    };
    ($cb:ident [$($out:tt)*] [$($doc:tt)*] [$f:ident] $($rest:tt)*) => {
        $crate::__unary_fn_rows! { $cb [$($out)* $($doc)* $f;] $($rest)* }
    };
}

/// Generates [`Binary`] from the binary rows of the table. `da`/`db` are the gradients of
/// each operand before broadcasting is undone; a row without `db` passes no gradient to
/// its second operand (a mask), one without either is not differentiable.
macro_rules! binary_table {
    ($(
        $(#[$doc:meta])*
        $V:ident $name:literal save($save:ident)
            cpu(|$a:ident, $b:ident, $p:ident| $cpu:expr) $(fast($fast:path))?
            cuda($cuda:literal)
            $(da(|$ga:ident, $aa:ident, $ab:ident, $ap:ident| $da:expr))?
            $(db(|$gb:ident, $ba:ident, $bb:ident, $bp:ident| $db:expr))?;
    )*) => {
        /// A binary elementwise row of the op table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Binary { $($(#[$doc])* $V,)* }

        impl Binary {
            /// Every row, in table order.
            pub const ALL: &'static [Binary] = &[$(Binary::$V,)*];

            /// The op's public name.
            pub fn name(self) -> &'static str {
                match self { $(Binary::$V => $name,)* }
            }
            /// What the row saves for backward.
            pub fn saves(self) -> $crate::ops::elementwise::Saves {
                match self { $(Binary::$V => $crate::ops::elementwise::Saves::$save,)* }
            }
            /// The `case` of the generated CUDA `binary_op`.
            pub fn code(self) -> i32 {
                self as i32
            }
            /// The row's CUDA C expression in `a`, `b` and `p` (the scalar).
            pub fn cuda_expr(self) -> &'static str {
                match self { $(Binary::$V => $cuda,)* }
            }
            /// The CPU kernel over `a` and `b` (one dtype) broadcast to `shape`.
            pub(crate) fn cpu(
                self,
                a: &$crate::tensor::Tensor,
                b: &$crate::tensor::Tensor,
                shape: &[usize],
                p: f64,
            ) -> $crate::tensor::Tensor {
                match self {
                    $(Binary::$V => {
                        $(if let Some(y) = $fast(a, b, shape) { return y; })?
                        crate::dispatch!(a.dtype(), T => {
                        #[allow(unused_variables)]
                        let $p = <T as crate::dtype::Scalar>::from_f64(p);
                        #[allow(unused_imports)]
                        use crate::dtype::{Element as _, Scalar as _};
                        $crate::ops::from_vec(
                            crate::cpu::zip_wide(
                                a.data(),
                                b.data(),
                                shape,
                                move |$a: T, $b: T| $cpu,
                            ),
                            shape,
                        )
                    })},)*
                }
            }
            /// The CPU kernel over two half operands of one dtype and one shape (no
            /// broadcast): the row's formula in float32 registers, chunk by chunk, each result
            /// rounded once (`cpu::half_map::zip_half`). None for other operands and for rows
            /// with a `fast` kernel, which the whole-tensor widening serves.
            #[allow(unreachable_code)]
            pub(crate) fn cpu_half(
                self,
                a: &$crate::tensor::Tensor,
                b: &$crate::tensor::Tensor,
                p: f64,
            ) -> Option<$crate::tensor::Tensor> {
                if a.dtype() != b.dtype() || a.shape() != b.shape() {
                    return None;
                }
                match self {
                    $(Binary::$V => {
                        $(let _ = $fast; return None;)?
                        type T = f32;
                        #[allow(unused_variables)]
                        let $p = <T as crate::dtype::Scalar>::from_f64(p);
                        #[allow(unused_imports)]
                        use crate::dtype::{Element as _, Scalar as _};
                        let kernel = move |$a: T, $b: T| -> T { $cpu };
                        let (da, db) = (a.data(), b.data());
                        Some(match a.dtype() {
                            $crate::dtype::DType::BF16 => $crate::ops::from_vec(
                                crate::cpu::half_map::zip_half::<half::bf16, _>(da, db, kernel),
                                a.shape(),
                            ),
                            $crate::dtype::DType::F16 => $crate::ops::from_vec(
                                crate::cpu::half_map::zip_half::<half::f16, _>(da, db, kernel),
                                a.shape(),
                            ),
                            _ => return None,
                        })
                    },)*
                }
            }
            /// Gradient of operand `i` (0: `a`, 1: `b`) before broadcasting is undone, or
            /// None where the row passes it none.
            #[allow(unused_variables)]
            pub(crate) fn grad(
                self,
                i: usize,
                g: &$crate::tensor::Tensor,
                a: &$crate::tensor::Tensor,
                b: &$crate::tensor::Tensor,
                p: f64,
            ) -> Option<$crate::error::Result<$crate::tensor::Tensor>> {
                match (self, i) {
                    $(
                        (Binary::$V, 0) => binary_table!(@grad g a b p $(|$ga, $aa, $ab, $ap| $da)?),
                        (Binary::$V, _) => binary_table!(@grad g a b p $(|$gb, $ba, $bb, $bp| $db)?),
                    )*
                }
            }
        }
    };
    (@grad $g0:ident $a0:ident $b0:ident $p0:ident) => { None };
    (@grad $g0:ident $a0:ident $b0:ident $p0:ident |$g:ident, $a:ident, $b:ident, $p:ident| $e:expr) => {{
        let ($g, $a, $b, $p) = ($g0, $a0, $b0, $p0);
        Some($crate::ops::elementwise::grad_expr(|| $e))
    }};
}

mod clamp_bounds;
mod int_rules;
mod param_fns;
pub mod scalar;
mod table;

/// Evaluates a binary row's gradient expression inside a closure, so that its `?` stops there.
pub(crate) fn grad_expr(f: impl FnOnce() -> Result<Tensor>) -> Result<Tensor> {
    f()
}

pub use param_fns::*;
pub use table::*;

/// One unary row applied to a tensor (`p`: the row's scalar parameter, if it has one).
pub(crate) struct UnaryOp {
    f: Unary,
    p: f64,
}

impl Op for UnaryOp {
    fn name(&self) -> &'static str {
        self.f.name()
    }
    /// Half CPU inputs run the row's float32 formula chunk by chunk over the half storage
    /// (the same values as the default's whole-tensor widening, without its float32 copies).
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        if x.dtype().is_half() && x.device() == crate::device::Device::Cpu {
            if let Some(y) = self.f.cpu_half(x, self.p) {
                return Ok(y);
            }
        }
        crate::ops::half_compute::forward(self, inputs)
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        Ok(self.f.cpu(inputs[0], self.p))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        crate::cuda::launch::unary(self.f.name(), self.f.code(), inputs[0], self.p)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        if !ctx.needs_grad(0) {
            return Ok(vec![None]);
        }
        let s = ctx.saved.first().unwrap_or(ctx.grad);
        let g = super::to_dtype(ctx.grad, s.dtype())?;
        Ok(vec![Some(self.f.grad(&g, s, self.p)?)])
    }
}

impl UnaryOp {
    /// The row `f` with parameter `p`, as an op to record (the in-place activations record
    /// it over the values they wrote).
    pub(crate) fn new(f: Unary, p: f64) -> UnaryOp {
        UnaryOp { f, p }
    }
}

/// The row's kernel on `x`'s device, without recording.
pub fn unary_forward(f: Unary, x: &Tensor, p: f64) -> Result<Tensor> {
    UnaryOp { f, p }.forward(&[x])
}

/// Apply a unary row, recording it for backward (integer and bool inputs: see
/// `int_rules`).
pub fn unary(f: Unary, x: &Tensor, p: f64) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return int_rules::unary_int(f, x, p);
    }
    apply(UnaryOp { f, p }, &[x], f.saves().list())
}

/// One binary row applied to two broadcast tensors.
pub(crate) struct BinaryOp {
    f: Binary,
    p: f64,
}

impl Op for BinaryOp {
    fn name(&self) -> &'static str {
        self.f.name()
    }
    /// Two half CPU operands of one shape run the row's float32 formula chunk by chunk over
    /// the half storage (the default's values, without its float32 copies).
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b) = (inputs[0], inputs[1]);
        let cpu = crate::device::Device::Cpu;
        if a.dtype().is_half() && a.device() == cpu && b.device() == cpu {
            if let Some(y) = self.f.cpu_half(a, b, self.p) {
                return Ok(y);
            }
        }
        crate::ops::half_compute::forward(self, inputs)
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b, shape) = promote(self.f, inputs[0], inputs[1])?;
        Ok(self.f.cpu(&a, &b, &shape, self.p))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (a, b, shape) = promote(self.f, inputs[0], inputs[1])?;
        crate::cuda::launch::binary(self.f.name(), self.f.code(), &a, &b, &shape, self.p)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let dt = ctx.grad.dtype();
        let (a, b) = match ctx.saved {
            [a, b] => (super::to_dtype(a, dt)?, super::to_dtype(b, dt)?),
            _ => (ctx.grad.clone(), ctx.grad.clone()),
        };
        (0..2)
            .map(|i| {
                if !ctx.needs_grad(i) {
                    return Ok(None);
                }
                let gi = self.f.grad(i, ctx.grad, &a, &b, self.p);
                gi.map(|r| super::sum_to(&r?, &ctx.inputs[i].shape))
                    .transpose()
            })
            .collect()
    }
}

/// The operands of a binary row checked (one device, broadcastable) and promoted to one
/// dtype, with the broadcast shape.
fn promote(f: Binary, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, Dims)> {
    let op = f.name();
    super::check_same_device(op, &[a, b])?;
    let shape = broadcast_shapes(op, a.shape(), b.shape())?;
    let dt = crate::ops::result_dtype(a, b);
    Ok((super::cast(a, dt)?, super::cast(b, dt)?, shape))
}

/// The row's kernel on the operands' device (broadcast, promoted), without recording.
pub fn binary_forward(f: Binary, a: &Tensor, b: &Tensor, p: f64) -> Result<Tensor> {
    BinaryOp { f, p }.forward(&[a, b])
}

/// Apply a binary row, recording it for backward (integer and bool operands: see
/// `int_rules`).
pub fn binary(f: Binary, a: &Tensor, b: &Tensor, p: f64) -> Result<Tensor> {
    if !a.dtype().is_float() || !b.dtype().is_float() {
        return int_rules::binary_int(f, a, b, p);
    }
    apply(BinaryOp { f, p }, &[a, b], f.saves().list())
}

/// The CUDA C of the `unary_op` and `binary_op` device functions, one `case` per row (the
/// elementwise kernels call them; see `cuda::kernels`).
pub fn cuda_source() -> String {
    let mut s = String::from(
        "template <typename T> __device__ __forceinline__ T unary_op(int op, T x, T p) {\n    \
         switch (op) {\n        case 0: return x;  // copy\n",
    );
    for f in Unary::ALL {
        s += &format!(
            "        case {}: return {};  // {}\n",
            f.code(),
            f.cuda_expr(),
            f.name()
        );
    }
    s += "    }\n    __trap();\n    return x;\n}\n\n";
    s += "template <typename T> __device__ __forceinline__ T binary_op(int op, T a, T b, T p) {\n    \
          switch (op) {\n";
    for f in Binary::ALL {
        s += &format!(
            "        case {}: return {};  // {}\n",
            f.code(),
            f.cuda_expr(),
            f.name()
        );
    }
    s += "    }\n    __trap();\n    return a;\n}\n";
    s
}
