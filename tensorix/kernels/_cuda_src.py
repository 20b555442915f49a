"""CUDA C++ sources of the fused kernels (CuPy ElementwiseKernel specs and RawKernel code).

Kept as data, apart from the launchers in ``_cuda.py``, so tests on machines without a GPU can
compile every kernel with ``nvcc`` (tests/test_devices.py) and run the elementwise ones on the
host with a C++ compiler against the NumPy path. The warp-per-row kernels (softmax family,
layer norm) have only been compiled, never run: docs/gpu.md.

Arithmetic is done in ``tx_acc<T>::type``: double for double data, float otherwise; every
elementwise kernel repeats its NumPy composite's float operations, so results agree to
rounding (the compiler may contract a*b+c into one FMA).
"""

from __future__ import annotations

__all__ = ["PREAMBLE", "ELEMENTWISE", "ROWS_SOURCE", "ROW_KERNELS"]

PREAMBLE = r"""
template <typename T> struct tx_acc { typedef float type; };
template <> struct tx_acc<double> { typedef double type; };
#define TX_GELU_K 0.7978845608028654
#define TX_GELU_C 0.044715
#define TX_GELU_3C 0.134145  /* 3 * C rounded once, as the NumPy path */
#define TX_SQRT1_2 0.7071067811865476
#define TX_INV_SQRT_2PI 0.3989422804014327
/* splitmix64: a counter-based hash, so element i of a dropout mask depends on (seed, i) only */
__device__ __forceinline__ unsigned long long tx_mix64(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
"""

# name -> (in_params, out_params, operation, scalar params). The scalar names matter only to
# the compile and host checks (CuPy tells arrays from scalars by the arguments).
ELEMENTWISE = {
    "tx_gelu_tanh": ("T x", "T y", r"""
        typedef typename tx_acc<T>::type A;
        A w = (A)x;
        A t = tanh((A)TX_GELU_K * (w + (A)TX_GELU_C * w * w * w));
        y = (T)((A)0.5 * w * ((A)1 + t));
    """, ()),
    "tx_gelu_erf": ("T x", "T y", r"""
        typedef typename tx_acc<T>::type A;
        A w = (A)x;
        y = (T)((A)0.5 * w * ((A)1 + erf(w * (A)TX_SQRT1_2)));
    """, ()),
    "tx_gelu_tanh_bwd": ("T x, T g", "T dx", r"""
        typedef typename tx_acc<T>::type A;
        A a = (A)x;
        A t = tanh((A)TX_GELU_K * (a + (A)TX_GELU_C * a * a * a));
        A d = (A)0.5 * ((A)1 + t) + (A)0.5 * a * ((A)1 - t * t) * (A)TX_GELU_K
              * ((A)1 + (A)TX_GELU_3C * a * a);
        dx = (T)((A)g * d);
    """, ()),
    "tx_gelu_erf_bwd": ("T x, T g", "T dx", r"""
        typedef typename tx_acc<T>::type A;
        A a = (A)x;
        A cdf = (A)0.5 * ((A)1 + erf(a * (A)TX_SQRT1_2));
        A pdf = exp(a * a * (A)-0.5) * (A)TX_INV_SQRT_2PI;
        dx = (T)((A)g * (cdf + a * pdf));
    """, ()),
    # Adam / AdamW in place, PyTorch's rule (amsgrad goes the xp way): decay_mul is
    # 1 - lr * weight_decay for AdamW and 1 otherwise; l2 is weight_decay for Adam, else 0.
    "tx_adam": ("T g, float64 beta1, float64 omb1, float64 beta2, float64 omb2, "
                "float64 lr_bc1, float64 bc2_sqrt, float64 eps, float64 l2, float64 decay_mul, "
                "bool maximize",
                "T p, T m, T v", r"""
        typedef typename tx_acc<T>::type A;
        A gi = maximize ? -(A)g : (A)g;
        A pi = (A)p;
        if (l2 != 0) gi = gi + (A)l2 * pi;
        pi = pi * (A)decay_mul;
        A mi = (A)m * (A)beta1 + (A)omb1 * gi;
        A vi = (A)v * (A)beta2 + gi * gi * (A)omb2;
        A denom = sqrt(vi) / (A)bc2_sqrt + (A)eps;
        p = (T)(pi - mi / denom * (A)lr_bc1);
        m = (T)mi;
        v = (T)vi;
    """, ("beta1", "omb1", "beta2", "omb2", "lr_bc1", "bc2_sqrt", "eps", "l2", "decay_mul",
          "maximize")),
    # dropout's scaled keep-mask: 24 random bits per element against p
    "tx_dropout_mask": ("uint64 seed, float64 p, float64 scale", "T mask", r"""
        unsigned long long h = tx_mix64(seed ^ tx_mix64((unsigned long long)i));
        double u = (double)(h >> 40) * (1.0 / 16777216.0);
        mask = u >= p ? (T)scale : (T)0;
    """, ("seed", "p", "scale")),
    # nll_loss backward for (N, C) log-probabilities: coeff[n, c] = scale[n] where c == t[n]
    "tx_nll_bwd": ("raw int64 t, raw T scale, int64 C", "T coeff", r"""
        long long n = i / C;
        coeff = ((long long)(i - n * C) == t[n]) ? scale[n] : (T)0;
    """, ("C",)),
}

