"""TensorNetwork: contraction against NumPy's einsum, partial contraction, paths (opt_einsum,
cotengra), gradients against torch, and the errors for incompatible bonds."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck
from tensorix.tn import Node, TensorNetwork, contract_path


def _ring_network(rng, dtype=tx.float64):
    """A 4-tensor ring with one open leg per tensor, and its NumPy einsum."""
    shapes = {"A": (3, 4, 2), "B": (4, 5, 2), "C": (5, 6, 2), "D": (6, 3, 2)}
    inds = {"A": ("a", "b", "i"), "B": ("b", "c", "j"), "C": ("c", "d", "k"),
            "D": ("d", "a", "l")}
    arrays = {k: rng.standard_normal(s) for k, s in shapes.items()}
    nodes = [Node(tx.tensor(arrays[k], dtype=dtype), inds[k], {k}) for k in shapes]
    exact = np.einsum("abi,bcj,cdk,dal->ijkl", *arrays.values())
    return TensorNetwork(nodes), exact, arrays


@pytest.mark.parametrize("dtype", [tx.float32, tx.float64])
def test_contract_matches_numpy_einsum(rng, device, dtype):
    tn, exact, _ = _ring_network(rng, dtype)
    out = tn.contract()
    assert out.inds == ("i", "j", "k", "l")
    assert out.data.dtype is dtype
    assert_close(out.data, exact, dtype=dtype)
    # a requested order permutes the result
    assert_close(tn.contract(("l", "i", "k", "j")).data, exact.transpose(3, 0, 2, 1),
                 dtype=dtype)


def test_partial_contraction_by_tags(rng):
    tn, exact, _ = _ring_network(rng)
    tn.nodes[0].tags, tn.nodes[1].tags = frozenset({"A", "left"}), frozenset({"B", "left"})
    smaller = tn.contract(tags="left")
    assert len(smaller) == 3 and smaller.nodes[-1].tags >= {"A", "B", "left"}
    assert sorted(smaller.nodes[-1].inds) == ["a", "c", "i", "j"]
    assert_close(smaller.contract(("i", "j", "k", "l")).data, exact)
    with pytest.raises(ValueError, match="no node carries tags"):
        tn.contract(tags="nope")


def test_paths_agree_and_explicit_paths_work(rng):
    tn, exact, _ = _ring_network(rng)
    for optimize in ("greedy", "optimal", [(0, 1), (0, 1), (0, 1)]):
        assert_close(tn.contract(optimize=optimize).data, exact)
    path = contract_path([("a", "b"), ("b", "c")], ("a", "c"), {"a": 2, "b": 3, "c": 4})
    assert path == [(0, 1)]
    flops, largest = tn.contraction_cost()
    assert flops > 0 and largest >= 2 ** 4


def test_cotengra_path_when_installed(rng):
    pytest.importorskip("cotengra")
    tn, exact, _ = _ring_network(rng)
    assert_close(tn.contract(optimize="cotengra").data, exact)


def test_disconnected_parts_give_the_outer_product(rng):
    a, b = rng.standard_normal(3), rng.standard_normal(4)
    tn = TensorNetwork([Node(tx.tensor(a), "i"), Node(tx.tensor(b), "j")])
    assert_close(tn.contract().data, np.outer(a, b))


def test_gradients_against_torch(rng):
    torch = pytest.importorskip("torch")
    tn, _, arrays = _ring_network(rng)
    for n in tn.nodes:
        n.data.requires_grad_(True)
    w = rng.standard_normal((2, 2, 2, 2))
    (tn.contract().data * tx.tensor(w)).sum().backward()
    tt = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}
    (torch.einsum("abi,bcj,cdk,dal->ijkl", *tt.values()) * torch.tensor(w)).sum().backward()
    for node, key in zip(tn.nodes, "ABCD"):
        assert_close(node.data.grad, tt[key].grad.numpy())


def test_numerical_gradient(rng):
    tn, _, _ = _ring_network(rng)
    leaves = [n.data.requires_grad_(True) for n in tn.nodes]

    def f(*datas):
        return TensorNetwork([Node(d, n.inds) for d, n in zip(datas, tn.nodes)]).contract().data

    assert gradcheck(f, leaves)


def test_complex_and_real_nodes_promote(rng):
    a = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    b = rng.standard_normal((3, 4))
    tn = TensorNetwork([Node(tx.tensor(a), ("i", "j")), Node(tx.tensor(b), ("j", "k"))])
    out = tn.contract().data
    assert out.dtype is tx.complex128
    assert_close(out, a @ b)


def test_bond_dimension_mismatch_names_both_tensors_and_the_index():
    a = Node(tx.randn(2, 3), ("i", "j"), tags="A")
    b = Node(tx.randn(4, 5), ("j", "k"), tags="B")
    with pytest.raises(ValueError, match=r"bond index 'j' has dimension 3 in tensor 0 \(tags "
                                         r"\['A'\]\).*but 4 in tensor 1 \(tags \['B'\]\)"):
        TensorNetwork([a, b])


def test_bad_input_errors():
    with pytest.raises(ValueError, match="hyperedges"):
        TensorNetwork([Node(tx.randn(2), "i"), Node(tx.randn(2), "i"), Node(tx.randn(2), "i")])
    with pytest.raises(ValueError, match="one name per dimension"):
        Node(tx.randn(2, 3), ("i",))
    with pytest.raises(ValueError, match="distinct"):
        Node(tx.randn(2, 2), ("i", "i"))
    with pytest.raises(TypeError, match="tensorix Tensor"):
        Node(np.ones(2), ("i",))
    tn = TensorNetwork([Node(tx.randn(2, 3), ("i", "j"))])
    with pytest.raises(ValueError, match="permutation of the open indices"):
        tn.contract(("i", "x"))
    with pytest.raises(ValueError, match="empty"):
        TensorNetwork().contract()


def test_no_grad_contraction_runs_on_the_arrays_and_equals_the_graph_path(rng, device,
                                                                         monkeypatch):
    from tensorix.tn import _network

    tn, exact, arrays = _ring_network(rng)
    tn = TensorNetwork([Node(n.data.to(device), n.inds, n.tags) for n in tn])

    def no_tensor_ops(*args, **kwargs):
        raise AssertionError("a no-grad contraction dispatched a Tensor op")

    with monkeypatch.context() as m:
        m.setattr(_network, "tensordot", no_tensor_ops)
        fused = tn.contract(output_inds=("l", "k", "j", "i"))
        bra = [n.conj().reindex({b: b + "'" for b in "abcd"}) for n in tn]
        closed = TensorNetwork(list(tn) + bra).contract()
    assert closed.inds == () and closed.data.shape == ()
    assert_close(float(closed.data), float((exact ** 2).sum()))
    assert fused.data.grad_fn is None and fused.data.device.type == device
    assert fused.tags == {"A", "B", "C", "D"}
    assert_close(fused.data.cpu(), exact.transpose(3, 2, 1, 0))
    # one node requiring grad: the differentiable path, with the same value
    leaf = tn.nodes[0].data.detach().requires_grad_()
    graph = TensorNetwork([Node(leaf, tn.nodes[0].inds)] + tn.nodes[1:]).contract()
    assert graph.data.grad_fn is not None
    assert_close(graph.data.cpu(), exact)
    graph.data.sum().backward()
    assert leaf.grad is not None and leaf.grad.shape == leaf.shape
    with tx.no_grad():  # grad mode off: the array path even though a node requires grad
        assert TensorNetwork([Node(leaf, tn.nodes[0].inds)] + tn.nodes[1:]).contract(
        ).data.grad_fn is None
    # a half-precision network keeps the Tensor path (its widening rules live in the ops)
    half = TensorNetwork([Node(n.data.to(tx.bfloat16), n.inds) for n in tn]).contract()
    assert half.data.dtype is tx.bfloat16


@pytest.mark.parametrize("ia, ib", [("abcd", "abef"),     # x's shared axes leading
                                    ("cdab", "efab"),     # trailing
                                    ("acbd", "ebfa"),     # scattered
                                    ("ab", "efab"),       # the second operand larger
                                    ("abc", "abc")])      # everything contracted
def test_raw_pairwise_step_equals_tensordot_in_every_axis_layout(rng, device, ia, ib):
    from tensorix.backend import array_module
    from tensorix.tensor import _make
    from tensorix.tn._network import _pair_raw

    size = dict(a=2, b=3, c=4, d=5, e=3, f=2)
    x = rng.standard_normal([size[i] for i in ia])
    y = rng.standard_normal([size[i] for i in ib])
    xd, yd = tx.tensor(x).to(device)._data, tx.tensor(y).to(device)._data
    data, inds = _pair_raw(array_module(xd), xd, tuple(ia), yd, tuple(ib))
    out = "".join(i for i in ia + ib if (i in ia) != (i in ib))
    expected = np.einsum(f"{ia},{ib}->{''.join(inds)}", x, y)
    assert sorted(inds) == sorted(out)
    assert_close(_make(data).cpu(), expected)
