//! The elementwise op table: every elementwise op is one row here, and **adding a
//! parameterless unary op is one row here plus one row in each test registry** (below). A
//! unary row is
//! `Variant "name" save(Nothing|Input|Output) cpu(|x, p| ...) cuda("...") grad(|g, s, p| ...)`,
//! a binary row `Variant "name" save(Nothing|Both) cpu(|a, b, p| ...) cuda("...")
//! da(|g, a, b, p| ...) db(...)`: the CPU formula over one element (`T: Element`, `p` the row's
//! scalar parameter), the same formula as a CUDA C expression (`x`/`a`/`b`, `p`, element type
//! `T`; helpers from [`super::scalar::cuda_prelude`]), and the backward written with
//! differentiable ops, so every row supports `create_graph`. Rows whose derivative needs a
//! fused kernel get a `*_backward` binary row of their own (as PyTorch's `*_backward`
//! functions), itself differentiable.
//!
//! # Adding a parameterless unary op (`tan`, say)
//! 1. Here, in `unary_table!`: a doc comment (it becomes the Rust docs *and* the Python
//!    docstring) and the row, written `fn(tan)` in place of `"name"`:
//!    ```text
//!    /// Tangent elementwise.
//!    Tan fn(tan) save(Input) cpu(|x, p| x.tan()) cuda("tan(x)")
//!        grad(|g, x, p| div(g, &mul(&cos(x)?, &cos(x)?)?));
//!    ```
//!    `fn(tan)` makes the row's name `"tan"` and generates `ops::tan(&Tensor)` (re-exported
//!    through `ops::unary_fns`) and `Tensor::tan(&self)`. It also puts the row in the exported
//!    [`for_each_unary_fn!`](crate::for_each_unary_fn), from which remat-py generates
//!    `remat.tan(x)`, `Tensor.tan()` and `_remat._unary_ops`: nothing to write there.
//! 2. One row in each test registry: `unary("tan", remat.tan, ("tan",), np.tan, <domain>)` in
//!    `tests/op_registry.py` and `row("tan", ...)` in `crates/remat-core/tests/op_registry.rs`
//!    (forward, gradient, second-order, CUDA and checkpoint tests are generated from them).
//! 3. Build the extension (`maturin develop`) and run `python tools/gen_bindings.py`: it
//!    rewrites the generated regions of `python/remat/_remat.pyi` (stub lines, `__all__`) and
//!    `python/remat/__init__.py` (re-export, `__all__`). `tests/bindings/test_surface.py` fails until
//!    they are current.
//!
//! A row that takes a parameter (`pow_scalar`, `scale`, `add_scalar`) or shares a name
//! (`gelu`'s two rows) keeps the `"name"` form and a hand-written wrapper at the end of this
//! file, or in `param_fns.rs` for the ops that combine rows (`clamp`, `softplus`,
//! `leaky_relu`, `lerp`); its Python binding is a row of `tensor_ops!` in remat-py (or a
//! function there). A public binary op is a `binary_fns!` line below plus a `binary` row of
//! `tensor_ops!`.
//!
//! Why a generated macro and not the rows themselves in an exported callback macro: remat-py
//! needs only each parameterless row's name and doc, while the rows' closures name this
//! crate's private helpers; `for_each_unary_fn!` exports exactly the needed facts, and the
//! table stays ordinary macro input here (see `unary_table!` in the parent module for the
//! `$`-escape that writes it).

use super::scalar::{
    gelu_erf, gelu_erf_f32, gelu_erf_grad, gelu_erf_grad_f32, gelu_tanh, gelu_tanh_grad, pow_fast,
    pow_fast_grad, round_half_even, sign_of, silu_grad, FRAC_1_SQRT_2PI, FRAC_2_SQRT_PI, GELU_C,
    GELU_K,
};
use super::{binary, unary};
use crate::error::Result;
use crate::tensor::Tensor;

