r"""A small dense matrix with the interface the fixed-step steppers use of
`TridiagonalMatrix`: the Jacobian of a model whose state is a few variables (the
ocean-layer models) or whose couplings are not tridiagonal (the zonal model over a
deep ocean), materialised from the model's own `lineax` operator.
"""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Scalar


class DenseMatrix(eqx.Module):
    """A dense square matrix `A`."""

    matrix: Float[Array, "n n"]

    def shifted(self, shift) -> "DenseMatrix":
        """`shift * I - A`."""
        identity = jnp.eye(self.matrix.shape[0], dtype=self.matrix.dtype)
        return DenseMatrix(shift * identity - self.matrix)

    def solve(self, vector: Float[Array, " n"]) -> Float[Array, " n"]:
        """`A^{-1} vector` (LU with partial pivoting; differentiable)."""
        return jnp.linalg.solve(self.matrix, vector)

    def leading_eigenvalue_bound(self, iterations: int | None = None) -> Scalar:
        """The largest real part of `A`'s eigenvalues if it is positive, else zero
        (exact up to rounding: `iterations` is ignored)."""
        del iterations
        # XLA's nonsymmetric eigensolver (`geev`): on the CPU, and on GPUs where
        # jaxlib provides it.
        largest = jnp.max(jnp.linalg.eigvals(self.matrix).real)
        return jnp.maximum(largest, 0.0).astype(self.matrix.dtype)
