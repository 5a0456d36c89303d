r"""Tridiagonal structure of the model's Jacobian, found matrix-free.

Every default term of the energy budget is local in latitude except diffusion, which
couples each cell to its two neighbours, so the Jacobian $J = \partial F/\partial T$
of the energy budget is tridiagonal. Three Jacobian-vector products with the probe
vectors $e^{(k)}_j = [j \bmod 3 = k]$ recover its three diagonals exactly (each row
meets each probe in exactly one of its three non-zero columns), at O(n) cost and
memory; no dense Jacobian is ever formed.

Diffusion is self-adjoint in the area-weighted inner product, so with local terms
$W J$ is symmetric ($W$ the diagonal of area weights). More generally, a real
tridiagonal matrix whose off-diagonal pairs have positive products (diffusion's
couplings, $\sim D/\Delta\phi^2$, dominate the sub-grid albedo's) is similar to the
symmetric tridiagonal matrix with the same diagonal and off-diagonals
$\sqrt{J_{i,i+1} J_{i+1,i}}$: its eigenvalues are real, and the largest one decides
stability.

For a user's term that is not local, the probed tridiagonal is only an approximation
of $J$: it still preconditions the Krylov solves (which use the exact Jacobian-vector
product), and the eigenvalue is then an estimate.
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
from jaxtyping import Array, Float, PyTree

from .._custom_types import Scalar


@jax.custom_batching.custom_vmap
def _gtsv(lower, diagonal, upper, vector):
    """LAPACK's gtsv for one system (bands as `jax.lax.linalg.tridiagonal_solve`)."""
    return jax.lax.linalg.tridiagonal_solve(lower, diagonal, upper, vector[:, None])[
        :, 0
    ]


# How much larger than |A| the factors |L| |U| of an elimination without pivoting may
# be, on the diagonal, for its solution to count as exact (see `_eliminate`).
_GROWTH = 4


def _eliminate(lower, diagonal, upper, vector):
    r"""Gaussian elimination without pivoting (the Thomas algorithm) for a batch of
    systems at once (bands as `_gtsv`'s, batched along the first axis): one pass
    down the rows and one back up, each row's work vectorised across the batch.

    Returns the solutions and whether each is exact: whether its factors satisfy
    $|L||U| \le 4|A|$ on the diagonal (off it they are equal), which bounds the
    solution's componentwise backward error by a small multiple of eps (Higham 2002,
    sec. 9.6). That holds for matrices similar to symmetric definite ones and for
    diagonally dominant ones, and fails where a pivot is small.
    """

    def down(previous, row):
        previous_ratio, previous_rhs = previous
        lower, diagonal, upper, vector = row
        pivot = diagonal - lower * previous_ratio
        ratio = upper / pivot
        rhs = (vector - lower * previous_rhs) / pivot
        return (ratio, rhs), (ratio, rhs)

    zero = jnp.zeros_like(vector[:, 0])
    lower, diagonal, upper, vector = (
        band.T for band in (lower, diagonal, upper, vector)
    )
    _, (ratios, rhs) = jax.lax.scan(
        down, (zero, zero), (lower, diagonal, upper, vector)
    )

    def up(following, row):
        ratio, rhs = row
        solution = rhs - ratio * following
        return solution, solution

    _, solution = jax.lax.scan(up, zero, (ratios, rhs), reverse=True)

    # Row i's diagonal entry of |L||U| is |l_i u_{i-1} / m_{i-1}| + |m_i|.
    eliminated = lower[1:] * ratios[:-1]
    growth = jnp.abs(eliminated) + jnp.abs(diagonal[1:] - eliminated)
    exact = jnp.all(growth <= _GROWTH * jnp.abs(diagonal[1:]), axis=0)
    exact = exact & jnp.all(jnp.isfinite(solution), axis=0)
    # A system with a NaN or an infinity in it has no better solution by pivoting.
    given = jnp.sum(jnp.abs(lower) + jnp.abs(diagonal) + jnp.abs(upper), axis=0)
    exact = exact | ~jnp.isfinite(given + jnp.sum(jnp.abs(vector), axis=0))
    return solution.T, exact


# The smallest batch eliminated all at once (see `_gtsv_batched`).
BATCHED_ELIMINATION_MIN = 64


