"""torch's top-level names against tensorix's: every public callable in ``dir(torch)`` is
either in tensorix (``import tensorix as torch`` finds it) or listed here with the reason it is
left out, so a name torch adds, or one tensorix gains, shows up as a failure to act on. Also the
small top-level functions added for drop-in use, and cdist's zero-distance gradient."""

import numpy as np
import pytest

import tensorix as tx

torch = pytest.importorskip("torch")

# (reason, names) - grouped; each name must be absent from tensorix and present in torch
LEFT_OUT = [
    ('TorchScript/JIT internals: tensorix has no TorchScript (graph capture is tensorix.compile)',
     """
    AggregationType AliasDb AnyType Argument ArgumentSpec AwaitType BenchmarkConfig
    BenchmarkExecutionStats Block BoolType CallStack Capsule ClassType Code
    CompilationUnit CompleteArgumentSpec ComplexType ConcreteModuleType
    ConcreteModuleTypeBuilder DeepCopyMemoTable DeviceObjType DictType EnumType
    ErrorReport ExecutionPlan FileCheck FloatType FunctionSchema Future FutureType
    Gradient Graph GraphExecutorState IODescriptor InferredType IntType InterfaceType
    JITException ListType LiteScriptModule LockingLogger LoggerBase Node NoneType
    NoopLogger NumberType OperatorInfo OptionalType PyObjectType RRefType ScriptClass
    ScriptClassFunction ScriptDict ScriptDictIterator ScriptDictKeyIterator
    ScriptFunction ScriptList ScriptListIterator ScriptMethod ScriptModule
    ScriptModuleSerializer ScriptObject ScriptObjectProperty StaticModule StreamObjType
    StringType TensorType ThroughputBenchmark TracingState TupleType Type UnionType Use
    Value fork import_ir_module import_ir_module_from_buffer
    merge_type_from_type_comment parse_ir parse_schema parse_type_comment
    unify_type_list wait
     """),
    ('torch.compile, dispatcher and build internals (torch.compile is owned by the compile issue)',
     """
    DisableTorchFunction DisableTorchFunctionSubclass DispatchKey DispatchKeySet
    ExcludeDispatchKeyGuard Tag classproperty compiled_with_cxx11_abi cond
    get_device_module get_file_path hash_tensor is_distributed memory_format
    prepare_multiprocessing_environment
    profiler_allow_cudagraph_cupti_lazy_reinit_cuda12 thread_safe_generator while_loop
     """),
    ('symbolic shapes of torch.compile/torch.export',
     """
    SymBool SymBoolType SymFloat SymInt SymIntType sym_constrain_range
    sym_constrain_range_for_size sym_float sym_fresh_size sym_int sym_ite sym_max
    sym_min sym_not sym_sqrt sym_sum
     """),
    ('typed storages: a tensorix Tensor owns a NumPy/CuPy array (Tensor.numpy(), '
     'tensorix.from_numpy)',
     """
    BFloat16Storage BoolStorage ByteStorage CharStorage ComplexDoubleStorage
    ComplexFloatStorage DoubleStorage FloatStorage HalfStorage IntStorage LongStorage
    QInt32Storage QInt8Storage QUInt2x4Storage QUInt4x2Storage QUInt8Storage
    ShortStorage Storage StorageBase TypedStorage UntypedStorage from_file is_storage
     """),
    ('legacy typed-tensor classes: use tensorix.tensor(data, dtype=...) and isinstance(x, '
     'tensorix.Tensor)',
     """
    BFloat16Tensor BoolTensor ByteTensor CharTensor DoubleTensor FloatTensor HalfTensor
    IntTensor LongTensor ShortTensor
     """),
    ('quantized tensors: tensorix.quant works on float tensors with explicit scales',
     """
    choose_qparams_optimized dequantize empty_quantized fake_quantize_per_channel_affine
    fake_quantize_per_tensor_affine fbgemm_linear_fp16_weight
    fbgemm_linear_fp16_weight_fp32_activation fbgemm_linear_int8_weight
    fbgemm_linear_int8_weight_fp32_activation fbgemm_linear_quantize_weight
    fbgemm_pack_gemm_matrix_fp16 fbgemm_pack_quantized_matrix
    fused_moving_avg_obs_fake_quant int_repr q_per_channel_axis q_per_channel_scales
    q_per_channel_zero_points q_scale q_zero_point qscheme quantize_per_channel
    quantize_per_tensor quantize_per_tensor_dynamic quantized_batch_norm quantized_gru
    quantized_gru_cell quantized_lstm quantized_lstm_cell quantized_max_pool1d
    quantized_max_pool2d quantized_max_pool3d quantized_rnn_relu_cell
    quantized_rnn_tanh_cell
     """),
    ('sparse tensors: not supported',
     """
    ccol_indices_copy col_indices_copy crow_indices_copy dsmm hsmm hspmm indices_copy
    resize_as_sparse_ row_indices_copy saddmm smm sparse_bsc_tensor sparse_bsr_tensor
    sparse_compressed_tensor sparse_coo_tensor sparse_csc_tensor sparse_csr_tensor spmm
    sspaddmm values_copy
     """),
    ('backend kernel entry points that torch.nn calls internally: use the tensorix.nn '
     'module or nn.functional function',
     """
    affine_grid_generator batch_norm_backward_elemt batch_norm_backward_reduce
    batch_norm_elemt batch_norm_gather_stats batch_norm_gather_stats_with_counts
    batch_norm_stats batch_norm_update_stats constant_pad_nd conv_tbc convolution
    cudnn_affine_grid_generator cudnn_batch_norm cudnn_convolution
    cudnn_convolution_add_relu cudnn_convolution_relu cudnn_convolution_transpose
    cudnn_grid_sampler cudnn_is_acceptable embedding_renorm_ feature_dropout
    feature_dropout_ grid_sampler grid_sampler_2d grid_sampler_3d gru gru_cell
    is_vulkan_available lstm lstm_cell miopen_batch_norm miopen_convolution
    miopen_convolution_add_relu miopen_convolution_relu miopen_convolution_transpose
    miopen_ctc_loss miopen_depthwise_convolution miopen_rnn mkldnn_adaptive_avg_pool2d
    mkldnn_convolution mkldnn_linear_backward_weights mkldnn_max_pool2d
    mkldnn_max_pool3d mkldnn_rnn_layer native_batch_norm native_channel_shuffle
    native_dropout native_group_norm native_layer_norm native_norm norm_except_dim
    rnn_relu rnn_relu_cell rnn_tanh rnn_tanh_cell
     """),
    ('view-copy variants (functionalization detail): use the view op and .clone()',
     """
    alias_copy as_strided_copy detach_copy diagonal_copy expand_copy permute_copy
    select_copy slice_copy split_copy split_with_sizes_copy squeeze_copy t_copy
    transpose_copy unbind_copy unfold_copy unsqueeze_copy view_as_complex_copy
    view_as_real_copy view_copy
     """),
    ('in-place functional spellings: use the Tensor method (x.op_()), which tensorix has',
     """
    abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_
    as_strided_ asin_ asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_
    conj_physical_ cos_ cosh_ deg2rad_ detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_
    floor_ frac_ gcd_ i0_ index_put_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_
    nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ resize_as_ round_ rsqrt_
    sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_
     """),
    ('in-place functional spellings of nn.functional ops: use nn.functional.<op>(x, inplace=True)',
     """
    alpha_dropout_ celu_ dropout_ feature_alpha_dropout_ rrelu_ selu_ threshold_
     """),
    ("torch's top-level loss kernels take reduction as an int enum: use "
     "tensorix.nn.functional.<name>",
     """
    binary_cross_entropy_with_logits cosine_embedding_loss ctc_loss hinge_embedding_loss
    kl_div margin_ranking_loss poisson_nll_loss triplet_margin_loss
     """),
    ("top-level kernels whose argument order or return differs from nn.functional's: use "
     "tensorix.nn.functional.<name>",
     """
    adaptive_max_pool1d batch_norm embedding embedding_bag instance_norm
    max_pool1d_with_indices
     """),
    ('the legacy per-device autocast state API: use tensorix.autocast, '
     'tensorix.amp.is_autocast_enabled(device) and get_autocast_dtype(device)',
     """
    autocast_decrement_nesting autocast_increment_nesting clear_autocast_cache
    get_autocast_cpu_dtype get_autocast_gpu_dtype get_autocast_ipu_dtype
    get_autocast_xla_dtype is_autocast_cache_enabled is_autocast_cpu_enabled
    is_autocast_ipu_enabled is_autocast_xla_enabled set_autocast_cache_enabled
    set_autocast_cpu_dtype set_autocast_cpu_enabled set_autocast_dtype
    set_autocast_enabled set_autocast_gpu_dtype set_autocast_ipu_dtype
    set_autocast_ipu_enabled set_autocast_xla_dtype set_autocast_xla_enabled
     """),
    ("thread control: tensorix's pool starts on first use, so there is nothing to initialise",
     """
    init_num_threads
     """),
    ('removed or deprecated in torch (they raise or warn there): use tensorix.linalg and '
     'tensorix.arange',
     """
    eig frobenius_norm lstsq matrix_rank nuclear_norm range set_default_tensor_type
    solve symeig
     """),
    ("torch's exception classes: tensorix raises RuntimeError/MemoryError and backend errors",
     """
    AcceleratorError FatalError OutOfMemoryError
     """),
    ("torch's pickle-zip serialization internals: tensorix.save/load and safetensors (tensorix.io)",
     """
    DeserializationStorageContext PyTorchFileReader PyTorchFileWriter
    SerializationStorageContext
     """),
    ("nn containers exported at torch's top level: use tensorix.nn.ModuleDict/ParameterDict",
     """
    BufferDict ModuleDict ParameterDict
     """),
    ('not implemented yet: less common composites and decompositions (candidates for tensorix.ops)',
     """
    binomial gradient histogramdd lobpcg pca_lowrank segment_reduce svd_lowrank
     """),
    ('device-generic streams and a process-wide default device: tensorix takes device= '
     'explicitly and has tensorix.cuda.Stream/Event',
     """
    Event Stream get_default_device get_device set_default_device
     """),
    ('strided/permuted allocation and raw buffers: arrays are NumPy/CuPy-owned; use '
     'tensorix.from_numpy/from_dlpack',
     """
    empty_permuted empty_strided frombuffer slice_inverse to_dlpack
     """),
    ('process-wide debug switches without a tensorix counterpart (anomaly mode: '
     'tensorix.autograd.set_detect_anomaly)',
     """
    get_deterministic_debug_mode is_warn_always_enabled set_anomaly_enabled
    set_deterministic_debug_mode set_flush_denormal set_warn_always typename
     """),
]
REASONS = {name: reason for reason, names in LEFT_OUT for name in names.split()}