unary_table! {
    /// Negation ``-x``, elementwise.
    ///
    /// The same as the unary ``-`` operator; the method form is ``Tensor.neg()``. Integer tensors
    /// stay integer. A bool tensor raises, as in PyTorch (use ``logical_not`` or ``~``).
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``-x``, of ``x``'s shape and dtype (integers computed through float64: exact below
    ///     2^53).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is a bool tensor, or is not a tensor and holds no numbers (a string,
    ///     ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.neg(remat.tensor([1.0, -2.0, 0.5]))
    /// tensor([-1.0000,  2.0000, -0.5000])
    /// >>> remat.neg(remat.tensor([3, -4]))
    /// tensor([-3,  4])
    Neg fn(neg) save(Nothing) cpu(|x, p| -x) cuda("-x") grad(|g, s, p| neg(g));
    /// Exponential ``e^x``, elementwise.
    ///
    /// The gradient is the output itself (the op saves its output for backward).
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``e^x``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs give
    ///     float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.exp(remat.tensor([0.0, 1.0]))
    /// tensor([1.0000, 2.7183])
    /// >>> x = remat.tensor([1.0, 2.0], requires_grad=True)
    /// >>> remat.exp(x).sum().backward()
    /// >>> x.grad
    /// tensor([2.7183, 7.3891])
    Exp fn(exp) save(Output) cpu(|x, p| x.fast_exp()) cuda("exp(x)") grad(|g, y, p| mul(g, y));
    /// Natural logarithm, elementwise.
    ///
    /// As in NumPy and PyTorch, no error for values out of the domain: ``log(0)`` is ``-inf``
    /// and a negative value gives NaN. The gradient is ``1 / x``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``ln(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs give
    ///     float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.log(remat.tensor([1.0, 2.0, 0.0, -1.0]))
    /// tensor([0.0000, 0.6931,   -inf,    nan])
    Log fn(log) save(Input) cpu(|x, p| x.ln()) cuda("log(x)") grad(|g, x, p| div(g, x));
    /// Square root, elementwise.
    ///
    /// A negative value gives NaN (no error). The gradient is ``1 / (2 sqrt(x))``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``sqrt(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.sqrt(remat.tensor([4.0, 2.0, -1.0]))
    /// tensor([2.0000, 1.4142,    nan])
    /// >>> x = remat.tensor([4.0, 9.0], requires_grad=True)
    /// >>> remat.sqrt(x).sum().backward()
    /// >>> x.grad
    /// tensor([0.2500, 0.1667])
    Sqrt fn(sqrt) save(Output) cpu(|x, p| x.sqrt()) cuda("sqrt(x)")
        grad(|g, y, p| binary(Binary::SqrtBackward, g, y, 0.0));
    /// Sine (of radians), elementwise.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``sin(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.sin(remat.tensor([0.0, 1.0]))
    /// tensor([0.0000, 0.8415])
    Sin fn(sin) save(Input) cpu(|x, p| x.sin()) cuda("sin(x)") grad(|g, x, p| mul(g, &cos(x)?));
    /// Cosine (of radians), elementwise.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``cos(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.cos(remat.tensor([0.0, 1.0]))
    /// tensor([1.0000, 0.5403])
    Cos fn(cos) save(Input) cpu(|x, p| x.cos()) cuda("cos(x)")
        grad(|g, x, p| neg(&mul(g, &sin(x)?)?));
    /// Tangent (of radians), elementwise.
    ///
    /// The gradient is ``1 / cos(x)^2``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``tan(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.tan(remat.tensor([0.0, 1.0]))
    /// tensor([0.0000, 1.5574])
    Tan fn(tan) save(Input) cpu(|x, p| x.tan()) cuda("tan(x)")
        grad(|g, x, p| div(g, &mul(&cos(x)?, &cos(x)?)?));
    /// Hyperbolic tangent, elementwise.
    ///
    /// The gradient ``1 - y^2`` is computed from the output ``y``, which the op saves.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``tanh(x)``, in ``(-1, 1)``, of ``x``'s shape. Float inputs keep their dtype; integer
    ///     and bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.tanh(remat.tensor([0.0, 1.0, -1.0]))
    /// tensor([ 0.0000,  0.7616, -0.7616])
    Tanh fn(tanh) save(Output) cpu(|x, p| x.fast_tanh()) cuda("tanh(x)")
        grad(|g, y, p| binary(Binary::TanhBackward, g, y, 0.0));
    /// Logistic sigmoid ``1 / (1 + e^-x)``, elementwise.
    ///
    /// It saturates cleanly to 0 and 1 for large ``|x|`` (no NaN); the gradient ``y (1 - y)`` is
    /// computed from the output ``y``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``sigmoid(x)``, in ``[0, 1]``, of ``x``'s shape. Float inputs keep their dtype; integer
    ///     and bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.sigmoid(remat.tensor([0.0, 2.0]))
    /// tensor([0.5000, 0.8808])
    /// >>> remat.sigmoid(remat.tensor([-100.0, 100.0]))
    /// tensor([0., 1.])
    // This form saturates cleanly at both ends.
    Sigmoid fn(sigmoid) save(Output)
        cpu(|x, p| T::from_f64(1.0) / (T::from_f64(1.0) + (-x).fast_exp()))
        cuda("T(1) / (T(1) + exp(-x))")
        grad(|g, y, p| binary(Binary::SigmoidBackward, g, y, 0.0));
    /// Rectified linear unit ``max(x, 0)``, elementwise.
    ///
    /// NaN stays NaN. The gradient is 1 where ``x > 0`` and 0 elsewhere (0 at 0, as in
    /// PyTorch).
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``max(x, 0)``, of ``x``'s shape and dtype. Integer inputs keep their dtype (computed
    ///     through float64: exact below 2^53), bool inputs give int64.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.relu(remat.tensor([-1.0, 0.0, 2.0]))
    /// tensor([0., 0., 2.])
    /// >>> remat.relu(remat.tensor([-3, 5]))
    /// tensor([0, 5])
    /// >>> x = remat.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    /// >>> remat.relu(x).sum().backward()
    /// >>> x.grad
    /// tensor([0., 0., 1.])
    // `<` keeps NaN as NaN, as PyTorch does.
    Relu fn(relu) save(Output)
        cpu(|x, p| if x < T::from_f64(0.0) { T::from_f64(0.0) } else { x })
        cuda("x < T(0) ? T(0) : x")
        grad(|g, y, p| binary(Binary::ReluBackward, g, y, 0.0));
    /// exact GELU `x Phi(x)`
    GeluErf "gelu" save(Input) cpu(|x, p| gelu_erf(x)) fast(gelu_erf_f32)
        cuda("T(0.5) * x * (T(1) + erf(x * T(FRAC_1_SQRT_2)))")
        grad(|g, x, p| binary(Binary::GeluBackward, g, x, 0.0));
    /// PyTorch's tanh approximation of GELU
    GeluTanh "gelu" save(Input) cpu(|x, p| gelu_tanh(x)) cuda("gelu_tanh(x)")
        grad(|g, x, p| binary(Binary::GeluTanhBackward, g, x, 0.0));
    /// `x^p` for a constant `p`
    PowScalar "pow" save(Input) cpu(|x, p| pow_fast(x, p)) cuda("pow_fast(x, p)")
        grad(|g, x, p| binary(Binary::PowScalarBackward, g, x, p));
    /// `x * p`
    Scale "mul" save(Nothing) cpu(|x, p| x * p) cuda("x * p") grad(|g, s, p| scale(g, p));
    /// `x + p`
    AddScalar "add" save(Nothing) cpu(|x, p| x + p) cuda("x + p") grad(|g, s, p| Ok(g.clone()));
    /// Absolute value ``|x|``, elementwise.
    ///
    /// The gradient is ``sign(x)``: 0 at 0, as in PyTorch.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``|x|``, of ``x``'s shape and dtype. Integer inputs keep their dtype (computed through
    ///     float64: exact below 2^53), bool inputs give int64.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.abs(remat.tensor([-1.5, 0.0, 2.0]))
    /// tensor([1.5000, 0.0000, 2.0000])
    /// >>> remat.abs(remat.tensor([-3, 4]))
    /// tensor([3, 4])
    Abs fn(abs) save(Input) cpu(|x, p| x.abs()) cuda("fabs(x)")
        grad(|g, x, p| binary(Binary::AbsBackward, g, x, 0.0));
    /// Gauss error function ``erf(x)``, elementwise.
    ///
    /// The gradient is ``2 / sqrt(pi) e^(-x^2)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``erf(x)``, in ``[-1, 1]``, of ``x``'s shape. Float inputs keep their dtype; integer and
    ///     bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.erf(remat.tensor([0.0, 1.0, -1.0]))
    /// tensor([ 0.0000,  0.8427, -0.8427])
    Erf fn(erf) save(Input) cpu(|x, p| <T as crate::dtype::Element>::erf(x)) cuda("erf(x)")
        grad(|g, x, p| binary(Binary::ErfBackward, g, x, 0.0));
    /// Reciprocal square root ``1 / sqrt(x)``, elementwise.
    ///
    /// ``inf`` at 0 and NaN below 0, with no error.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``1 / sqrt(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool
    ///     inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.rsqrt(remat.tensor([4.0, 0.25]))
    /// tensor([0.5000, 2.0000])
    /// >>> remat.rsqrt(remat.tensor([0.0, -1.0]))
    /// tensor([inf, nan])
    Rsqrt fn(rsqrt) save(Output) cpu(|x, p| T::from_f64(1.0) / x.sqrt()) cuda("T(1) / sqrt(x)")
        grad(|g, y, p| binary(Binary::RsqrtBackward, g, y, 0.0));
    /// Square ``x * x``, elementwise.
    ///
    /// The gradient is ``2 x``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``x * x``, of ``x``'s shape and dtype. Integer inputs keep their dtype (computed through
    ///     float64: exact below 2^53), bool inputs give int64.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.square(remat.tensor([1.5, -2.0]))
    /// tensor([2.2500, 4.0000])
    /// >>> remat.square(remat.tensor([3, -4]))
    /// tensor([ 9, 16])
    Square fn(square) save(Input) cpu(|x, p| x * x) cuda("x * x")
        grad(|g, x, p| binary(Binary::PowScalarBackward, g, x, 2.0));
    /// ``log(1 + x)``, elementwise, accurate for small ``|x|``.
    ///
    /// Where ``1 + x`` would round to 1, ``log1p`` keeps the digits of ``x``. NaN below -1,
    /// ``-inf`` at -1 (no error). The gradient is ``1 / (1 + x)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``log(1 + x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.log1p(remat.tensor([0.0, 1.0, -1.0]))
    /// tensor([0.0000, 0.6931,   -inf])
    /// >>> small = remat.tensor([1e-10])
    /// >>> remat.log(1 + small).item()
    /// 0.0
    /// >>> round(remat.log1p(small).item() * 1e10, 4)
    /// 1.0
    Log1p fn(log1p) save(Input) cpu(|x, p| x.ln_1p()) cuda("log1p(x)")
        grad(|g, x, p| binary(Binary::Log1pBackward, g, x, 0.0));
    /// ``e^x - 1``, elementwise, accurate for small ``|x|``.
    ///
    /// Where ``e^x`` would round to 1, ``expm1`` keeps the digits of ``x``. The gradient
    /// ``y + 1`` is computed from the output ``y``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``e^x - 1``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.expm1(remat.tensor([0.0, 1.0]))
    /// tensor([0.0000, 1.7183])
    /// >>> small = remat.tensor([1e-10])
    /// >>> (remat.exp(small) - 1).item()
    /// 0.0
    /// >>> round(remat.expm1(small).item() * 1e10, 4)
    /// 1.0
    Expm1 fn(expm1) save(Output) cpu(|x, p| x.exp_m1()) cuda("expm1(x)")
        grad(|g, y, p| binary(Binary::Expm1Backward, g, y, 0.0));
    /// Sign of each element: -1, 0 or 1.
    ///
    /// NaN gives 0, as in PyTorch. The gradient is zero everywhere.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     The signs, of ``x``'s shape and dtype. Integer inputs keep their dtype (computed through
    ///     float64: exact below 2^53), bool inputs give int64.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.sign(remat.tensor([-2.0, 0.0, 3.0, float("nan")]))
    /// tensor([-1.,  0.,  1.,  0.])
    /// >>> remat.sign(remat.tensor([-2, 0, 3]))
    /// tensor([-1,  0,  1])
    Sign fn(sign) save(Nothing) cpu(|x, p| sign_of(x)) cuda("sign_of(x)")
        grad(|g, s, p| zeros_like(g));
    /// Largest integer not above each element (rounds towards ``-inf``).
    ///
    /// The result keeps the input's dtype (a float tensor stays float). The gradient is zero
    /// everywhere.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``floor(x)``, of ``x``'s shape and dtype. Integer inputs keep their dtype (computed
    ///     through float64: exact below 2^53), bool inputs give int64.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.floor(remat.tensor([-1.5, 0.5, 2.0]))
    /// tensor([-2.,  0.,  2.])
    Floor fn(floor) save(Nothing) cpu(|x, p| x.floor()) cuda("floor(x)")
        grad(|g, s, p| zeros_like(g));
    /// Smallest integer not below each element (rounds towards ``+inf``).
    ///
    /// The result keeps the input's dtype (a float tensor stays float). The gradient is zero
    /// everywhere.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``ceil(x)``, of ``x``'s shape and dtype. Integer inputs keep their dtype (computed
    ///     through float64: exact below 2^53), bool inputs give int64.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.ceil(remat.tensor([-1.5, 0.5, 2.0]))
    /// tensor([-1.,  1.,  2.])
    Ceil fn(ceil) save(Nothing) cpu(|x, p| x.ceil()) cuda("ceil(x)")
        grad(|g, s, p| zeros_like(g));
    /// Inverse sine (arcsine, in radians), elementwise.
    ///
    /// NaN outside ``[-1, 1]`` (no error). The gradient is ``1 / sqrt(1 - x^2)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``asin(x)``, in ``[-pi/2, pi/2]``, of ``x``'s shape. Float inputs keep their dtype;
    ///     integer and bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.asin(remat.tensor([0.0, 0.5, 1.0]))
    /// tensor([0.0000, 0.5236, 1.5708])
    Asin fn(asin) save(Input) cpu(|x, p| x.asin()) cuda("asin(x)")
        grad(|g, x, p| div(g, &sqrt(&one_minus_square(x)?)?));
    /// Inverse cosine (arccosine, in radians), elementwise.
    ///
    /// NaN outside ``[-1, 1]`` (no error). The gradient is ``-1 / sqrt(1 - x^2)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``acos(x)``, in ``[0, pi]``, of ``x``'s shape. Float inputs keep their dtype; integer
    ///     and bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.acos(remat.tensor([0.0, 0.5, 1.0]))
    /// tensor([1.5708, 1.0472, 0.0000])
    Acos fn(acos) save(Input) cpu(|x, p| x.acos()) cuda("acos(x)")
        grad(|g, x, p| neg(&div(g, &sqrt(&one_minus_square(x)?)?)?));
    /// Inverse tangent (arctangent, in radians), elementwise.
    ///
    /// The gradient is ``1 / (1 + x^2)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``atan(x)``, in ``(-pi/2, pi/2)``, of ``x``'s shape. Float inputs keep their dtype;
    ///     integer and bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.atan(remat.tensor([0.0, 1.0, -2.0]))
    /// tensor([ 0.0000,  0.7854, -1.1071])
    Atan fn(atan) save(Input) cpu(|x, p| x.atan()) cuda("atan(x)")
        grad(|g, x, p| div(g, &add_scalar(&mul(x, x)?, 1.0)?));
    /// Hyperbolic sine, elementwise.
    ///
    /// The gradient is ``cosh(x)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``sinh(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.sinh(remat.tensor([0.0, 1.0, -1.0]))
    /// tensor([ 0.0000,  1.1752, -1.1752])
    Sinh fn(sinh) save(Input) cpu(|x, p| x.sinh()) cuda("sinh(x)")
        grad(|g, x, p| mul(g, &cosh(x)?));
    /// Hyperbolic cosine, elementwise.
    ///
    /// The gradient is ``sinh(x)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``cosh(x)``, at least 1, of ``x``'s shape. Float inputs keep their dtype; integer and
    ///     bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.cosh(remat.tensor([0.0, 1.0, -1.0]))
    /// tensor([1.0000, 1.5431, 1.5431])
    Cosh fn(cosh) save(Input) cpu(|x, p| x.cosh()) cuda("cosh(x)")
        grad(|g, x, p| mul(g, &sinh(x)?));
    /// Inverse hyperbolic sine, elementwise.
    ///
    /// The gradient is ``1 / sqrt(x^2 + 1)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``asinh(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.asinh(remat.tensor([0.0, 1.0, -2.0]))
    /// tensor([ 0.0000,  0.8814, -1.4436])
    Asinh fn(asinh) save(Input) cpu(|x, p| x.asinh()) cuda("asinh(x)")
        grad(|g, x, p| div(g, &sqrt(&add_scalar(&mul(x, x)?, 1.0)?)?));
    /// Inverse hyperbolic cosine, elementwise.
    ///
    /// NaN below 1 (no error). The gradient is ``1 / sqrt((x - 1) (x + 1))``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``acosh(x)``, at least 0, of ``x``'s shape. Float inputs keep their dtype; integer and
    ///     bool inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.acosh(remat.tensor([1.0, 2.0, 0.5]))
    /// tensor([0.0000, 1.3170,    nan])
    Acosh fn(acosh) save(Input) cpu(|x, p| x.acosh()) cuda("acosh(x)")
        grad(|g, x, p| div(g, &sqrt(&mul(&add_scalar(x, -1.0)?, &add_scalar(x, 1.0)?)?)?));
    /// Inverse hyperbolic tangent, elementwise.
    ///
    /// ``inf`` at 1, ``-inf`` at -1 and NaN beyond (no error). The gradient is ``1 / (1 - x^2)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``atanh(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.atanh(remat.tensor([0.0, 0.5, 1.0]))
    /// tensor([0.0000, 0.5493,    inf])
    Atanh fn(atanh) save(Input) cpu(|x, p| x.atanh()) cuda("atanh(x)")
        grad(|g, x, p| div(g, &one_minus_square(x)?));
    /// Base-2 logarithm, elementwise.
    ///
    /// NaN below 0, ``-inf`` at 0 (no error). The gradient is ``1 / (x ln 2)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``log2(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.log2(remat.tensor([1.0, 8.0, 0.5]))
    /// tensor([ 0.,  3., -1.])
    Log2 fn(log2) save(Input) cpu(|x, p| x.log2()) cuda("log2(x)")
        grad(|g, x, p| div(g, &scale(x, std::f64::consts::LN_2)?));
    /// Base-10 logarithm, elementwise.
    ///
    /// NaN below 0, ``-inf`` at 0 (no error). The gradient is ``1 / (x ln 10)``.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``log10(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs
    ///     give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.log10(remat.tensor([1.0, 100.0, 0.5]))
    /// tensor([ 0.0000,  2.0000, -0.3010])
    Log10 fn(log10) save(Input) cpu(|x, p| x.log10()) cuda("log10(x)")
        grad(|g, x, p| div(g, &scale(x, std::f64::consts::LN_10)?));
    /// ``2^x``, elementwise.
    ///
    /// The gradient ``y ln 2`` is computed from the output ``y``, which the op saves.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``2^x``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs give
    ///     float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.exp2(remat.tensor([0.0, 3.0, -1.0]))
    /// tensor([1.0000, 8.0000, 0.5000])
    Exp2 fn(exp2) save(Output) cpu(|x, p| x.exp2()) cuda("exp2(x)")
        grad(|g, y, p| scale(&mul(g, y)?, std::f64::consts::LN_2));
    /// Integer part of each element (rounds towards 0).
    ///
    /// The result keeps the input's dtype (a float tensor stays float). The gradient is zero
    /// everywhere.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``trunc(x)``, of ``x``'s shape and dtype. Integer inputs keep their dtype (computed
    ///     through float64: exact below 2^53), bool inputs give int64.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.trunc(remat.tensor([-1.5, 0.5, 2.0]))
    /// tensor([-1.,  0.,  2.])
    Trunc fn(trunc) save(Nothing) cpu(|x, p| x.trunc()) cuda("trunc(x)")
        grad(|g, s, p| zeros_like(g));
    /// Fractional part ``x - trunc(x)`` of each element.
    ///
    /// The result has the sign of ``x`` (``frac(-1.5)`` is ``-0.5``), as in PyTorch. The gradient
    /// is 1 everywhere.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``x - trunc(x)``, of ``x``'s shape and dtype.
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is an integer or bool tensor (PyTorch has no integer ``frac`` either), or is
    ///     not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.frac(remat.tensor([-1.5, 0.25, 2.0]))
    /// tensor([-0.5000,  0.2500,  0.0000])
    Frac fn(frac) save(Nothing) cpu(|x, p| x - x.trunc()) cuda("x - trunc(x)")
        grad(|g, s, p| Ok(g.clone()));
    /// Reciprocal ``1 / x``, elementwise.
    ///
    /// ``inf`` at 0 (no error). The gradient ``-y^2`` is computed from the output ``y``, which the
    /// op saves.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``1 / x``, of ``x``'s shape. Float inputs keep their dtype; integer and bool inputs give
    ///     float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.reciprocal(remat.tensor([2.0, -0.5, 4.0]))
    /// tensor([ 0.5000, -2.0000,  0.2500])
    Reciprocal fn(reciprocal) save(Output) cpu(|x, p| T::from_f64(1.0) / x) cuda("T(1) / x")
        grad(|g, y, p| neg(&mul(g, &mul(y, y)?)?));
    /// Nearest integer to each element, ties to even (PyTorch's and NumPy's `round`); with
    /// `p != 0`, rounded at a decimal scale as PyTorch's `round(decimals=d)`, in the element's
    /// dtype: `p = 10^d` rounds `x * p` and divides back (`d > 0` digits after the point),
    /// `p = -10^d` rounds `x / 10^d` and multiplies back (`d` digits before it). Gradient zero.
    /// The public functions are [`round`] and [`round_decimals`] (the row has a parameter, so
    /// the Python binding with its `decimals=` keyword is written by hand in remat-py).
    Round "round" save(Nothing)
        cpu(|x, p| {
            let zero = T::from_f64(0.0);
            if p == zero {
                round_half_even(x)
            } else if p > zero {
                round_half_even(x * p) / p
            } else {
                round_half_even(x / -p) * -p
            }
        })
        cuda("p == T(0) ? rint(x) : (p > T(0) ? rint(x * p) / p : rint(x / -p) * -p)")
        grad(|g, s, p| zeros_like(g));
    /// SiLU (swish) ``x * sigmoid(x)``, elementwise.
    ///
    /// Parameters
    /// ----------
    /// x : Tensor or array_like
    ///     The input. A list, NumPy array or Python number is converted to a tensor first (as
    ///     ``remat.tensor`` does).
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     ``x * sigmoid(x)``, of ``x``'s shape. Float inputs keep their dtype; integer and bool
    ///     inputs give float32 (PyTorch's default float).
    ///
    /// Raises
    /// ------
    /// DTypeError
    ///     When ``x`` is not a tensor and holds no numbers (a string, ``None``, ...).
    /// ShapeError
    ///     When ``x`` is a ragged nested list.
    ///
    /// Examples
    /// --------
    /// >>> remat.silu(remat.tensor([0.0, 1.0, -1.0]))
    /// tensor([ 0.0000,  0.7311, -0.2689])
    Silu fn(silu) save(Input)
        cpu(|x, p| x / (T::from_f64(1.0) + (-x).fast_exp()))
        cuda("x / (T(1) + exp(-x))")
        grad(|g, x, p| binary(Binary::SiluBackward, g, x, 0.0));
    /// softplus with `beta = 1` and threshold `p`: `x` above `p`, else `log(1 + e^x)`
    /// (PyTorch's formula; `softplus` scales around it for other betas)
    Softplus "softplus" save(Input)
        cpu(|x, p| if x > p { x } else { x.exp().ln_1p() })
        cuda("x > p ? x : log1p(exp(x))")
        grad(|g, x, p| binary(Binary::SoftplusBackward, g, x, p));
    /// softplus's derivative: `1` above the threshold `p`, else `sigmoid(x)`; its own
    /// derivative is `y (1 - y)` of its output `y` (0 above the threshold)
    SoftplusGrad "softplus_backward" save(Output)
        cpu(|x, p| if x > p { T::from_f64(1.0) } else { T::from_f64(1.0) / (T::from_f64(1.0) + (-x).fast_exp()) })
        cuda("x > p ? T(1) : T(1) / (T(1) + exp(-x))")
        grad(|g, y, p| binary(Binary::SigmoidBackward, g, y, 0.0));
    /// leaky ReLU: `x` above 0, else `p x` (`p`: the negative slope)
    LeakyRelu "leaky_relu" save(Input)
        cpu(|x, p| if x > T::from_f64(0.0) { x } else { x * p })
        cuda("x > T(0) ? x : x * p")
        grad(|g, x, p| binary(Binary::LeakyReluBackward, g, x, p));
    /// leaky ReLU saving its output, for a slope `p >= 0` (the result is above 0 exactly where
    /// the input is, so its backward reads the result): what the in-place `leaky_relu_`
    /// records, keeping no copy of the overwritten input, as PyTorch's does
    LeakyReluOut "leaky_relu" save(Output)
        cpu(|x, p| if x > T::from_f64(0.0) { x } else { x * p })
        cuda("x > T(0) ? x : x * p")
        grad(|g, y, p| binary(Binary::LeakyReluBackward, g, y, p));
    /// `max(x, p)`: clamp from below by a constant (NaN in `x` or `p` propagates)
    ClampMin "clamp" save(Input)
        cpu(|x, p| if x.is_nan() || x > p { x } else { p })
        cuda("(x != x || x > p) ? x : p")
        grad(|g, x, p| binary(Binary::ClampMinBackward, g, x, p));
    /// `min(x, p)`: clamp from above by a constant (NaN in `x` or `p` propagates)
    ClampMax "clamp" save(Input)
        cpu(|x, p| if x.is_nan() || x < p { x } else { p })
        cuda("(x != x || x < p) ? x : p")
        grad(|g, x, p| binary(Binary::ClampMaxBackward, g, x, p));
}