@_gtsv.def_vmap
def _gtsv_batched(axis_size, in_batched, *args):
    # A batch of at least `BATCHED_ELIMINATION_MIN` systems is eliminated without
    # pivoting, all systems at once, each row's work vectorised across the batch
    # (several times faster than gtsv one system at a time); the solutions are kept
    # if every one is exact (as they are for the shifted Jacobians of stable states
    # and of pseudo-transient steps, similar to symmetric definite matrices), or
    # else the batch is solved again by gtsv, with pivoting. A smaller batch goes
    # to gtsv directly: its program compiles faster, and its run time is small
    # either way.
    #
    # gtsv solves one system after another, each exactly as alone: jaxlib's batched
    # CPU tridiagonal solve splits its batch over XLA's intra-op threads and waits
    # for them; two such solves running at once, each from one of those threads (as
    # the independent solves of a batched while loop do), wait on each other for
    # ever once the batch is large enough to split (jaxlib 0.10:
    # `jax.jit(jax.vmap(ebm.equilibrium))` over 1,000 values of `S0` across the
    # snowball fold hung with idle cores).
    args = [
        arg if batched else jnp.broadcast_to(arg, (axis_size, *arg.shape))
        for arg, batched in zip(args, in_batched)
    ]

    def one_at_a_time():
        return jax.lax.map(lambda one: _gtsv(*one), args)

    if axis_size < BATCHED_ELIMINATION_MIN:
        return one_at_a_time(), True
    solution, exact = _eliminate(*args)
    return jax.lax.cond(jnp.all(exact), lambda: solution, one_at_a_time), True


