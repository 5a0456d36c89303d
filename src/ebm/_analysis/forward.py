r"""The forward problem that `fit`, `sensitivity`, `hessian` and `posterior` solve.

For parameters $\theta$ the forward problem is either the equilibrium $T^*(\theta)$
reached from a start (`through="equilibrium"`: $G(T^*, \theta) = 0$, differentiated
implicitly, one linear solve per derivative), or a run $T(t; \theta)$ from $T_0$
(`through="trajectory"`: saved at given times or at its end, differentiated under
the adjoint chosen). Each analysis maps its own coordinates (an optimiser's, a
sampler's, the parameters themselves) to `Params`, calls `ForwardProblem.solve`,
and reads what it needs from the `ForwardSolution`.
"""

from collections.abc import Sequence

import diffrax
import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, Bool

from .._model.parameters import params_checked
from .._model.protocol import AbstractModel
from .._results import RESULTS
from .._scenarios.base import AbstractScenario, run_start
from .._steady.equilibrium import Equilibrium, equilibrium
from .._stepping.integrate import integrate
from .._zonal.params import Params


THROUGH = ("equilibrium", "trajectory")
"""What a forward problem solves."""


def to_unconstrained(name: str, value, container: type[Params] = Params):
    """The optimiser's coordinate for parameter `name` (its declared transform)."""
    return container.declaration(name).to_unconstrained(value)


def from_unconstrained(name: str, coordinate, container: type[Params] = Params):
    """The inverse of `to_unconstrained`."""
    return container.declaration(name).from_unconstrained(coordinate)


def check_names(
    names: Sequence[str], argument: str, container: type[Params] = Params
) -> tuple[str, ...]:
    """`names` as a tuple, every one a parameter of `container`.

    **Raises:**

    - `ValueError`: naming `argument`, for an unknown or repeated name.
    """
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    known = container.field_names()
    unknown = [name for name in names if name not in known]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"`{argument}` must be distinct names of Params fields {known}, got "
            f"{names!r}."
        )
    return names


def check_through(through: str) -> str:
    if through not in THROUGH:
        raise ValueError(
            f"`through` must be 'equilibrium' or 'trajectory', got {through!r}."
        )
    return through


def check_times(times, start: float = 0.0) -> np.ndarray:
    """Snapshot times as a NumPy array, increasing and after `start` (years: the
    start of the run, on the forcing's clock)."""
    times = np.asarray(times, float)
    if times.ndim != 1 or np.any(times <= start) or np.any(np.diff(times) <= 0):
        after = "positive" if start == 0.0 else f"after the run's start, {start:g}"
        raise ValueError(
            f"`times` must be increasing and {after} (years), got {times}."
        )
    return times


class ForwardSolution(eqx.Module):
    """What a `ForwardProblem` gives for one parameter set.

    **Attributes:**

    - `state`: the `ebm.Equilibrium` (`ebm.SteadyState` for another model of the
        protocol), or the `ebm.Trajectory` (`ebm.Run`) of the run.
    - `T`: the equilibrium's surface temperature (the zonal model's profile,
        degC), or the run's at the saved times (`(len(times), n_lat)` for the
        zonal model; its last one where no `times` are given).
    - `ok`: whether the solve succeeded (a root-find that converged; a run that
        reached its end).
    - `result`: the solve's `ebm.RESULTS`.
    - `diagnostics`: the zonal equilibrium's `(leading_eigenvalue,
        condition_number)` (the surface's for `ebm.DeepOceanModel`), to warn near a
        fold; `None` for a run and for the global models.
    """

    state: object
    T: Array
    ok: Bool[Array, ""]
    result: RESULTS
    diagnostics: tuple[Array, Array] | None


class ForwardProblem(eqx.Module):
    """`params -> ForwardSolution`: the solve behind the analyses.

    A Module rather than a closure, so that `eqx.filter_jit` finds the compiled
    program again on the next call with the same settings: the arrays (start,
    snapshot times, initial profile) are traced, the choices static.

    **Attributes:**

    - `model`: the `ebm.EnergyBalanceModel`, or any model of the protocol.
    - `through`: `"equilibrium"` or `"trajectory"`.
    - `start`: the equilibrium's start (a profile or a name: see
        `ebm.equilibrium`).
    - `equilibrium_adjoint`: the equilibrium's implicit adjoint (`None`: the one
        `ebm.equilibrium` picks for the model).
    - `years`: the run's length, years (trajectory only).
    - `times`: the years at which the run is saved (`None`: its end only).
    - `T0`: the run's initial profile (`None`: present day).
    - `adjoint`: the run's adjoint (a name or a `diffrax.AbstractAdjoint`).
    - `solver`: the run's solver (`None`: the model's default; `"exact"` for a
        global layer model under a piecewise-linear forcing).
    """

    model: AbstractModel
    through: str = eqx.field(static=True)
    start: object = "present"
    equilibrium_adjoint: object = None
    years: object = None
    times: Array | None = None
    T0: object = None
    adjoint: object = "recursive"
    solver: object = None

    def __check_init__(self):
        check_through(self.through)
        # A run of a model under a forcing scenario must stay within its span (a
        # series'), checked here, where the run's length is known: inside the
        # compiled solve the series is traced.
        scenario = getattr(self.model, "forcing", None)
        concrete = not isinstance(self.years, jax.core.Tracer)
        if (
            self.through == "trajectory"
            and isinstance(scenario, AbstractScenario)
            and self.years is not None
            and concrete
        ):
            start = run_start(self.model)
            scenario.check_span(start, start + float(self.years))

    def solve(self, params: Params) -> ForwardSolution:
        # The parameters are checked by the entry point before tracing (or map
        # into their ranges by construction); the solve's result is returned, for
        # the caller to reject or raise on, so that no check is compiled in.
        with params_checked():
            if self.through == "equilibrium":
                # No adjoint given, `equilibrium` picks the model's (a direct
                # tridiagonal solve for ebm's own terms).
                chosen = (
                    {}
                    if self.equilibrium_adjoint is None
                    else {"adjoint": self.equilibrium_adjoint}
                )
                state = equilibrium(
                    params,
                    model=self.model,
                    start=self.start,
                    throw=False,
                    near_fold=None,
                    **chosen,
                )
                zonal = getattr(state, "surface", state)
                return ForwardSolution(
                    state=state,
                    T=state.T,
                    ok=state.converged,
                    result=state.result,
                    diagnostics=(
                        (zonal.leading_eigenvalue, zonal.condition_number)
                        if isinstance(zonal, Equilibrium)
                        else None
                    ),
                )
            saveat = (
                diffrax.SaveAt(t1=True)
                if self.times is None
                else diffrax.SaveAt(ts=self.times)
            )
            run = integrate(
                params,
                years=self.years,
                model=self.model,
                T0=self.T0,
                adjoint=self.adjoint,
                saveat=saveat,
                throw=False,
                **({} if self.solver is None else {"solver": self.solver}),
            )
        return ForwardSolution(
            state=run,
            T=run.T if self.times is None else run.Ts,
            ok=run.result == RESULTS.successful,
            result=run.result,
            diagnostics=None,
        )
