//! The float32 `erf` and `exp` the elementwise kernels use (exact GELU forward and backward)
//! live in [`crate::fastmath`], below both the dtype layer (`Element::erf`) and the kernels,
//! so that `dtype` does not depend on `cpu`; they are re-exported here for the kernels. The
//! tests of the GELU kernels built on them stay here.

pub use crate::fastmath::{erf, exp};

#[cfg(test)]
mod tests {
    // Tests panic on failure by design.
    #![allow(clippy::unwrap_used)]

    /// `0.5 x (1 + erf(x / sqrt 2))` and its derivative `Phi(x) + x phi(x)`, in f64.
    fn gelu64(x: f64) -> (f64, f64) {
        let cdf = 0.5 * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2));
        let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        (x * cdf, cdf + x * pdf)
    }

    /// 1.2M float32 inputs over [-12, 12) (parallel wide kernels), plus special values.
    fn gelu_inputs() -> Vec<f32> {
        let mut x: Vec<f32> = (-600_000..600_000).map(|i| i as f32 * 2e-5).collect();
        x.extend([
            0.0,
            -0.0,
            1e-30,
            -1e-30,
            30.0,
            -30.0,
            1e30,
            -1e30,
            f32::MIN_POSITIVE,
        ]);
        x
    }

    #[test]
    fn gelu_f32_matches_f64_reference() {
        use crate::{autograd, ops, Tensor};
        let xs = gelu_inputs();
        let n = xs.len();
        let x = Tensor::from_vec(xs.clone(), &[n]).unwrap();
        x.set_requires_grad(true).unwrap();
        let gs: Vec<f32> = (0..n).map(|i| 1.0 - (i % 7) as f32 * 0.25).collect();
        let g = Tensor::from_vec(gs.clone(), &[n]).unwrap();
        let y = ops::gelu(&x, false).unwrap();
        let gx = autograd::grad(std::slice::from_ref(&y), &[x], Some(&[Some(g)]), false).unwrap();
        let (y, gx) = (y.to_vec::<f32>(), gx[0].as_ref().unwrap().to_vec::<f32>());
        let (mut worst_y, mut worst_g) = (0f64, 0f64);
        for i in 0..n {
            let (want_y, want_d) = gelu64(xs[i] as f64);
            let want_g = gs[i] as f64 * want_d;
            // Relative to max(1, |value|): the 1 + erf form carries absolute error near 0.
            let ey = (y[i] as f64 - want_y).abs() / want_y.abs().max(1.0);
            let eg = (gx[i] as f64 - want_g).abs() / want_g.abs().max(1.0);
            assert!(ey <= 4e-7, "gelu({}) = {}, expected {want_y}", xs[i], y[i]);
            assert!(
                eg <= 4e-7,
                "gelu'({}) g = {}, expected {want_g}",
                xs[i],
                gx[i]
            );
            worst_y = worst_y.max(ey);
            worst_g = worst_g.max(eg);
        }
        println!("gelu f32: max error {worst_y:e} (forward), {worst_g:e} (backward)");
        // Limits and signs: gelu(inf) = inf, NaN stays NaN, gelu(-0) = -0. (gelu(-inf) is
        // -inf * 0 = NaN in this form, as before.)
        let special = [f32::NEG_INFINITY, f32::INFINITY, f32::NAN, -0.0];
        let y = ops::gelu(&Tensor::from_vec(special.to_vec(), &[4]).unwrap(), false).unwrap();
        let y = y.to_vec::<f32>();
        assert_eq!(y[1], f32::INFINITY);
        assert!(y[2].is_nan());
        assert_eq!(y[3].to_bits(), (-0f32).to_bits());
    }

    #[test]
    fn gelu_f32_strided_matches_contiguous() {
        // A transposed view takes the generic (per-element) kernels; results are bit-identical
        // to the wide contiguous ones.
        use crate::{ops, Tensor};
        let xs: Vec<f32> = (0..300 * 200)
            .map(|i| (i as f32 * 0.618).sin() * 7.0)
            .collect();
        let x = Tensor::from_vec(xs, &[300, 200]).unwrap();
        let xt = ops::transpose(&x, 0, 1).unwrap();
        assert!(!xt.is_contiguous());
        let strided = ops::gelu(&xt, false).unwrap().to_vec::<f32>();
        let xt_copy = Tensor::from_vec(xt.to_vec::<f32>(), &[200, 300]).unwrap();
        let contiguous = ops::gelu(&xt_copy, false).unwrap().to_vec::<f32>();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&strided), bits(&contiguous));
    }
}
