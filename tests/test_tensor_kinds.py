"""Marks on plain tensors (nn.Parameter) survive deepcopy and pickling, also into a fresh
process; plain tensors stay plain."""

import copy
import pickle
import subprocess
import sys

import tensorix as tx
from tensorix import nn


def test_parameter_survives_deepcopy_and_pickle():
    p = nn.Parameter(tx.ones(3))
    assert isinstance(copy.deepcopy(p), nn.Parameter)
    assert isinstance(pickle.loads(pickle.dumps(p)), nn.Parameter)
    assert not isinstance(copy.deepcopy(tx.ones(3)), nn.Parameter)
    assert not isinstance(pickle.loads(pickle.dumps(tx.ones(3))), nn.Parameter)


def test_deepcopied_module_keeps_parameters():
    m = nn.Module()
    m.w = nn.Parameter(tx.ones(2))
    m2 = copy.deepcopy(m)
    assert [n for n, _ in m2.named_parameters()] == ["w"]
    assert m2.w is not m.w


def test_parameter_unpickles_in_a_fresh_process(tmp_path):
    path = tmp_path / "p.pkl"
    path.write_bytes(pickle.dumps(nn.Parameter(tx.ones(2))))
    code = ("import pickle, sys, tensorix.nn as nn; "
            f"p = pickle.load(open({str(path)!r}, 'rb')); "
            "sys.exit(0 if isinstance(p, nn.Parameter) and p.requires_grad else 1)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