def _has(name):
    try:
        getattr(tx, name)
        return True
    except (AttributeError, ModuleNotFoundError):  # a lazy subpackage not built yet
        return False


def _torch_public_callables():
    return sorted(n for n in dir(torch) if not n.startswith("_")
                  and callable(getattr(torch, n, None)))


def test_every_torch_name_is_present_or_left_out_with_a_reason():
    missing = [n for n in _torch_public_callables() if not _has(n) and n not in REASONS]
    assert not missing, f"torch names neither in tensorix nor in LEFT_OUT: {missing}"


def test_left_out_names_are_really_absent_and_in_torch():
    now_present = [n for n in REASONS if _has(n)]
    assert not now_present, f"implemented now; remove from LEFT_OUT: {now_present}"
    not_in_torch = [n for n in REASONS if not callable(getattr(torch, n, None))]
    assert not not_in_torch, f"not in this torch; remove from LEFT_OUT: {not_in_torch}"


def test_names_that_stopped_scripts_are_present():
    for name in ("backends", "accelerator", "amp", "autocast", "GradScaler", "func", "vmap",
                 "cdist", "is_tensor", "is_floating_point", "numel", "__version__",
                 "set_float32_matmul_precision", "use_deterministic_algorithms", "conv2d",
                 "dropout", "layer_norm"):
        assert _has(name), name
    assert _has("optim") and tx.optim.LBFGS


