"""``tensorix.backends``: torch's backend switches (``torch.backends``), answered from what
tensorix really runs on, so that scripts which set them run unchanged.

* ``cudnn`` - tensorix calls no cuDNN: ``is_available()`` is False, the flags are recorded;
* ``cuda`` - ``matmul.allow_tf32`` is ``tensorix.cuda.matmul.allow_tf32``; ``is_built()``;
* ``mps`` - not available; ``cpu`` - ``get_cpu_capability()``; ``opt_einsum``.

Example::

    import tensorix.backends.cudnn
    tensorix.backends.cudnn.benchmark = True
    tensorix.backends.cuda.matmul.allow_tf32 = True
"""

from . import cpu, cuda, cudnn, mps, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mps", "opt_einsum"]
