"""Planning past this machine: per-GPU memory and step time of a GPT training layout, from an
alpha-beta communication model and the device's FLOP rate, and a search for the best layout.

``plan(model, cluster)`` tries every data x tensor x pipeline split (with micro-batch size,
interleaving, ZeRO stage and activation recomputation) that fits in memory and returns them
fastest first; ``estimate(model, cluster, layout)`` gives one with its breakdown. The model:

- FLOPs per step, Megatron-LM's count: ``72 B s l h^2 (1 + s/6h + V/12lh)`` for forward and
  backward, x 4/3 with full recomputation; GEMMs run at ``gemm_efficiency`` of peak. Memory-bound
  work (layer norms, softmax, GELU, dropout, residuals) moves about ``34 s b h + 5 a s^2 b``
  bytes per layer and pass (Korthikanti et al.), at the HBM bandwidth.
- Tensor parallelism: 2 all-reduces of ``b s h`` 16-bit values per layer forward and 2 backward
  (and 2 more to recompute) inside a node; pipeline: ``(m + (p-1)/v)`` micro-batch slots per
  step, with point-to-point activations between nodes; data parallelism: one all-reduce of the
  16-bit gradients per step (ZeRO-1/2: a reduce-scatter and an all-gather, ZeRO-3 adds one more
  all-gather), not overlapped. A ring collective over n ranks moving ``S`` bytes costs
  ``2(n-1)/n S / bandwidth + 2(n-1) alpha`` (all-reduce; half for the others).
- Memory: mixed-precision Adam keeps 16 bytes per parameter (2 weight, 2 gradient, 12 fp32
  master and moments), divided by the ZeRO stage; activations are the layer inputs of every
  micro-batch in flight (1F1B: p on the first stage) with full recomputation, all of each
  layer's ``34 s b h + 5 a s^2 b`` bytes (over t) without.

``published_runs()`` lists the Megatron-LM runs (Narayanan et al., SC'21, Table 1: GPT-3
style models from 1.7 B to 1 T parameters on up to 3072 A100s) to compare predictions with.

Example::

    gpt = ModelConfig(layers=128, hidden=25600, heads=160, seq_len=2048, vocab=51200,
                      global_batch=3072)
    best = plan(gpt, Cluster(n_gpus=3072))[0]
    print(best.layout, best.tflops_per_gpu, best.memory_gb)
"""

from __future__ import annotations

import dataclasses
import itertools