def test_predicates_match_torch():
    for a in (np.ones((2, 3), np.float32), np.ones(4, np.int64), np.ones(1, np.complex64),
              np.zeros(1, np.float64), np.ones(1, np.uint8)):
        x, t = tx.tensor(a), torch.tensor(a)
        assert tx.is_tensor(x) and not tx.is_tensor(a)
        assert tx.numel(x) == torch.numel(t)
        assert tx.is_floating_point(x) == torch.is_floating_point(t)
        assert tx.is_complex(x) == torch.is_complex(t)
        assert tx.is_signed(x) == torch.is_signed(t)
        if a.size == 1:
            assert tx.is_nonzero(x) == torch.is_nonzero(t)
        assert tx.is_same_size(x, x) and not tx.is_same_size(x, tx.ones(7))
    with pytest.raises(TypeError, match="numel.*input.*Tensor"):
        tx.numel([1, 2])
    y = tx.ones(2, requires_grad=True) * 2
    assert not tx.detach(y).requires_grad
    np.testing.assert_array_equal(tx.fill(y, 5.0).numpy(), [5.0, 5.0])


def test_float32_matmul_precision_is_the_tf32_switch():
    assert tx.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    try:
        tx.set_float32_matmul_precision("high")
        assert tx.backends.cuda.matmul.allow_tf32 is True
        assert tx.get_float32_matmul_precision() == "high"
    finally:
        tx.set_float32_matmul_precision("highest")
    assert tx.cuda.matmul.allow_tf32 is False
    with pytest.raises(RuntimeError, match="precision"):
        tx.set_float32_matmul_precision("low")