binary_table! {
    /// `a + b`
    Add "add" save(Nothing) cpu(|a, b, p| a + b) cuda("a + b")
        da(|g, a, b, p| Ok(g.clone())) db(|g, a, b, p| Ok(g.clone()));
    /// `a - b`
    Sub "sub" save(Nothing) cpu(|a, b, p| a - b) cuda("a - b")
        da(|g, a, b, p| Ok(g.clone())) db(|g, a, b, p| neg(g));
    /// `a * b`
    Mul "mul" save(Both) cpu(|a, b, p| a * b) cuda("a * b")
        da(|g, a, b, p| mul(g, b)) db(|g, a, b, p| mul(g, a));
    /// `a / b`
    Div "div" save(Both) cpu(|a, b, p| a / b) cuda("a / b")
        da(|g, a, b, p| div(g, b))
        db(|g, a, b, p| neg(&div(&mul(g, a)?, &mul(b, b)?)?));
    /// `a^b`
    Pow "pow" save(Both) cpu(|a, b, p| a.powf(b)) cuda("pow(a, b)")
        da(|g, a, b, p| mul(g, &binary(Binary::PowGradBase, a, b, 0.0)?))
        db(|g, a, b, p| mul(g, &binary(Binary::PowGradExp, a, b, 0.0)?));
    /// `d(a^b)/da = b a^(b-1)`, zero where `b == 0` (no `0 * inf` at `a == 0`, as PyTorch)
    PowGradBase "pow_backward" save(Both)
        cpu(|a, b, p| if b == T::from_f64(0.0) { T::from_f64(0.0) } else { b * a.powf(b - T::from_f64(1.0)) })
        cuda("b == T(0) ? T(0) : b * pow(a, b - T(1))")
        da(|g, a, b, p| mul(g, &mul(b, &binary(Binary::PowGradBase, a, &add_scalar(b, -1.0)?, 0.0)?)?))
        db(|g, a, b, p| mul(g, &mul(&pow(a, &add_scalar(b, -1.0)?)?, &add_scalar(&mul(b, &log(a)?)?, 1.0)?)?));
    /// `d(a^b)/db = a^b ln a`, zero where `a == 0` and `b >= 0` (the limit, as PyTorch)
    PowGradExp "pow_backward" save(Both)
        cpu(|a, b, p| if a == T::from_f64(0.0) && b >= T::from_f64(0.0) { T::from_f64(0.0) } else { a.powf(b) * a.ln() })
        cuda("(a == T(0) && b >= T(0)) ? T(0) : pow(a, b) * log(a)")
        da(|g, a, b, p| mul(g, &mul(&pow(a, &add_scalar(b, -1.0)?)?, &add_scalar(&mul(b, &log(a)?)?, 1.0)?)?))
        db(|g, a, b, p| mul(g, &mul(&binary(Binary::PowGradExp, a, b, 0.0)?, &log(a)?)?));
    /// tanh's backward `g (1 - y^2)` (a: g, b: the output y)
    TanhBackward "tanh_backward" save(Both) cpu(|a, b, p| a * (T::from_f64(1.0) - b * b))
        cuda("a * (T(1) - b * b)")
        da(|g, a, b, p| binary(Binary::TanhBackward, g, b, 0.0))
        db(|g, a, b, p| mul(&mul(g, a)?, &scale(b, -2.0)?));
    /// sigmoid's backward `g y (1 - y)`
    SigmoidBackward "sigmoid_backward" save(Both) cpu(|a, b, p| a * b * (T::from_f64(1.0) - b))
        cuda("a * b * (T(1) - b)")
        da(|g, a, b, p| binary(Binary::SigmoidBackward, g, b, 0.0))
        db(|g, a, b, p| mul(&mul(g, a)?, &add_scalar(&scale(b, -2.0)?, 1.0)?));
    /// relu's backward `y > 0 ? g : 0` (no gradient to the mask)
    ReluBackward "relu_backward" save(Both)
        cpu(|a, b, p| if b > T::from_f64(0.0) { a } else { T::from_f64(0.0) })
        cuda("b > T(0) ? a : T(0)")
        da(|g, a, b, p| binary(Binary::ReluBackward, g, b, 0.0));
    /// sqrt's backward `g / (2 y)`
    SqrtBackward "sqrt_backward" save(Both) cpu(|a, b, p| a / (b + b)) cuda("a / (b + b)")
        da(|g, a, b, p| binary(Binary::SqrtBackward, g, b, 0.0))
        db(|g, a, b, p| neg(&div(&binary(Binary::SqrtBackward, &mul(g, a)?, b, 0.0)?, b)?));
    /// exact GELU's backward `g (Phi(x) + x phi(x))` (b: the input x)
    GeluBackward "gelu_backward" save(Both) cpu(|a, b, p| gelu_erf_grad(a, b))
        fast(gelu_erf_grad_f32)
        cuda("gelu_erf_grad(a, b)")
        da(|g, a, b, p| binary(Binary::GeluBackward, g, b, 0.0))
        db(|g, a, b, p| mul(&mul(g, a)?, &gelu_erf_second(b)?));
    /// tanh-GELU's backward
    GeluTanhBackward "gelu_backward" save(Both) cpu(|a, b, p| gelu_tanh_grad(a, b))
        cuda("gelu_tanh_grad(a, b)")
        da(|g, a, b, p| binary(Binary::GeluTanhBackward, g, b, 0.0))
        db(|g, a, b, p| mul(&mul(g, a)?, &gelu_tanh_second(b)?));
    /// `x^p`'s backward `g p x^(p-1)` (b: the input x)
    PowScalarBackward "pow_backward" save(Both) cpu(|a, b, p| pow_fast_grad(a, b, p))
        cuda("pow_fast_grad(a, b, p)")
        da(|g, a, b, p| binary(Binary::PowScalarBackward, g, b, p))
        db(|g, a, b, p| scale(&binary(Binary::PowScalarBackward, &mul(g, a)?, b, p - 1.0)?, p));
    /// `atan2(a, b)`: the angle of the point `(b, a)` in radians, in `[-pi, pi]`; gradients
    /// `b / (a^2 + b^2)` and `-a / (a^2 + b^2)`, as PyTorch (NaN at the origin)
    Atan2 "atan2" save(Both) cpu(|a, b, p| a.atan2(b)) cuda("atan2(a, b)")
        da(|g, a, b, p| mul(g, &div(b, &sum_of_squares(a, b)?)?))
        db(|g, a, b, p| neg(&mul(g, &div(a, &sum_of_squares(a, b)?)?)?));
    /// `1` where `a == b` (NaN matches NaN), else `0`; a mask, not differentiable
    Equal "eq" save(Nothing)
        cpu(|a, b, p| if a == b || (a.is_nan() && b.is_nan()) { T::from_f64(1.0) } else { T::from_f64(0.0) })
        cuda("(a == b || (a != a && b != b)) ? T(1) : T(0)");
    /// `max(a, b)` elementwise; NaN in either propagates. Ties split the gradient in half
    /// between both operands, as in PyTorch.
    Maximum "maximum" save(Both)
        cpu(|a, b, p| if a.is_nan() || a > b { a } else { b })
        cuda("(a != a || a > b) ? a : b")
        da(|g, a, b, p| mul(g, &binary(Binary::MaximumShare, a, b, 0.0)?))
        db(|g, a, b, p| mul(g, &binary(Binary::MaximumShare, b, a, 0.0)?));
    /// `min(a, b)` elementwise; NaN in either propagates. Ties split the gradient in half.
    Minimum "minimum" save(Both)
        cpu(|a, b, p| if a.is_nan() || a < b { a } else { b })
        cuda("(a != a || a < b) ? a : b")
        da(|g, a, b, p| mul(g, &binary(Binary::MaximumShare, b, a, 0.0)?))
        db(|g, a, b, p| mul(g, &binary(Binary::MaximumShare, a, b, 0.0)?));
    /// `a`'s share of `maximum(a, b)`'s gradient (`b`'s share of `minimum(b, a)`'s): `0.5` on
    /// a tie, `0` where `a < b`, else `1` (NaN on either side included), as PyTorch; a mask,
    /// not differentiable
    MaximumShare "maximum_backward" save(Nothing)
        cpu(|a, b, p| if a == b { T::from_f64(0.5) } else if a < b { T::from_f64(0.0) } else { T::from_f64(1.0) })
        cuda("a == b ? T(0.5) : (a < b ? T(0) : T(1))");
    /// `a + p (b - a)` for a constant weight `p`, in PyTorch's two-sided form (exactly `b`
    /// at `p == 1`)
    Lerp "lerp" save(Nothing)
        cpu(|a, b, p| if p.abs() < T::from_f64(0.5) { a + p * (b - a) } else { b - (b - a) * (T::from_f64(1.0) - p) })
        cuda("fabs(p) < T(0.5) ? a + p * (b - a) : b - (b - a) * (T(1) - p)")
        da(|g, a, b, p| scale(g, 1.0 - p)) db(|g, a, b, p| scale(g, p));
    /// abs's backward `g sign(x)` (b: the input x)
    AbsBackward "abs_backward" save(Both) cpu(|a, b, p| a * sign_of(b)) cuda("a * sign_of(b)")
        da(|g, a, b, p| binary(Binary::AbsBackward, g, b, 0.0));
    /// erf's backward `g 2/sqrt(pi) e^(-x^2)` (b: the input x)
    ErfBackward "erf_backward" save(Both)
        cpu(|a, b, p| a * T::from_f64(FRAC_2_SQRT_PI) * (-(b * b)).fast_exp())
        cuda("a * T(FRAC_2_SQRT_PI) * exp(-(b * b))")
        da(|g, a, b, p| binary(Binary::ErfBackward, g, b, 0.0))
        db(|g, a, b, p| mul(&binary(Binary::ErfBackward, &mul(g, a)?, b, 0.0)?, &scale(b, -2.0)?));
    /// rsqrt's backward `-g y^3 / 2` (b: the output y)
    RsqrtBackward "rsqrt_backward" save(Both)
        cpu(|a, b, p| T::from_f64(-0.5) * a * b * b * b)
        cuda("T(-0.5) * a * b * b * b")
        da(|g, a, b, p| binary(Binary::RsqrtBackward, g, b, 0.0))
        db(|g, a, b, p| scale(&mul(&mul(g, a)?, &mul(b, b)?)?, -1.5));
    /// log1p's backward `g / (1 + x)` (b: the input x)
    Log1pBackward "log1p_backward" save(Both)
        cpu(|a, b, p| a / (b + T::from_f64(1.0)))
        cuda("a / (b + T(1))")
        da(|g, a, b, p| binary(Binary::Log1pBackward, g, b, 0.0))
        db(|g, a, b, p| {
            let once = binary(Binary::Log1pBackward, &mul(g, a)?, b, 0.0)?;
            neg(&binary(Binary::Log1pBackward, &once, b, 0.0)?)
        });
    /// expm1's backward `g (y + 1)` (b: the output y)
    Expm1Backward "expm1_backward" save(Both)
        cpu(|a, b, p| a * (b + T::from_f64(1.0)))
        cuda("a * (b + T(1))")
        da(|g, a, b, p| binary(Binary::Expm1Backward, g, b, 0.0))
        db(|g, a, b, p| mul(g, a));
    /// SiLU's backward `g s (1 + x (1 - s))`, `s = sigmoid(x)` (b: the input x)
    SiluBackward "silu_backward" save(Both) cpu(|a, b, p| silu_grad(a, b)) cuda("silu_grad(a, b)")
        da(|g, a, b, p| binary(Binary::SiluBackward, g, b, 0.0))
        db(|g, a, b, p| mul(&mul(g, a)?, &silu_second(b)?));
    /// softplus's backward: `g` above the threshold `p`, else `g sigmoid(x)` (b: the input x)
    SoftplusBackward "softplus_backward" save(Both)
        cpu(|a, b, p| if b > p { a } else { a / (T::from_f64(1.0) + (-b).fast_exp()) })
        cuda("b > p ? a : a / (T(1) + exp(-b))")
        da(|g, a, b, p| binary(Binary::SoftplusBackward, g, b, p))
        db(|g, a, b, p| binary(Binary::SigmoidBackward, &mul(g, a)?, &unary(Unary::SoftplusGrad, b, p)?, 0.0));
    /// leaky ReLU's backward: `g` where `x > 0`, else `p g` (no gradient to the input x)
    LeakyReluBackward "leaky_relu_backward" save(Both)
        cpu(|a, b, p| if b > T::from_f64(0.0) { a } else { a * p })
        cuda("b > T(0) ? a : a * p")
        da(|g, a, b, p| binary(Binary::LeakyReluBackward, g, b, p));
    /// clamp-from-below's backward: `g` where `x > p`, else 0 (0 at the bound, as PyTorch)
    ClampMinBackward "clamp_backward" save(Both)
        cpu(|a, b, p| if b > p { a } else { T::from_f64(0.0) })
        cuda("b > p ? a : T(0)")
        da(|g, a, b, p| binary(Binary::ClampMinBackward, g, b, p));
    /// clamp-from-above's backward: `g` where `x < p`, else 0 (0 at the bound, as PyTorch)
    ClampMaxBackward "clamp_backward" save(Both)
        cpu(|a, b, p| if b < p { a } else { T::from_f64(0.0) })
        cuda("b < p ? a : T(0)")
        da(|g, a, b, p| binary(Binary::ClampMaxBackward, g, b, p));
}

