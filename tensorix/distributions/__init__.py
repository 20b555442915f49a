"""``tensorix.distributions``: probability distributions with the names, shapes and semantics
of ``torch.distributions``.

* :class:`Distribution` (``batch_shape``, ``event_shape``, ``sample``/``rsample`` with
  ``sample_shape``, ``log_prob``, ``entropy``, ``mean``, ``mode``, ``variance``, ``stddev``,
  ``cdf``/``icdf`` where defined, ``expand``, ``support``/``arg_constraints`` and
  ``validate_args``);
* continuous: :class:`Normal`, :class:`Uniform`, :class:`MultivariateNormal` (exact
  reparameterized samples), :class:`Gamma`, :class:`Beta`, :class:`Dirichlet` (samples
  differentiable through implicit reparameterization gradients, as in PyTorch);
* discrete: :class:`Bernoulli`, :class:`Categorical` (``probs`` or ``logits``);
* :class:`Independent` (batch dims read as event dims);
* :func:`kl_divergence` with the registry :func:`register_kl`, covering the pairs among these
  that PyTorch has;
* :mod:`constraints`.

Example::

    import tensorix as tx
    from tensorix.distributions import Normal, kl_divergence
    loc = tx.zeros(3, requires_grad=True)
    p = Normal(loc, tx.ones(3))
    x = p.rsample((100,))                     # (100, 3), differentiable in loc
    (p.log_prob(x).mean() + kl_divergence(p, Normal(1.0, 2.0)).sum()).backward()
"""

from . import constraints
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .kl import kl_divergence, register_kl
from .multivariate_normal import Independent, MultivariateNormal
from .normal import Normal, Uniform

__all__ = ["Distribution", "Normal", "Uniform", "Bernoulli", "Categorical", "Gamma", "Beta",
           "Dirichlet", "MultivariateNormal", "Independent", "kl_divergence", "register_kl",
           "constraints"]