def test_deterministic_switch_is_recorded():
    assert tx.are_deterministic_algorithms_enabled() is False
    try:
        tx.use_deterministic_algorithms(True, warn_only=True)
        assert tx.are_deterministic_algorithms_enabled()
        assert tx.is_deterministic_algorithms_warn_only_enabled()
    finally:
        tx.use_deterministic_algorithms(False)
    with pytest.raises(TypeError, match="mode"):
        tx.use_deterministic_algorithms("yes")


def test_top_level_functional_aliases_match_torch():
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(2, 3, 8, 8)), rng.normal(size=(4, 3, 3, 3))
    np.testing.assert_allclose(tx.conv2d(tx.tensor(x), tx.tensor(w), None, 1, 1).numpy(),
                               torch.conv2d(torch.tensor(x), torch.tensor(w), None, 1, 1),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tx.layer_norm(tx.tensor(x), (8,)).numpy(),
                               torch.layer_norm(torch.tensor(x), (8,)), rtol=1e-7, atol=1e-7)
    assert tx.conv2d is tx.nn.functional.conv2d


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_gradient_at_zero_distance_matches_torch(p, mode):
    """A point and itself: torch defines the gradient there as 0, not 0/0."""
    a = np.random.default_rng(1).normal(size=(4, 3))
    x, t = tx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    d, td = tx.cdist(x, x, p, compute_mode=mode), torch.cdist(t, t, p, compute_mode=mode)
    np.testing.assert_allclose(d.detach().numpy(), td.detach().numpy(), atol=1e-7)
    g = np.random.default_rng(2).normal(size=(4, 4))
    d.backward(tx.tensor(g))
    td.backward(torch.tensor(g))
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-7)


def test_cdist_errors_name_the_argument():
    with pytest.raises(RuntimeError, match="same number of columns"):
        tx.cdist(tx.ones(2, 3), tx.ones(2, 4))
    with pytest.raises(RuntimeError, match="non-negative p"):
        tx.cdist(tx.ones(2, 3), tx.ones(2, 3), p=-1.0)
    with pytest.raises(RuntimeError, match="floating-point.*x1"):
        tx.cdist(tx.ones(2, 3, dtype=tx.int64), tx.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2D"):
        tx.cdist(tx.ones(3), tx.ones(2, 3))
    with pytest.raises(ValueError, match="compute_mode"):
        tx.cdist(tx.ones(2, 3), tx.ones(2, 3), compute_mode="fast")