/// Zeros of `t`'s shape, dtype and device: the gradient of the piecewise-constant rows
/// (`sign`, `floor`, `ceil`, `trunc`, `round`), as PyTorch's `zeros_like(grad)`; unlike `0 * g` it
/// stays 0 where `g` is infinite or NaN.
fn zeros_like(t: &Tensor) -> Result<Tensor> {
    crate::ops::zeros(t.shape(), t.dtype(), t.device())
}

/// `1 - x^2`, from differentiable ops (the derivatives of `asin`, `acos`, `atanh`).
fn one_minus_square(x: &Tensor) -> Result<Tensor> {
    add_scalar(&neg(&mul(x, x)?)?, 1.0)
}

/// `a^2 + b^2` (broadcast), from differentiable ops (`atan2`'s derivatives).
fn sum_of_squares(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    add(&mul(a, a)?, &mul(b, b)?)
}

/// SiLU's second derivative `s (1 - s) (2 + x (1 - 2 s))`, `s = sigmoid(x)`, from
/// differentiable ops.
fn silu_second(x: &Tensor) -> Result<Tensor> {
    let s = sigmoid(x)?;
    let ds = mul(&s, &add_scalar(&neg(&s)?, 1.0)?)?;
    let inner = add_scalar(&mul(x, &add_scalar(&scale(&s, -2.0)?, 1.0)?)?, 2.0)?;
    mul(&ds, &inner)
}