__all__ = ["ModelConfig", "Cluster", "Layout", "Estimate", "estimate", "plan", "published_runs"]


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A GPT: ``layers`` blocks of width ``hidden``, ``heads`` attention heads, trained on
    ``global_batch`` sequences of ``seq_len`` tokens over a ``vocab``-word vocabulary."""
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    global_batch: int

    @property
    def params(self) -> float:
        l, h = self.layers, self.hidden
        return 12 * l * h * h * (1 + 13 / (12 * h) + (self.vocab + self.seq_len) / (12 * l * h))

    def flops(self, recompute: bool = True) -> float:
        """FLOPs of one training step (forward + backward, plus a forward to recompute)."""
        b, s, l, h = self.global_batch, self.seq_len, self.layers, self.hidden
        base = 72 * b * s * l * h * h * (1 + s / (6 * h) + self.vocab / (12 * l * h))
        return base * (4 / 3 if recompute else 1)


@dataclasses.dataclass(frozen=True)
class Cluster:
    """GPUs (default: DGX A100 80 GB nodes with NVLink and 8 x 200 Gb/s InfiniBand, as
    Selene): peak 16-bit FLOP/s, memory, HBM bandwidth, per-GPU link bandwidths (bytes/s, one
    direction) and latencies inside and between nodes."""
    n_gpus: int
    gpus_per_node: int = 8
    peak_flops: float = 312e12
    memory: float = 80e9
    hbm_bandwidth: float = 2.0e12
    intra_bandwidth: float = 300e9
    inter_bandwidth: float = 25e9
    intra_alpha: float = 5e-6
    inter_alpha: float = 10e-6
    gemm_efficiency: float = 0.8


@dataclasses.dataclass(frozen=True)
class Layout:
    """``dp x tp x pp`` GPUs; ``micro_batch`` sequences per micro-batch; ``virtual`` stages per
    rank (interleaved 1F1B); ``zero`` stage 0-3; ``recompute``: full activation recomputation;
    ``sequence_parallel``."""
    dp: int
    tp: int
    pp: int
    micro_batch: int = 1
    virtual: int = 1
    zero: int = 1
    recompute: bool = True
    sequence_parallel: bool = False


@dataclasses.dataclass(frozen=True)
class Estimate:
    layout: Layout
    step_time: float
    memory_gb: float
    tflops_per_gpu: float
    breakdown: dict

    @property
    def fits(self) -> bool:
        return self.breakdown["fits"]


def _ring(n, size, bandwidth, alpha, allreduce=True):
    if n <= 1:
        return 0.0
    k = 2 if allreduce else 1
    return k * (n - 1) / n * size / bandwidth + k * (n - 1) * alpha


def estimate(model: ModelConfig, cluster: Cluster, layout: Layout) -> Estimate:
    """Step time (s), memory per GPU and achieved TFLOP/s per GPU of ``layout``."""
    dp, tp, pp, b, v = layout.dp, layout.tp, layout.pp, layout.micro_batch, layout.virtual
    if dp * tp * pp != cluster.n_gpus:
        raise ValueError(f"estimate(): dp {dp} x tp {tp} x pp {pp} != {cluster.n_gpus} GPUs")
    s, h, a, l = model.seq_len, model.hidden, model.heads, model.layers
    m = model.global_batch // (dp * b)  # micro-batches per pipeline and step
    layers = l / pp  # per GPU
    # -- one micro-batch through one stage (all its virtual stages) ----------------------------
    flops = model.flops(layout.recompute) / cluster.n_gpus / m
    gemm = flops / (cluster.peak_flops * cluster.gemm_efficiency)
    passes = 4 if layout.recompute else 3  # forward, backward (x2), recompute forward
    moved = (34 * s * b * h + 5 * a * s * s * b) / tp * layers * passes
    memory_bound = moved / cluster.hbm_bandwidth
    act = 2 * b * s * h  # one activation, 16-bit
    n_allreduce = (6 if layout.recompute else 4) * layers
    tp_link = (cluster.intra_bandwidth, cluster.intra_alpha) if tp <= cluster.gpus_per_node \
        else (cluster.inter_bandwidth, cluster.inter_alpha)
    tp_comm = n_allreduce * _ring(tp, act, *tp_link)
    pp_comm = (2 * act / tp / cluster.inter_bandwidth + 2 * cluster.inter_alpha) * v \
        if pp > 1 else 0.0
    slot = gemm + memory_bound + tp_comm + pp_comm
    pipeline = (m + (pp - 1) / v) * slot
    # -- once per step: gradients and the optimizer ---------------------------------------------
    local_params = model.params / (tp * pp)
    grads = 2 * local_params
    if layout.zero == 0:
        dp_comm = _ring(dp, grads, cluster.inter_bandwidth, cluster.inter_alpha)
    else:  # reduce-scatter the gradients, all-gather the updated weights (+1 gather: ZeRO-3)
        gathers = 2 if layout.zero == 3 else 1
        dp_comm = (1 + gathers) * _ring(dp, grads, cluster.inter_bandwidth,
                                        cluster.inter_alpha, allreduce=False)
    states = {0: 16, 1: 4 + 12 / dp, 2: 2 + 14 / dp, 3: 16 / dp}[layout.zero] * local_params
    optimizer = 3 * states / cluster.hbm_bandwidth  # memory bound: read and write the states
    step = pipeline + dp_comm + optimizer
    # -- memory ---------------------------------------------------------------------------------
    in_flight = min(pp, m) if pp > 1 else 1  # 1F1B on the first stage
    per_layer_full = (34 * s * b * h + 5 * a * s * s * b) / tp
    if layout.recompute:
        inputs = act / (tp if layout.sequence_parallel else 1) * layers * in_flight
        activations = inputs + per_layer_full  # plus one layer being recomputed
    else:
        activations = per_layer_full * layers * in_flight
    memory = states + activations
    achieved = model.flops(recompute=True) / cluster.n_gpus / step / 1e12
    parts = dict(gemm=gemm * m, memory_bound=memory_bound * m,
                 tp_comm=tp_comm * m, pp_comm=pp_comm * m,
                 bubble=(pp - 1) / v * slot, dp_comm=dp_comm, optimizer=optimizer,
                 states_gb=states / 1e9, activations_gb=activations / 1e9,
                 fits=memory <= cluster.memory, microbatches=m)
    return Estimate(layout, step, memory / 1e9, achieved, parts)


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def plan(model: ModelConfig, cluster: Cluster, max_tp=None, zero_stages=(0, 1, 2, 3),
         micro_batches=(1, 2, 4, 8), virtual=(1, 2, 4)) -> list:
    """Every layout that fits in memory, fastest first (tensor parallelism within a node,
    pipeline stages dividing the layers, heads divisible by tp)."""
    max_tp = max_tp or cluster.gpus_per_node
    found = []
    for tp, pp in itertools.product(_divisors(cluster.n_gpus), _divisors(model.layers)):
        if tp > max_tp or model.heads % tp or cluster.n_gpus % (tp * pp):
            continue
        dp = cluster.n_gpus // (tp * pp)
        for b, v, zero, rc in itertools.product(micro_batches, virtual, zero_stages,
                                                (True, False)):
            if model.global_batch % (dp * b) or (v > 1 and (pp == 1 or
                                                            (model.layers // pp) % v)):
                continue
            m = model.global_batch // (dp * b)
            if v > 1 and m % pp:
                continue
            est = estimate(model, cluster, Layout(dp, tp, pp, b, v, zero, rc, tp > 1))
            if est.fits:
                found.append(est)
    return sorted(found, key=lambda e: e.step_time)


def published_runs():
    """Megatron-LM's weak-scaling runs (Narayanan et al., "Efficient Large-Scale Language
    Model Training on GPU Clusters Using Megatron-LM", SC'21, Table 1): (model, cluster,
    layout, published TFLOP/s per GPU). Sequence 2048, vocabulary 51200, A100 80 GB, full
    recomputation, interleaving where pipelined, mixed-precision Adam (ZeRO off)."""
    rows = [  # params B, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s per GPU
        (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
        (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
        (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
        (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
        (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
        (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
        (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
        (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
        (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
        (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
    ]
    out = []
    for size, heads, hidden, layers, tp, pp, gpus, batch, tflops in rows:
        model = ModelConfig(layers, hidden, heads, 2048, 51200, batch)
        layout = Layout(gpus // (tp * pp), tp, pp, micro_batch=1, zero=0, recompute=True)
        out.append((f"{size:g}B", model, Cluster(n_gpus=gpus), layout, tflops))
    return out
