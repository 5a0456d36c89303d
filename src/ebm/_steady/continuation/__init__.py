r"""Branches of equilibria by pseudo-arclength continuation, and differentiable folds.

Equilibria solve $F(T; \lambda) = 0$ (the energy budget, W m-2, one equation per
cell) for a scalar parameter $\lambda$, any field of `ebm.Params`. As $\lambda$
varies they trace branches, which turn back at folds (saddle-node bifurcations),
where the Jacobian $J = \partial F/\partial T$ is singular: the warm climate ceases
to exist at the snowball fold, and a continuation in $\lambda$ alone stops there.

**Pseudo-arclength continuation** (Keller 1977) treats $\lambda$ as an unknown
alongside $T$ and walks the branch by arclength, through folds, with a predictor
along the tangent and a Newton corrector (`walk.py`, in the unknowns and inner
product of `problem.py`). The linear algebra is dense ($n + 1$ unknowns):
continuation is for grids up to a few thousand cells. Each point's stability is the
sign of the leading eigenvalue of $J$ (tridiagonal, probed matrix-free; see
`ebm._numerics.tridiagonal`). Any other model of the protocol is walked the same way
on its tendency $f(t, y; \lambda) = 0$ held at one time (`problem.ModelProblem`:
the state flattened into one vector, $J$ dense by `jax.jacfwd`, the stability its
eigenvalue of largest real part), unless the model's `walked_model` names a zonal
model whose branch its steady states are (`models.py`).

**Folds** are where $d\lambda/ds$ changes sign. Each is refined by Newton's method on
the extended system $F = 0$, $J v = 0$, $\tfrac{1}{n}v\cdot v = 1$ (`extended.py`),
whose Jacobian is regular at a generic fold, so the fold's parameter value is a
smooth function of every other parameter, differentiated by the implicit function
theorem: `jax.grad` of `ebm.fold(params).value` gives, e.g., $\partial S_0^*/\partial
D$.

The modules: `problem.py` (the unknowns and the systems on them), `walk.py` (the
walk), `extended.py` (fold refinement), `arguments.py` (the checks and set-up that
`continuation` and `fold` share), `results.py` (`Branch`, `Fold`) and `entry.py`
(the two entry points).
"""

from .entry import continuation as continuation, fold as fold
from .results import Branch as Branch, Fold as Fold
