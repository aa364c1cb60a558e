//! `repr(tensor)`, printed as PyTorch 2.x prints the same tensor with its default print
//! options (`torch/_tensor_str.py`), except that the dtype suffix says `remat.`:
//! `tensor([1.0000, 2.5000])`, `tensor([[1., 2.]], requires_grad=True)`.
//!
//! The steps follow PyTorch's so that every corner agrees: one [`Formatter`] picks a style
//! and a width from the elements that will be printed, [`Printer`] lays the nested lists out
//! (summarizing with `...` past [`THRESHOLD`] elements and wrapping rows at [`LINE_WIDTH`]),
//! and [`add_suffixes`] appends `device=`, `size=`, `dtype=` and the autograd note.

use crate::errors::CoreResultExt;
use pyo3::prelude::*;
use remat_core::{DType, Device, Tensor};

/// Digits after the point (PyTorch's `precision`).
const PRECISION: usize = 4;
/// More elements than this and the print is summarized (`threshold`).
const THRESHOLD: usize = 1000;
/// Rows kept at each end of a summarized dimension (`edgeitems`).
const EDGE_ITEMS: usize = 3;
/// Where lines wrap (`linewidth`).
const LINE_WIDTH: usize = 80;
/// The text before the values; continuation lines are indented by its length.
const PREFIX: &str = "tensor(";

/// The text of `repr(t)` (and `str(t)`).
pub fn repr(t: &Tensor) -> PyResult<String> {
    let indent = PREFIX.len();
    let body = if t.numel() == 0 {
        "[]".to_string()
    } else {
        // Device tensors print from a host copy; detached so the summary ops record nothing.
        values_text(&crate::tensor::host(t)?.detach(), indent)?
    };
    Ok(add_suffixes(
        format!("{PREFIX}{body}"),
        &suffixes(t),
        indent,
    ))
}

// ------------------------------------------------------------------ values

/// The nested-list text of a non-empty host tensor whose first line starts at `indent`.
fn values_text(t: &Tensor, indent: usize) -> PyResult<String> {
    let summarize = t.numel() > THRESHOLD;
    // Only the printed elements are read, and only they decide the style and width, as
    // PyTorch's `get_summarized_data` does.
    let shown = if summarize { edge_items(t)? } else { t.clone() };
    let elements = Elements::read(&shown)?;
    let printer = Printer {
        formatter: Formatter::new(&elements),
        shape: t.shape(),
        strides: c_strides(shown.shape()),
        summarize,
    };
    Ok(printer.block(0, 0, indent))
}

/// `t` cut down to the first and last [`EDGE_ITEMS`] entries of every dimension longer than
/// twice that (the elements a summarized print shows).
fn edge_items(t: &Tensor) -> PyResult<Tensor> {
    let mut out = t.clone();
    for (dim, &len) in t.shape().iter().enumerate() {
        if is_cut(len, true) {
            let keep: Vec<i64> = (0..EDGE_ITEMS)
                .chain(len - EDGE_ITEMS..len)
                .map(|i| i as i64)
                .collect();
            let idx = Tensor::from_vec(keep, &[2 * EDGE_ITEMS]).py()?;
            out = remat_core::ops::index_select(&out, dim as isize, &idx).py()?;
        }
    }
    Ok(out)
}

/// Whether a dimension of length `len` prints as its edges around `...`.
fn is_cut(len: usize, summarize: bool) -> bool {
    summarize && len > 2 * EDGE_ITEMS
}

/// The entries of a dimension of length `len` in print order, as positions in the (cut)
/// data; `None` marks the `...`.
fn positions(len: usize, summarize: bool) -> Vec<Option<usize>> {
    if is_cut(len, summarize) {
        let head = (0..EDGE_ITEMS).map(Some);
        let tail = (EDGE_ITEMS..2 * EDGE_ITEMS).map(Some);
        head.chain(std::iter::once(None)).chain(tail).collect()
    } else {
        (0..len).map(Some).collect()
    }
}

/// Row-major strides of a contiguous tensor of `shape`, in elements.
fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Lays out the nested lists of one tensor: `shape` is the full shape (it decides where
/// `...` goes), `strides` index the elements actually read.
struct Printer<'a> {
    formatter: Formatter<'a>,
    shape: &'a [usize],
    strides: Vec<usize>,
    summarize: bool,
}