# Row kernels: one warp (32 threads) per row of a C-contiguous (rows, cols) array, so the
# short rows of attention and of the loss (64..65 columns in the GPT benchmark) keep every
# lane busy; long rows loop. NaN handling follows the NumPy path: a NaN in a row makes the
# max NaN, and so the whole output row NaN.
ROWS_SOURCE = r"""
/* no #include: CuPy compiles RawKernels with NVRTC, which has no C library headers */
template <typename T> __device__ __forceinline__ T tx_neg_inf();
template <> __device__ __forceinline__ float tx_neg_inf<float>() {
    return __int_as_float(0xff800000);
}
template <> __device__ __forceinline__ double tx_neg_inf<double>() {
    return __longlong_as_double(0xfff0000000000000LL);
}

template <typename T> __device__ __forceinline__ T tx_warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <typename T> __device__ __forceinline__ T tx_warp_max(T v) {
    for (int o = 16; o > 0; o >>= 1) {
        T u = __shfl_xor_sync(0xffffffffu, v, o);
        v = (u > v || u != u) ? u : v;  /* NaN wins, like NumPy's max */
    }
    return v;
}

template <typename T, bool LOG>
__device__ void tx_softmax_rows(const T* __restrict__ x, T* __restrict__ y, long long rows,
                                long long cols) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    T m = tx_neg_inf<T>();
    for (long long c = lane; c < cols; c += 32) {
        T v = xr[c];
        m = (v > m || v != v) ? v : m;
    }
    m = tx_warp_max(m);
    T s = 0;
    for (long long c = lane; c < cols; c += 32) s += exp(xr[c] - m);
    s = tx_warp_sum(s);
    if (LOG) {
        T lse = log(s);
        for (long long c = lane; c < cols; c += 32) yr[c] = (xr[c] - m) - lse;
    } else {
        for (long long c = lane; c < cols; c += 32) yr[c] = exp(xr[c] - m) / s;
    }
}

/* backward, first order: softmax dx = y * (g - sum(g * y)); log_softmax dx = g - exp(y) sum(g) */
template <typename T, bool LOG>
__device__ void tx_softmax_bwd_rows(const T* __restrict__ y, const T* __restrict__ g,
                                    T* __restrict__ dx, long long rows, long long cols) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T* yr = y + row * cols;
    const T* gr = g + row * cols;
    T* dr = dx + row * cols;
    T s = 0;
    for (long long c = lane; c < cols; c += 32) s += LOG ? gr[c] : gr[c] * yr[c];
    s = tx_warp_sum(s);
    for (long long c = lane; c < cols; c += 32)
        dr[c] = LOG ? gr[c] - exp(yr[c]) * s : yr[c] * (gr[c] - s);
}

/* layer norm over the last `cols` elements: two passes (mean, then the mean square of the
   centred values, as the NumPy path), biased variance; w and b may be null */
template <typename T>
__device__ void tx_layernorm_rows(const T* __restrict__ x, const T* __restrict__ w,
                                  const T* __restrict__ b, T* __restrict__ y,
                                  T* __restrict__ mean, T* __restrict__ rstd, long long rows,
                                  long long cols, double eps) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    T s = 0;
    for (long long c = lane; c < cols; c += 32) s += xr[c];
    T mu = tx_warp_sum(s) / (T)cols;
    T q = 0;
    for (long long c = lane; c < cols; c += 32) {
        T d = xr[c] - mu;
        q += d * d;
    }
    T r = (T)1 / sqrt(tx_warp_sum(q) / (T)cols + (T)eps);
    for (long long c = lane; c < cols; c += 32) {
        T v = (xr[c] - mu) * r;
        if (w) v *= w[c];
        if (b) v += b[c];
        yr[c] = v;
    }
    if (lane == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

/* first-order backward: dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) with gh = g * w;
   gxhat = g * xhat is written for the weight gradient (summed over rows by the caller) */
template <typename T>
__device__ void tx_layernorm_bwd_rows(const T* __restrict__ g, const T* __restrict__ x,
                                      const T* __restrict__ w, const T* __restrict__ mean,
                                      const T* __restrict__ rstd, T* __restrict__ dx,
                                      T* __restrict__ gxhat, long long rows, long long cols) {
    long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T* gr = g + row * cols;
    const T* xr = x + row * cols;
    T mu = mean[row], r = rstd[row];
    T s1 = 0, s2 = 0;
    for (long long c = lane; c < cols; c += 32) {
        T xh = (xr[c] - mu) * r;
        T gh = w ? gr[c] * w[c] : gr[c];
        s1 += gh;
        s2 += gh * xh;
        if (gxhat) gxhat[row * cols + c] = gr[c] * xh;
    }
    T m1 = tx_warp_sum(s1) / (T)cols, m2 = tx_warp_sum(s2) / (T)cols;
    for (long long c = lane; c < cols; c += 32) {
        T xh = (xr[c] - mu) * r;
        T gh = w ? gr[c] * w[c] : gr[c];
        dx[row * cols + c] = r * (gh - m1 - xh * m2);
    }
}

#define TX_INSTANTIATE(T, S)                                                                   \
extern "C" __global__ void tx_softmax_##S(const T* x, T* y, long long rows, long long cols) {  \
    tx_softmax_rows<T, false>(x, y, rows, cols); }                                             \
extern "C" __global__ void tx_log_softmax_##S(const T* x, T* y, long long rows,               \
                                              long long cols) {                                \
    tx_softmax_rows<T, true>(x, y, rows, cols); }                                              \
extern "C" __global__ void tx_softmax_bwd_##S(const T* y, const T* g, T* dx, long long rows,  \
                                              long long cols) {                                \
    tx_softmax_bwd_rows<T, false>(y, g, dx, rows, cols); }                                     \
extern "C" __global__ void tx_log_softmax_bwd_##S(const T* y, const T* g, T* dx,              \
                                                  long long rows, long long cols) {            \
    tx_softmax_bwd_rows<T, true>(y, g, dx, rows, cols); }                                      \
extern "C" __global__ void tx_layernorm_##S(const T* x, const T* w, const T* b, T* y,         \
                                            T* mean, T* rstd, long long rows, long long cols,  \
                                            double eps) {                                      \
    tx_layernorm_rows<T>(x, w, b, y, mean, rstd, rows, cols, eps); }                           \
extern "C" __global__ void tx_layernorm_bwd_##S(const T* g, const T* x, const T* w,           \
                                                const T* mean, const T* rstd, T* dx,           \
                                                T* gxhat, long long rows, long long cols) {    \
    tx_layernorm_bwd_rows<T>(g, x, w, mean, rstd, dx, gxhat, rows, cols); }

TX_INSTANTIATE(float, f32)
TX_INSTANTIATE(double, f64)
"""

ROW_KERNELS = ("tx_softmax", "tx_log_softmax", "tx_softmax_bwd", "tx_log_softmax_bwd",
               "tx_layernorm", "tx_layernorm_bwd")