class TridiagonalMatrix(eqx.Module):
    """A tridiagonal matrix: `lower[i] = A[i+1, i]`, `upper[i] = A[i, i+1]`."""

    diagonal: Float[Array, " n"]
    lower: Float[Array, " n-1"]
    upper: Float[Array, " n-1"]

    def shifted(self, shift) -> "TridiagonalMatrix":
        """`shift * I - A`."""
        return TridiagonalMatrix(shift - self.diagonal, -self.lower, -self.upper)

    def solve(self, vector: Float[Array, " n"]) -> Float[Array, " n"]:
        """`A^{-1} vector` by Gaussian elimination with partial pivoting (gtsv); under
        `vmap`, without pivoting for the whole batch at once, and with pivoting for
        any system that needs it (see `_gtsv_batched`). Differentiable in `A` and
        `vector` (`jax.lax.custom_linear_solve`: its derivatives are solves too)."""

        def solve_with(matrix):
            return lambda _, b: _gtsv(*matrix._bands(), b)

        return jax.lax.custom_linear_solve(
            self.mv,
            vector,
            solve=solve_with(self),
            transpose_solve=solve_with(self.transpose()),
        )

    def mv(self, vector: Float[Array, " n"]) -> Float[Array, " n"]:
        """`A vector`."""
        product = self.diagonal * vector
        product = product.at[:-1].add(self.upper * vector[1:])
        return product.at[1:].add(self.lower * vector[:-1])

    def _bands(self):
        """The three bands as `jax.lax.linalg.tridiagonal_solve` takes them."""
        zero = jnp.zeros(1, self.diagonal.dtype)
        return (
            jnp.concatenate([zero, self.lower]),
            self.diagonal,
            jnp.concatenate([self.upper, zero]),
        )

    def transpose(self) -> "TridiagonalMatrix":
        return TridiagonalMatrix(self.diagonal, self.upper, self.lower)

    def _symmetrised_off_diagonal(self):
        return jnp.sqrt(jnp.maximum(self.lower * self.upper, 0.0))

    def _gershgorin_bounds(self) -> tuple[Scalar, Scalar]:
        """`(low, high)` enclosing every eigenvalue of the symmetrised matrix."""
        off = self._symmetrised_off_diagonal()
        zero = jnp.zeros(1, off.dtype)
        radius = jnp.concatenate([zero, off]) + jnp.concatenate([off, zero])
        return jnp.min(self.diagonal - radius), jnp.max(self.diagonal + radius)

    def count_eigenvalues_above(self, x) -> Array:
        """How many eigenvalues of the symmetrised matrix exceed `x` (Sturm count).

        One O(n) pass of the LDL^T pivots of `A - x I`: by Sylvester's law of
        inertia, each positive pivot is an eigenvalue above `x`.
        """
        off_squared = self._symmetrised_off_diagonal() ** 2
        tiny = jnp.finfo(self.diagonal.dtype).tiny

        def pivot(carry, entry):
            previous, count = carry
            diagonal, coupling = entry
            current = diagonal - x - coupling / previous
            current = jnp.where(current == 0, tiny, current)
            return (current, count + (current > 0).astype(count.dtype)), None

        couplings = jnp.concatenate([jnp.zeros(1, off_squared.dtype), off_squared])
        start = (jnp.array(jnp.inf, self.diagonal.dtype), jnp.array(0))
        (_, count), _ = jax.lax.scan(pivot, start, (self.diagonal, couplings))
        return count

    def leading_eigenvalue_bound(self, iterations: int = 12) -> Scalar:
        """An upper bound on the largest eigenvalue if it is positive, else zero.

        Zero when no eigenvalue is positive (one Sturm count); otherwise bisection
        between `2^-40` times the Gershgorin bound and the Gershgorin bound,
        returning the upper end of the bracket. The bisection is geometric (in the
        logarithm), so the bound is within a factor `2^(40 / 2^iterations)` (0.7%
        for 12 iterations) of the eigenvalue, however small it is next to the
        Gershgorin bound (on fine grids diffusion puts that in the thousands while
        the eigenvalue next to a fold is near zero).
        """
        _, gershgorin = self._gershgorin_bounds()

        def needed(state):
            iteration, _ = state
            return any_positive & (iteration < iterations)

        def halve(state):
            iteration, (low, high) = state
            middle = jnp.sqrt(low * high)
            above = self.count_eigenvalues_above(middle) > 0
            bracket = jnp.where(above, middle, low), jnp.where(above, high, middle)
            return iteration + 1, bracket

        # `high` stays an upper bound (no eigenvalue above it) throughout. A while
        # loop, not a `cond`: under `vmap` it runs only while some member has a
        # positive eigenvalue (a `cond` would run both branches for every member).
        any_positive = self.count_eigenvalues_above(0.0) > 0
        start = (gershgorin * 2.0**-40, gershgorin)
        _, (_, high) = jax.lax.while_loop(needed, halve, (0, start))
        return jnp.where(any_positive, high, 0.0)

    def _eigenvalue(self, index: int, iterations: int = 60) -> Scalar:
        """The `index`-th smallest eigenvalue of the symmetrised matrix, by bisection
        on Sturm counts between the Gershgorin bounds.

        `lambda_index > x` exactly when more than `n - 1 - index` eigenvalues exceed
        `x`. Each halving is one O(n) pass, and 60 of them take the bracket from the
        Gershgorin width to its rounding level (2^-60 of it, below the precision of
        the counts themselves), however large the width (diffusion's ~ 4 D / dlat^2
        on fine grids) next to the eigenvalue.
        """
        n = self.diagonal.shape[0]
        bracket = self._gershgorin_bounds()

        def halve(_, bracket):
            low, high = bracket
            middle = 0.5 * (low + high)
            above = self.count_eigenvalues_above(middle) > n - 1 - index
            return jnp.where(above, middle, low), jnp.where(above, high, middle)

        low, high = jax.lax.fori_loop(0, iterations, halve, bracket)
        return 0.5 * (low + high)

    def leading_eigenvalue(self) -> Scalar:
        """Largest eigenvalue of the symmetrised matrix (see the module docstring)."""
        return self._eigenvalue(self.diagonal.shape[0] - 1)

    def lowest_eigenvalue(self) -> Scalar:
        """Smallest (most negative) eigenvalue of the symmetrised matrix."""
        return self._eigenvalue(0)