impl Printer<'_> {
    /// The sub-tensor that starts at dimension `dim` and element `offset`, its first line
    /// starting at column `indent` (PyTorch's `_tensor_str_with_formatter`).
    fn block(&self, dim: usize, offset: usize, indent: usize) -> String {
        match self.shape.len() - dim {
            0 => self.formatter.format(offset),
            1 => self.vector(dim, offset, indent),
            rank => {
                let parts: Vec<String> = positions(self.shape[dim], self.summarize)
                    .into_iter()
                    .map(|p| match p {
                        Some(i) => self.block(dim + 1, offset + i * self.strides[dim], indent + 1),
                        None => "...".to_string(),
                    })
                    .collect();
                // Deeper blocks are set apart by more blank lines, as in PyTorch.
                let sep = format!(",{}{}", "\n".repeat(rank - 1), " ".repeat(indent + 1));
                format!("[{}]", parts.join(&sep))
            }
        }
    }

    /// The last dimension: as many elements per line as fit in [`LINE_WIDTH`] (at least
    /// one), continuation lines aligned after the `[` (PyTorch's `_vector_str`).
    fn vector(&self, dim: usize, offset: usize, indent: usize) -> String {
        let items: Vec<String> = positions(self.shape[dim], self.summarize)
            .into_iter()
            .map(|p| match p {
                Some(i) => self.formatter.format(offset + i * self.strides[dim]),
                None => " ...".to_string(),
            })
            .collect();
        let per_line = elements_per_line(self.formatter.width + 2, indent);
        let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
        format!(
            "[{}]",
            lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
        )
    }
}

/// How many elements of `element_len` characters (comma and space included) fit on a line
/// that starts at column `indent`; at least one, however deep the indent.
fn elements_per_line(element_len: usize, indent: usize) -> usize {
    let room = LINE_WIDTH as isize - indent as isize;
    room.div_euclid(element_len as isize).max(1) as usize
}

// ------------------------------------------------------------------ elements

/// The printed elements in C order, widened as Python's `.tolist()` would (float32 values
/// print from their exact float64 value).
enum Elements {
    Float(Vec<f64>),
    Int(Vec<i64>),
    Bool(Vec<bool>),
}

impl Elements {
    fn read(t: &Tensor) -> PyResult<Elements> {
        Ok(match t.dtype() {
            DType::F32 | DType::F64 | DType::BF16 | DType::F16 => {
                Elements::Float(t.try_to_vec::<f64>().py()?)
            }
            DType::I64 | DType::I32 => Elements::Int(t.try_to_vec::<i64>().py()?),
            DType::Bool => {
                let v = t.try_to_vec::<i64>().py()?;
                Elements::Bool(v.into_iter().map(|b| b != 0).collect())
            }
        })
    }
}

/// How every float of one tensor prints (PyTorch's `int_mode` / `sci_mode`).
#[derive(Clone, Copy)]
enum FloatStyle {
    /// All values are whole numbers: `1.`, `-3.`.
    Integral,
    /// `1.2500`.
    Fixed,
    /// `1.2346e+08`, when the magnitudes are too far apart, too large or too small.
    Scientific,
}

/// One style and one width for all elements of a tensor, so the columns line up.
struct Formatter<'a> {
    elements: &'a Elements,
    style: FloatStyle,
    width: usize,
}