/// Exact GELU's second derivative `phi(x) (2 - x^2)`, from differentiable ops.
fn gelu_erf_second(x: &Tensor) -> Result<Tensor> {
    let x2 = mul(x, x)?;
    let pdf = scale(&exp(&scale(&x2, -0.5)?)?, FRAC_1_SQRT_2PI)?;
    mul(&pdf, &add_scalar(&neg(&x2)?, 2.0)?)
}

/// The tanh-GELU's second derivative, from differentiable ops: with `u = k (x + c x^3)`,
/// `t = tanh u`, `du = k (1 + 3 c x^2)`: `(1 - t^2) (du - x t du^2 + 3 k c x^2)`.
fn gelu_tanh_second(x: &Tensor) -> Result<Tensor> {
    let x2 = mul(x, x)?;
    let u = scale(&add(x, &scale(&mul(&x2, x)?, GELU_C)?)?, GELU_K)?;
    let t = tanh(&u)?;
    let du = scale(&add_scalar(&scale(&x2, 3.0 * GELU_C)?, 1.0)?, GELU_K)?;
    let sech2 = add_scalar(&neg(&mul(&t, &t)?)?, 1.0)?;
    let inner = sub(&du, &mul(&mul(x, &t)?, &mul(&du, &du)?)?)?;
    let inner = add(&inner, &scale(&x2, 3.0 * GELU_K * GELU_C)?)?;
    mul(&sech2, &inner)
}