def probe_tridiagonal(
    matvec: Callable[[Float[Array, " n"]], Float[Array, " n"]], n: int, dtype
) -> TridiagonalMatrix:
    """The tridiagonal part of a linear map, from three matrix-vector products."""
    index = jnp.arange(n)
    # probe[k, j]: whether column j is in probe k.
    probe = index[None, :] % 3 == jnp.arange(3)[:, None]
    columns = jax.vmap(matvec)(probe.astype(dtype))

    # Row i of product k is the entry of row i in the column that probe k holds
    # there; masks pick each band out of the three products (a gather would be
    # several times slower on CPU).
    def pick(rows, columns_probed):
        return jnp.where(
            columns_probed[0],
            rows[0],
            jnp.where(columns_probed[1], rows[1], rows[2]),
        )

    diagonal = pick(columns, probe)
    upper = pick(columns[:, :-1], probe[:, 1:])
    lower = pick(columns[:, 1:], probe[:, :-1])
    return TridiagonalMatrix(diagonal, lower, upper)


def probe_operator(
    operator: lx.AbstractLinearOperator, solver: str
) -> TridiagonalMatrix:
    """The tridiagonal part of a square operator on one 1-d array.

    **Raises:**

    - `ValueError`: naming `solver`, for any other operator.
    """
    structure = operator.in_structure()
    if (
        not isinstance(structure, jax.ShapeDtypeStruct)
        or len(structure.shape) != 1
        or operator.out_structure() != structure
    ):
        raise ValueError(
            f"{solver} solves square systems for a single 1-d array, got an operator "
            f"from {structure} to {operator.out_structure()}. For augmented states, "
            "such as the backward pass of diffrax.BacksolveAdjoint, give that pass a "
            "solver of its own, e.g. BacksolveAdjoint(solver=diffrax.Kvaerno5())."
        )
    return probe_tridiagonal(
        lx.linearise(operator).mv, structure.shape[0], structure.dtype
    )


# The backward error, in units of the precision's eps, below which a direct solve
# with the probed tridiagonal counts as exact: rounding in the solve and in the
# Jacobian-vector product gives a few eps.
BACKWARD_ERROR_EXACT = 64


def _backward_error(
    operator: lx.AbstractLinearOperator, matrix: TridiagonalMatrix, x, b
) -> Scalar:
    """`max_i |b - A x|_i / (|M| |x| + |b|)_i`: the componentwise backward error of
    `x` as a solution of `A x = b`, with `M` the tridiagonal part of `A`."""
    residual = b - operator.mv(x)
    size = jnp.abs(matrix.diagonal) * jnp.abs(x) + jnp.abs(b)
    size = size.at[1:].add(jnp.abs(matrix.lower) * jnp.abs(x[:-1]))
    size = size.at[:-1].add(jnp.abs(matrix.upper) * jnp.abs(x[1:]))
    tiny = jnp.finfo(x.dtype).tiny
    return jnp.max(jnp.abs(residual) / jnp.maximum(size, tiny))


class _KrylovState(eqx.Module):
    operator: lx.AbstractLinearOperator
    preconditioner: TridiagonalMatrix