impl<'a> Formatter<'a> {
    fn new(elements: &'a Elements) -> Formatter<'a> {
        let (style, width) = match elements {
            Elements::Float(v) => float_style_and_width(v),
            Elements::Int(v) => (FloatStyle::Fixed, max_len(v.iter().map(|x| x.to_string()))),
            Elements::Bool(v) => (FloatStyle::Fixed, max_len(v.iter().map(|&b| bool_text(b)))),
        };
        Formatter {
            elements,
            style,
            width,
        }
    }

    /// Element `i`, right-aligned to the common width.
    fn format(&self, i: usize) -> String {
        let text = match self.elements {
            Elements::Float(v) => float_text(v[i], self.style),
            Elements::Int(v) => v[i].to_string(),
            Elements::Bool(v) => bool_text(v[i]).to_string(),
        };
        format!("{text:>width$}", width = self.width)
    }
}

/// The longest of `texts`, and at least 1 (PyTorch's starting `max_width`).
fn max_len<S: AsRef<str>>(texts: impl Iterator<Item = S>) -> usize {
    texts.map(|s| s.as_ref().len()).fold(1, usize::max)
}

fn bool_text(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The style and width of a float tensor, decided by its nonzero finite values only (zeros
/// and non-finite values print in whatever style the others chose).
fn float_style_and_width(values: &[f64]) -> (FloatStyle, usize) {
    let nonzero_finite: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v != 0.0)
        .collect();
    if nonzero_finite.is_empty() {
        return (FloatStyle::Integral, 1);
    }
    let style = float_style(&nonzero_finite);
    (
        style,
        max_len(nonzero_finite.iter().map(|&v| float_text(v, style))),
    )
}

/// PyTorch's choice: scientific when the magnitudes span more than 1000x, exceed 1e8 or go
/// below 1e-4; else whole numbers without decimals when every value is one.
fn float_style(nonzero_finite: &[f64]) -> FloatStyle {
    let abs = nonzero_finite.iter().map(|v| v.abs());
    let max = abs.clone().fold(f64::MIN, f64::max);
    let min = abs.fold(f64::MAX, f64::min);
    if max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4 {
        FloatStyle::Scientific
    } else if nonzero_finite.iter().all(|v| *v == v.ceil()) {
        FloatStyle::Integral
    } else {
        FloatStyle::Fixed
    }
}

/// One float as Python formats it: `nan`, `inf`, `-inf` whatever the style.
fn float_text(v: f64, style: FloatStyle) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's and Python's fixed formatting both round the exact binary value half-to-even,
    // so the digits agree; only the exponent is spelled differently.
    match style {
        FloatStyle::Integral => format!("{v:.0}."),
        FloatStyle::Fixed => format!("{v:.PRECISION$}"),
        FloatStyle::Scientific => python_exponent(&format!("{v:.PRECISION$e}")),
    }
}

/// Rust's `1.2346e8` / `1.0000e-5` as Python's `1.2346e+08` / `1.0000e-05` (a sign and at
/// least two digits).
fn python_exponent(rust: &str) -> String {
    let (mantissa, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    let (sign, digits) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

// ------------------------------------------------------------------ suffixes

/// What follows the values, in PyTorch's order: device, size (empty tensors), dtype, and
/// the autograd note.
fn suffixes(t: &Tensor) -> Vec<String> {
    let mut out = Vec::new();
    if t.device() != Device::Cpu {
        out.push(format!("device='{}'", t.device()));
    }
    // An empty 1-D tensor reads back from `[]`; other empty shapes must be spelled out.
    if t.numel() == 0 && t.ndim() != 1 {
        out.push(format!("size={}", python_tuple(t.shape())));
    }
    if dtype_is_shown(t) {
        out.push(format!("dtype=remat.{}", t.dtype()));
    }
    match t.grad_fn() {
        Some(node) => out.push(format!("grad_fn=<{}>", node.name())),
        None if t.requires_grad() => out.push("requires_grad=True".to_string()),
        None => {}
    }
    out
}

/// As PyTorch: the dtypes a literal would not infer (the float that is not the default one,
/// int32) are spelled out; an empty tensor has no elements to infer from, so any dtype but
/// the default float is.
fn dtype_is_shown(t: &Tensor) -> bool {
    let default = DType::default_float();
    if t.numel() == 0 {
        t.dtype() != default
    } else {
        t.dtype() == DType::I32 || (t.dtype().is_float() && t.dtype() != default)
    }
}

/// `(0, 3)`, and `(0,)` for one dimension, as Python prints a tuple.
fn python_tuple(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let trail = if dims.len() == 1 { "," } else { "" };
    format!("({}{trail})", dims.join(", "))
}

/// `text` with `, suffix` appended for each suffix and the closing `)`; a suffix that would
/// push the last line past [`LINE_WIDTH`] starts a new line at `indent` instead.
fn add_suffixes(text: String, suffixes: &[String], indent: usize) -> String {
    // PyTorch's measure (`len - rfind('\n') + 1`), two more than the line's length.
    let mut last_line_len = match text.rfind('\n') {
        Some(p) => text.len() - p + 1,
        None => text.len() + 2,
    };
    let mut out = text;
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > LINE_WIDTH {
            out.push_str(&format!(",\n{}{suffix}", " ".repeat(indent)));
            last_line_len = indent + suffix.len();
        } else {
            out.push_str(&format!(", {suffix}"));
            last_line_len += suffix.len() + 2;
        }
    }
    out.push(')');
    out
}
