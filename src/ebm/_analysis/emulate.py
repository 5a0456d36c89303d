r"""Emulating a CMIP6 model: a global layer model fitted to the model's own
`abrupt-4xCO2` run, by maximum likelihood through the exact solution.

The data are the annual means $T_k$ (K) and $N_k$ (W m-2) of years
$k = 1, \dots, n$ of the experiment (`ebm.cmip6_run`); the layer model's are
$\bar T_k(\theta)$ and $\bar N_k(\theta)$, the exact means over the same years of
its run under `ebm.AbruptCO2(4)` (the integrals of its linear solution, as
`ebm.gregory` computes them). With independent Gaussian errors of unknown standard
deviations $\sigma_T$ and $\sigma_N$ (internal variability and the model's
structural misfit), maximising the likelihood over the $\sigma$s leaves the profile

$$\ell(\theta) = \frac n2 \log \frac1n\sum_k (\bar T_k - T_k)^2
+ \frac n2 \log \frac1n\sum_k (\bar N_k - N_k)^2,$$

minimised over every positive parameter of the model in log coordinates (the
declared transforms) by L-BFGS (`optimistix`), with gradients through the exact
solution, from a start taken from the data's Gregory regression (its intercept
$F_{4x} = 2F_{2x}$ and slope $-\lambda$). The forcing of doubled CO2 is a parameter
of the fit: a CMIP6 model's own is not known, and $F_{2x}/\lambda$ is the
emulator's ECS. The fit's out-of-sample check is the same model's `1pctCO2` run:
its TCR, the mean warming over years 61-80, against the emulator's.
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array

from .._layers.metrics import _exact_integrals, ecs_and_result, tcr_and_result
from .._model.parameters import with_values
from .._results import RESULTS, raise_if_failed, with_result_names
from .._scenarios.base import AbruptCO2
from .._scenarios.cmip6 import check_model_name, cmip6_run, cmip6_tuning
from .forward import check_names


class Emulation(eqx.Module):
    """A layer model fitted to a CMIP6 model's `abrupt-4xCO2` run (from
    `ebm.emulate`).

    **Attributes:**

    - `name`: the CMIP6 model (or `"data"` for data of one's own).
    - `params`: the fitted parameters (the model's `Params`).
    - `fitted`: the names of the parameters fitted.
    - `years`: the years of the experiment fitted, 1 to n.
    - `T`, `N`: the data, annual means, K and W m-2.
    - `T_fit`, `N_fit`: the emulator's annual means of the same years.
    - `rmse_T`, `rmse_N`: the root-mean-square misfits, K and W m-2.
    - `ecs`: the emulator's ECS (`ebm.ecs`), K (NaN where it has none: a fit
        whose feedback went to 0).
    - `ecs_gregory`: the data's effective climate sensitivity, from the Gregory
        regression of `N` on `T` over the years fitted: minus intercept over
        slope, halved, K.
    - `tcr`: the emulator's TCR (`ebm.tcr`), K.
    - `tcr_cmip6`: the CMIP6 model's own TCR, the mean of its `1pctCO2` warming
        over years 61-80, K (NaN without that run).
    - `loss`: the profile negative log-likelihood at the fit (see the module
        docstring).
    - `result`: an `ebm.RESULTS`; `RESULTS.successful` when the fit converged.
    - `num_steps`: the optimiser's steps.
    """

    name: str = eqx.field(static=True)
    params: eqx.Module
    fitted: tuple[str, ...] = eqx.field(static=True)
    years: Array
    T: Array
    N: Array
    T_fit: Array
    N_fit: Array
    rmse_T: Array
    rmse_N: Array
    ecs: Array
    ecs_gregory: Array
    tcr: Array
    tcr_cmip6: Array
    loss: Array
    result: RESULTS
    num_steps: Array

    def __repr__(self) -> str:
        return with_result_names(self)


def annual_means(model, params, years: int):
    """The layer model's annual-mean warming and top-of-atmosphere imbalance over
    years 1 to `years` of `abrupt-4xCO2`, exactly: `(T, N)`, K and W m-2, each of
    length `years`."""
    experiment = eqx.tree_at(lambda m: m.forcing, model, AbruptCO2(4.0))
    ts = jnp.arange(0.0, years + 1.0)
    integrals, _ = _exact_integrals(experiment, params, ts[1:])
    integrals = jnp.concatenate([jnp.zeros((1, 2)), integrals])
    annual = jnp.diff(integrals, axis=0)
    return annual[:, 0], annual[:, 1]


def profile_loss(params, model, T, N):
    """The profile negative log-likelihood of the module docstring."""
    T_fit, N_fit = annual_means(model, params, T.shape[0])
    n = T.shape[0]
    return (
        0.5
        * n
        * (jnp.log(jnp.mean((T_fit - T) ** 2)) + jnp.log(jnp.mean((N_fit - N) ** 2)))
    )


def gregory_regression(T, N):
    """`(intercept, slope)` of the least-squares line of `N` on `T`."""
    T, N = np.asarray(T, float), np.asarray(N, float)
    slope, intercept = np.polyfit(T, N, 1)
    return float(intercept), float(slope)


def emulate(
    name_or_data,
    *,
    model=None,
    fit=None,
    years: int | None = None,
    max_steps: int = 256,
    throw: bool = True,
) -> Emulation:
    """Fit a global layer model to a CMIP6 model's `abrupt-4xCO2` run by maximum
    likelihood (see the module docstring).

    **Arguments:**

    - `name_or_data`: a CMIP6 model, one of `ebm.cmip6_models()`; or data of your
        own, `(T, N)`: the annual means of years 1, 2, ... of an abrupt-4xCO2
        experiment, K and W m-2.
    - `model`: the layer model to fit (default `ebm.TwoLayerModel()`; also
        `ebm.NLayerModel(3)`); its forcing is replaced by `ebm.AbruptCO2(4)`.
    - `fit`: the names of the parameters to fit (default every one of the model's
        `Params`; leave out `efficacy` to hold it at its value, 1 by default).
    - `years`: how many years of the run to fit (default all of them, 150 for
        most models).
    - `max_steps`: the optimiser's step limit.
    - `throw`: raise if the fit did not converge (default), else say so in
        `result`.

    **Returns:**

    An `ebm.Emulation`.

    **Raises:**

    - `ValueError`: for a model name that is not shipped (with the closest ones),
        data of unequal lengths or with NaN, a `years` longer than the run, or
        unknown parameter names.
    - `EquinoxRuntimeError` (with `throw=True`): when the fit did not converge.
    """
    from .._checks import check_count
    from .._layers.base import AbstractLayerModel
    from .._layers.two_layer import TwoLayerModel

    model = TwoLayerModel() if model is None else model
    if not isinstance(model, AbstractLayerModel):
        raise TypeError(
            "`model` must be a global layer model (ebm.TwoLayerModel(), "
            f"ebm.NLayerModel(n)), got {type(model).__name__}."
        )
    model = eqx.tree_at(lambda m: m.forcing, model, AbruptCO2(4.0))
    if years is not None:
        check_count("years", years, 2)
    check_count("max_steps", max_steps, 1)
    if isinstance(name_or_data, str):
        name = check_model_name(name_or_data)
        _, T, N = cmip6_run(name)
    else:
        name = "data"
        T, N = _check_data(name_or_data)
    years = T.shape[0] if years is None else years
    if years > T.shape[0]:
        raise ValueError(
            f"`years` = {years} is longer than the run ({T.shape[0]} years)."
        )
    T, N = T[:years], N[:years]
    container = model.Params
    names = check_names(
        container.field_names() if fit is None else fit, "fit", container
    )
    intercept, slope = gregory_regression(T, N)
    start = container()
    guesses = {"F2x": intercept / 2.0, "feedback": -slope}
    start = with_values(
        start,
        {
            n: v
            for n, v in guesses.items()
            if n in names and np.isfinite(v) and v > 0 and n in container.field_names()
        },
    )
    params, loss, result, num_steps = _fit(
        start, model, names, jnp.asarray(T), jnp.asarray(N), max_steps
    )
    T_fit, N_fit = annual_means(model, params, years)
    tcr_cmip6 = np.nan
    if name != "data":
        try:
            _, ramp, _ = cmip6_run(name, "1pctCO2")
            tcr_cmip6 = float(np.mean(ramp[60:80])) if ramp.size >= 80 else np.nan
        except ValueError:
            pass
    emulation = Emulation(
        name=name,
        params=params,
        fitted=names,
        years=jnp.arange(1.0, years + 1.0),
        T=jnp.asarray(T),
        N=jnp.asarray(N),
        T_fit=T_fit,
        N_fit=N_fit,
        rmse_T=jnp.sqrt(jnp.mean((T_fit - T) ** 2)),
        rmse_N=jnp.sqrt(jnp.mean((N_fit - N) ** 2)),
        ecs=_nan_unless_successful(*ecs_and_result(params, model)),
        ecs_gregory=jnp.asarray(-intercept / slope / 2.0),
        tcr=_nan_unless_successful(*tcr_and_result(params, model)),
        tcr_cmip6=jnp.asarray(tcr_cmip6),
        loss=loss,
        result=result,
        num_steps=num_steps,
    )
    return raise_if_failed(emulation, result) if throw else emulation


def _nan_unless_successful(value, result):
    """`value`, or NaN where `result` is a failure (an emulator whose ECS's
    root-find failed: a fit with no feedback)."""
    return jnp.where(result == RESULTS.successful, value, jnp.nan)


def _check_data(data):
    """`(T, N)` as float arrays of one length, finite.

    **Raises:**

    - `ValueError`: naming what is wrong.
    """
    try:
        T, N = (np.asarray(x, dtype=float) for x in data)
    except (TypeError, ValueError):
        raise ValueError(
            "`name_or_data` must be a CMIP6 model's name or `(T, N)`, two series of "
            f"annual means, got {type(data).__name__}."
        ) from None
    if T.ndim != 1 or T.shape != N.shape or T.size < 2:
        raise ValueError(
            "`(T, N)` must be two 1-d series of the same length (>= 2), got shapes "
            f"{T.shape} and {N.shape}."
        )
    if not (np.all(np.isfinite(T)) and np.all(np.isfinite(N))):
        raise ValueError("`(T, N)` must be finite, got a NaN or infinite value.")
    return T, N


@eqx.filter_jit
def _fit(start, model, names, T, N, max_steps):
    """`(params, loss, result, steps)`: L-BFGS on the profile loss in the declared
    unconstrained coordinates of `names`."""
    container = type(start)
    z0 = {
        n: container.declaration(n).to_unconstrained(getattr(start, n)) for n in names
    }

    def params_of(z):
        values = {n: container.declaration(n).from_unconstrained(z[n]) for n in names}
        return with_values(start, values)

    def loss(z, _):
        return profile_loss(params_of(z), model, T, N)

    solution = optx.minimise(
        loss,
        optx.LBFGS(rtol=1e-7, atol=1e-7),
        z0,
        max_steps=max_steps,
        throw=False,
    )
    params = params_of(solution.value)
    return (
        params,
        loss(solution.value, None),
        RESULTS.promote(solution.result),
        solution.stats["num_steps"],
    )


def tuning_misfit(name: str, model=None):
    """The root-mean-square misfits `(rmse_T, rmse_N)` (K, W m-2) of AR6 WG1 Chapter
    7's own two-layer tuning of CMIP6 model `name` (`ebm.cmip6_tuning`), run
    through ebm's `ebm.TwoLayerModel` over the same years as `ebm.emulate` fits:
    the reference an emulation is compared with."""
    from .._layers.two_layer import TwoLayerModel

    model = TwoLayerModel() if model is None else model
    params = model.Params(**cmip6_tuning(name))
    _, T, N = cmip6_run(name)
    T_fit, N_fit = annual_means(model, params, T.shape[0])
    return (
        float(jnp.sqrt(jnp.mean((T_fit - T) ** 2))),
        float(jnp.sqrt(jnp.mean((N_fit - N) ** 2))),
    )


def emulation_table(emulations) -> list[dict]:
    """One row per `ebm.Emulation`: its fitted parameters, ECS (the emulator's and
    the Gregory estimate), TCR (the emulator's and the CMIP6 model's), its misfits,
    and the misfits of the chapter's own tuning where it has one."""
    rows = []
    for emulation in emulations:
        row = {"model": emulation.name}
        for name in type(emulation.params).field_names():
            row[name] = float(getattr(emulation.params, name))
        row |= {
            "ecs_K": float(emulation.ecs),
            "ecs_gregory_K": float(emulation.ecs_gregory),
            "tcr_K": float(emulation.tcr),
            "tcr_cmip6_K": float(emulation.tcr_cmip6),
            "rmse_T_K": float(emulation.rmse_T),
            "rmse_N_W_m2": float(emulation.rmse_N),
        }
        try:
            chapter_T, chapter_N = tuning_misfit(emulation.name)
        except ValueError:
            chapter_T = chapter_N = float("nan")
        row |= {"chapter_rmse_T_K": chapter_T, "chapter_rmse_N_W_m2": chapter_N}
        rows.append(row)
    return rows
