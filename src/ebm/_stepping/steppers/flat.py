r"""A model of the protocol as a vector field on one flat vector, for the
fixed-step steppers.

The steppers advance a vector $v$: here the leaves of the model's state, each
raveled, in the order of `jax.tree.leaves` (the order in which `lineax` flattens an
operator's input, so that the model's own `jacobian(t, y, params).as_matrix()` is
the Jacobian of the flat field). Time is shifted to the run's start `t0` on the
forcing's clock (calendar years for a series), so that a step's `t` counts from 0
as it does for the zonal model.
"""

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PyTree

from ..._model.protocol import AbstractModel
from ..._numerics.dense import DenseMatrix


class FlatModel(eqx.Module):
    """`model` on the flat vector of its state, with time counted from `t0`."""

    model: AbstractModel
    t0: Float[Array, ""]
    treedef: Any = eqx.field(static=True)
    shapes: tuple[tuple[int, ...], ...] = eqx.field(static=True)

    @classmethod
    def around(cls, model: AbstractModel, y: PyTree, t0) -> "FlatModel":
        """The flat form of `model` for states shaped as `y`, from time `t0`."""
        leaves, treedef = jax.tree.flatten(y)
        shapes = tuple(tuple(np.shape(leaf)) for leaf in leaves)
        return cls(model, jnp.asarray(t0, dtype=float), treedef, shapes)

    def flatten(self, y: PyTree) -> Float[Array, " n"]:
        return jnp.concatenate([jnp.ravel(leaf) for leaf in jax.tree.leaves(y)])

    def unflatten(self, v: Float[Array, " n"]) -> PyTree:
        sizes = [int(np.prod(shape)) for shape in self.shapes]
        pieces = jnp.split(v, np.cumsum(sizes)[:-1])
        leaves = [p.reshape(shape) for p, shape in zip(pieces, self.shapes)]
        return jax.tree.unflatten(self.treedef, leaves)

    def __call__(self, t, v, params) -> Float[Array, " n"]:
        return self.flatten(self.model(self.t0 + t, self.unflatten(v), params))

    def tendency(self, v, params, t=0.0) -> Float[Array, " n"]:
        """As the zonal model's `tendency(T, params, t)`."""
        return self(t, v, params)

    def jacobian(self, t, v, params) -> DenseMatrix:
        """The model's own Jacobian operator at `v`, materialised."""
        operator = self.model.jacobian(self.t0 + t, self.unflatten(v), params)
        return DenseMatrix(operator.as_matrix())
