"""What `ebm.continuation` and `ebm.fold` return: a branch, and a fold."""

import equinox as eqx
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PyTree

from ..._custom_types import Scalar, Temperature
from ..._results import RESULTS, with_result_names


class Fold(eqx.Module):
    """A fold (saddle-node bifurcation) of the equilibria in one parameter.

    **Attributes:**

    - `parameter`: the name of the parameter (a field of the model's parameters).
    - `value`: the parameter's value at the fold.
    - `T`: the surface temperature of the steady state at the fold, degC.
    - `null_vector`: the direction `v` with `J v = 0` (RMS 1), in the state
        flattened into one vector (`jax.flatten_util.ravel_pytree`): how the two
        branches that meet here differ, to first order.
    - `global_mean`, `ice_edge`, `ice_edge_south`: of `T` (degC, degrees north;
        a model without ice, or with one hemisphere, gives NaN for the missing
        edges).
    - `side`: `-1` if the two branches exist for parameter values below `value`,
        `+1` if above.
    - `residual`: largest absolute value of `F` and `J v` at the solution.
    - `result`: an `ebm.RESULTS`; successful when the extended system converged.
    - `num_steps`: Newton iterations on the extended system.
    - `state`: the model's state at the fold (for the zonal model, `T`).
    """

    parameter: str = eqx.field(static=True)
    value: Scalar
    T: Temperature
    null_vector: Float[Array, " lat"]
    global_mean: Scalar
    ice_edge: Scalar
    ice_edge_south: Scalar
    side: Int[Array, ""]
    residual: Scalar
    result: RESULTS
    num_steps: Int[Array, ""]
    state: PyTree

    def __repr__(self) -> str:
        return with_result_names(self)


class Branch(eqx.Module):
    """A branch of equilibria traced by `ebm.continuation`.

    Arrays have one entry per point, in the order walked.

    **Attributes:**

    - `parameter`: the name of the parameter continued.
    - `values`: the parameter's value at each point.
    - `global_mean`: global-mean temperature, in `temperature_units`.
    - `ice_edge`, `ice_edge_south`: each hemisphere's ice edge, degrees north (NaN
        for a model without it).
    - `leading_eigenvalue`: the largest real part of the Jacobian's eigenvalues, in
        `eigenvalue_units` (the zonal model's energy budget: W m-2 K-1; another
        model's tendency: per year).
    - `stable`: whether `leading_eigenvalue < 0`.
    - `slope`: `d(value)/d(arclength)`: the sign says which way the parameter moves;
        it changes sign at each fold.
    - `arclength`: distance walked (the continuation's metric).
    - `T`: the surface temperature profiles, shape `(points, n)`, if asked for;
        else `None`.
    - `folds`: the folds passed, in order, each an `ebm.Fold`.
    - `result`: `RESULTS.successful` when the walk left `bounds`;
        `max_steps_reached` when it used up `max_points`; `step_too_small` when the
        corrector failed.
    - `num_points`: the number of points.
    - `temperature_units`: `"degC"`, or `"K"` for a model of anomalies.
    - `eigenvalue_units`: see `leading_eigenvalue`.
    - `parameter_units`: the units of `parameter`.
    - `profile_dims`: the dimensions of one point's `T` (the zonal model's
        `("lat",)`; another model's, those of its first state variable).
    """

    parameter: str = eqx.field(static=True)
    values: Float[Array, " points"]
    global_mean: Float[Array, " points"]
    ice_edge: Float[Array, " points"]
    ice_edge_south: Float[Array, " points"]
    leading_eigenvalue: Float[Array, " points"]
    stable: Bool[Array, " points"]
    slope: Float[Array, " points"]
    arclength: Float[Array, " points"]
    T: Float[Array, "points lat"] | None
    folds: tuple[Fold, ...]
    result: RESULTS
    num_points: int = eqx.field(static=True)
    temperature_units: str = eqx.field(static=True, default="degC")
    eigenvalue_units: str = eqx.field(static=True, default="W m-2 K-1")
    profile_dims: tuple[str, ...] = eqx.field(static=True, default=("lat",))
    parameter_units: str | None = eqx.field(static=True, default=None)

    def __repr__(self) -> str:
        return with_result_names(self)

    def segments(self) -> list[slice]:
        """Slices of consecutive points with the same stability."""
        return stability_segments(self.stable)


def stability_segments(stable) -> list[slice]:
    """Slices of consecutive entries of `stable` with the same value."""
    stable = np.asarray(stable)
    cuts = np.flatnonzero(stable[1:] != stable[:-1]) + 1
    bounds = [0, *cuts.tolist(), stable.size]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