/// Public functions (and Tensor methods) of the broadcasting binary rows.
macro_rules! binary_fns {
    ($($(#[$doc:meta])* $f:ident => $V:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $f(a: &Tensor, b: &Tensor) -> Result<Tensor> {
                binary(Binary::$V, a, b, 0.0)
            }
        )*
    };
}

binary_fns! {
    /// `a + b` with broadcasting and dtype promotion.
    add => Add;
    /// `a - b` with broadcasting and dtype promotion.
    sub => Sub;
    /// `a * b` with broadcasting and dtype promotion.
    mul => Mul;
    /// `a / b` with broadcasting and dtype promotion.
    div => Div;
    /// `a^b` elementwise with broadcasting and dtype promotion; gradients for both.
    pow => Pow;
    /// Elementwise maximum with broadcasting; NaN propagates; ties split the gradient.
    maximum => Maximum;
    /// Elementwise minimum with broadcasting; NaN propagates; ties split the gradient.
    minimum => Minimum;
    /// Elementwise `atan2(a, b)`, the angle of `(b, a)` in `[-pi, pi]`, with broadcasting.
    atan2 => Atan2;
}

/// GELU: exact `x Phi(x)` (erf form), or PyTorch's tanh approximation when
/// `approximate_tanh` is set.
pub fn gelu(x: &Tensor, approximate_tanh: bool) -> Result<Tensor> {
    let f = if approximate_tanh {
        Unary::GeluTanh
    } else {
        Unary::GeluErf
    };
    unary(f, x, 0.0)
}