class TridiagonalPreconditionedGMRES(lx.AbstractLinearSolver[_KrylovState]):
    """GMRES on the Jacobian-vector operator, preconditioned by its tridiagonal part.

    Matrix-free: `init` probes the operator's tridiagonal part with three products;
    `compute` runs `lineax.GMRES` on the left-preconditioned system
    `P^{-1} A x = P^{-1} b`, with `b` scaled to unit max-norm, so that the tolerances
    are relative and measured in the units of the solution. When `P^{-1} b` already
    meets the tolerances (the default model, where `P = A`), GMRES is skipped; for a
    non-local user term it takes a few iterations. Memory and cost are O(n) per
    iteration.

    Works on operators whose input and output are single one-dimensional arrays of
    the same size (the temperature profile).

    **Arguments:**

    - `rtol`, `atol`: GMRES tolerances on the preconditioned system.
    - `restart`: GMRES restart length.
    - `max_steps`: GMRES iteration limit (`None`: lineax's default, `10 n`).
    - `accept_rtol`: a solve that stopped short of `rtol` (stagnation, on grids so
        fine that rounding dominates) still succeeds if its preconditioned residual
        is below `accept_rtol` times the solution's size.
    """

    rtol: float = 1e-11
    atol: float = 1e-11
    restart: int = 20
    max_steps: int | None = None
    accept_rtol: float = 1e-6

    def init(self, operator: lx.AbstractLinearOperator, options: dict):
        del options
        # The state keeps the operator unlinearised: a linearised one holds a jaxpr,
        # which callers such as diffrax's chord iteration cannot `stop_gradient`.
        return _KrylovState(operator, probe_operator(operator, type(self).__name__))

    def compute(self, state: _KrylovState, vector: PyTree[Array], options: dict):
        del options
        operator = lx.linearise(state.operator)
        preconditioner = state.preconditioner
        scale = jnp.max(jnp.abs(vector))
        scale = jnp.where(scale > 0, scale, 1.0)
        preconditioned = lx.FunctionLinearOperator(
            lambda x: preconditioner.solve(operator.mv(x)),
            operator.in_structure(),
        )
        gmres = lx.GMRES(
            rtol=self.rtol,
            atol=self.atol,
            restart=self.restart,
            max_steps=self.max_steps,
        )
        rhs = preconditioner.solve(vector / scale)

        def direct():
            return rhs, lx.RESULTS.successful, {"num_steps": jnp.array(0)}

        def krylov():
            solution, result, stats = gmres.compute(
                gmres.init(preconditioned, {}), rhs, {}
            )
            return solution, result, {"num_steps": stats["num_steps"]}

        # `P^{-1} b` is the solution already when `P = A` (the default model): then
        # GMRES is skipped, which about doubles the rate of equilibria with their
        # gradients at 60 cells, and on fine grids saves GMRES iterations that cannot
        # improve on it. The test is the componentwise backward error of `P^{-1} b`
        # for `A x = b`, `|b - A x| / (|P| |x| + |b|)`, which rounding keeps within a
        # few eps when `P = A` whatever the conditioning; a term that `P` misses
        # (a user's non-local term) shows there at its own relative size. (A test on
        # the preconditioned residual amplifies rounding by the condition number,
        # ~ 4 D / (B dlat^2) = 1e9 at 100,000 cells, and sent every fine-grid solve
        # to GMRES.) Under `vmap` both branches run.
        exact = _backward_error(operator, preconditioner, rhs, vector / scale) <= (
            BACKWARD_ERROR_EXACT * jnp.finfo(rhs.dtype).eps
        )
        solution, result, stats = jax.lax.cond(exact, direct, krylov)
        # On very fine grids the Jacobian's condition number (~ 4 D / (B dlat^2), 1e9
        # at 100,000 cells) puts a floor of ~eps * cond under any residual, and GMRES
        # stagnates above `rtol`. A solution whose preconditioned residual is within
        # `accept_rtol` of its size is as good as the conditioning allows: accept it.
        residual = rhs - preconditioned.mv(solution)
        size = jnp.maximum(jnp.max(jnp.abs(solution)), jnp.finfo(solution.dtype).tiny)
        accurate = jnp.max(jnp.abs(residual)) <= self.accept_rtol * size
        result = lx.RESULTS.where(accurate, lx.RESULTS.successful, result)
        return solution * scale, result, stats

    def transpose(self, state: _KrylovState, options: dict):
        transposed = _KrylovState(
            state.operator.transpose(), state.preconditioner.transpose()
        )
        return transposed, options

    def conj(self, state: _KrylovState, options: dict):
        # Real operators only: conjugation is the identity.
        return state, options

    def assume_full_rank(self):
        return True


class ProbedTridiagonal(lx.AbstractLinearSolver[TridiagonalMatrix]):
    """A direct solve with the operator's tridiagonal part, probed matrix-free.

    Exact for operators that are tridiagonal (the default model's Jacobian and the
    stage matrices `I - h J` of implicit Runge-Kutta solvers); for any other operator
    it solves with an approximation, which is what a chord iteration needs and
    nothing more. Use `TridiagonalPreconditionedGMRES` where the solve must be exact.
    Its state holds only arrays, so diffrax's stage solvers can reuse it across
    iterations.
    """

    def init(self, operator: lx.AbstractLinearOperator, options: dict):
        del options
        return probe_operator(operator, type(self).__name__)

    def compute(self, state: TridiagonalMatrix, vector, options: dict):
        del options
        return state.solve(vector), lx.RESULTS.successful, {}

    def transpose(self, state: TridiagonalMatrix, options: dict):
        return state.transpose(), options

    def conj(self, state: TridiagonalMatrix, options: dict):
        return state, options

    def assume_full_rank(self):
        return True