/// Nearest integer to each element, ties to even (`2.5` gives `2`), as PyTorch's and NumPy's
/// `round`. Integer tensors keep their dtype (and values); bool gives int64. The gradient is
/// zero everywhere.
pub fn round(x: &Tensor) -> Result<Tensor> {
    unary(Unary::Round, x, 0.0)
}

/// `x` rounded to `decimals` decimal digits, ties to even, as PyTorch's
/// `round(x, decimals=d)`: `round(x * 10^d) / 10^d`, or `round(x / 10^-d) * 10^-d` for a
/// negative `d` (digits before the point), computed in `x`'s dtype (so float32 results are
/// the float32 nearest to the decimal, and a scale beyond the dtype's range gives NaN, as in
/// PyTorch). `decimals == 0` is [`round`]. The gradient is zero everywhere.
///
/// Errors: `DType` for an integer or bool `x` with `decimals != 0` (PyTorch has no integer
/// kernel for it).
pub fn round_decimals(x: &Tensor, decimals: i64) -> Result<Tensor> {
    if decimals == 0 {
        return round(x);
    }
    if !x.dtype().is_float() {
        return Err(crate::error::Error::dtype(
            "round",
            format!(
                "decimals={decimals} needs a float32 or float64 tensor, got a {} tensor of \
                 shape {}",
                x.dtype(),
                crate::layout::fmt_shape(x.shape())
            ),
        ));
    }
    // std::pow(10, d) in double, as PyTorch; beyond 10^308 it is inf, as there.
    let exponent = i32::try_from(decimals.unsigned_abs()).unwrap_or(i32::MAX);
    let scale = 10f64.powi(exponent);
    unary(Unary::Round, x, if decimals > 0 { scale } else { -scale })
}

/// `x^p` for a constant exponent `p` (exact fast paths for 2, 0.5, -1, integers, ...).
pub fn pow_scalar(x: &Tensor, p: f64) -> Result<Tensor> {
    unary(Unary::PowScalar, x, p)
}

/// `x ** p` for a Python-number exponent, with PyTorch's dtype rules: a float exponent
/// makes an integer or bool base float32 (`ints ** 2.0` is float32, as `ints * 2.0` is); an
/// int exponent keeps integers (bool counts as int64), and a negative one is an error for
/// them (PyTorch: "Integers to negative integer powers are not allowed").
pub fn pow_number(x: &Tensor, p: f64, float_exponent: bool) -> Result<Tensor> {
    if x.dtype().is_float() {
        return pow_scalar(x, p);
    }
    if float_exponent {
        return pow_scalar(
            &crate::ops::cast(x, crate::dtype::DType::default_float())?,
            p,
        );
    }
    if p < 0.0 {
        return Err(crate::error::Error::value(
            "pow",
            format!(
                "integers to negative integer powers are not allowed (a {} tensor of shape {} \
                 to the power {p}); use a float base or exponent",
                x.dtype(),
                crate::layout::fmt_shape(x.shape())
            ),
        ));
    }
    pow_scalar(x, p)
}

/// `x * c` for a constant `c`.
pub fn scale(x: &Tensor, c: f64) -> Result<Tensor> {
    unary(Unary::Scale, x, c)
}

/// `x + c` for a constant `c`.
pub fn add_scalar(x: &Tensor, c: f64) -> Result<Tensor> {
    unary(Unary::AddScalar, x, c)
}

impl Tensor {
    /// Nearest integer to each element, ties to even; see [`round`].
    pub fn round(&self) -> Result<Tensor> {
        round(self)
    }
    /// Rounded to `decimals` decimal digits; see [`round_decimals`].
    pub fn round_decimals(&self, decimals: i64) -> Result<Tensor> {
        round_decimals(self, decimals)
    }
    /// GELU (see [`gelu`]).
    pub fn gelu(&self, approximate_tanh: bool) -> Result<Tensor> {
        gelu(self, approximate_tanh)
    }
    /// `self^p` for a constant exponent.
    pub fn pow_scalar(&self, p: f64) -> Result<Tensor> {
        pow_scalar(self, p)
    }
    /// `self^exponent` elementwise with broadcasting.
    pub fn pow(&self, exponent: &Tensor) -> Result<Tensor> {
        pow(self, exponent)
    }
}
