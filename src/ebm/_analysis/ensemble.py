r"""Ensembles: one computation for a batch of parameters, spread over devices.

`ebm.ensemble(members, "equilibrium", gradient="global_mean")` runs an entry point
(`equilibrium`, `integrate`, `integrate_fixed`, `periodic_equilibrium`, or any
function of `Params`) for every member of a batch of parameters, with `jax.vmap`,
on every device of a `jax.sharding.Mesh`, and optionally the gradient of one scalar
output with respect to every parameter of every member.

How the work is laid out:

- The members are padded and placed on the mesh with
    `NamedSharding(mesh, PartitionSpec("member"))`: device `d` holds a contiguous
    shard. After `jax.distributed.initialize()`, `jax.devices()` (the default mesh)
    spans every host, and each process computes only its own devices' shards.
- Each device computes its shard in blocks of `block_size` members: one `jit` of
    `vmap` of the member function, the same program on every device, dispatched
    to each device asynchronously. No device waits for another's members (there
    is no collective inside the solves). The outputs are assembled into global
    arrays with the same `NamedSharding` and gathered to every process.
- Every member sits at the same position of a block of the same size whatever the
    number of devices, so results are bit for bit the same on one device or many
    (tested): XLA's rounding can depend on the shape of a vectorised operation, and
    on whether a program was partitioned, so neither a `vmap` of a different size
    nor a partitioned `jit` would give this.

Failures. Every entry point runs with `throw=False`: a member that does not
converge returns its failure code instead of stopping the others. A member fails
when its `result` is not successful or any of its outputs (or its gradient) is not
finite. Failed members' floating-point outputs (not their coordinates) are set to
NaN, so that a reduction over all members cannot quietly include an unconverged
value. A block whose gradient raised is recomputed with its failed members swapped
for one that converged; if it raises again, its members fail. `Ensemble.ok`,
`.failures` (member -> reason) and the reductions `Ensemble.mean`/`std`/`quantile`
(over the members that succeeded, with their count) say which and why, and
`on_failure` chooses between a warning (default), an error, or silence.
"""

import itertools
import warnings
from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jaxtyping import Array, Bool, PyTree

from .._checks import check_count
from .._progress import HostProgress
from .._zonal.params import Params
from .ensemble_layout import (
    _assemble,
    _dispatch,
    _finish,
    _layout,
    _mesh,
    _num_blocks,
    _place,
)
from .ensemble_members import (
    _broadcast,
    _check_members,
    _failures,
    _mask,
    _Member,
    _num_members,
    _stack,
    _task_function,
    _varying,
)


ON_FAILURE = ("warn", "raise", "ignore")


class EnsembleFailureWarning(RuntimeWarning):
    """Some members of an ensemble failed; see `Ensemble.failures`."""


def sweep(params: Params | None = None, *, product: bool = False, **values) -> Params:
    """A batch of parameters: `params` with some fields varying across members.

    **Arguments:**

    - `params`: the fields that do not vary (default `ebm.Params()`; for a model
        with terms of its own, `model.Params()`).
    - `product`: if `False` (default), the arrays in `values` have one length, and
        member `i` takes the `i`-th entry of each; if `True`, every combination
        (the first name varies slowest).
    - `values`: field name -> 1-d array of values (for a profile parameter, such
        as `D_bounds`, a 2-d array: one profile per member).

    **Returns:**

    An `ebm.Params` whose every field has shape `(members,)`, validated like any
    `Params`.

    **Raises:**

    - `ValueError`: for an unknown field, an array that is not 1-d or is empty,
        arrays of different lengths (without `product`), or an invalid value.
    """
    base = Params() if params is None else params
    container = type(base)
    names = container.field_names()
    for parameter in container.declarations:
        if np.ndim(getattr(base, parameter.name)) > parameter.ndim:
            raise ValueError(
                "`params` must hold one value per field (the ones that do not vary), "
                f"got `{parameter.name}` of shape "
                f"{np.shape(getattr(base, parameter.name))}."
            )
    arrays = {}
    for name, value in values.items():
        if name not in names:
            raise ValueError(
                f"`{name}` is not a parameter; the parameters are {names}."
            )
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as error:
            raise ValueError(f"`{name}` must be numbers, got {value!r}.") from error
        ndim = 1 + container.declaration(name).ndim
        if array.ndim != ndim or array.size == 0:
            what = (
                "1-d array of values" if ndim == 1 else "2-d array, one profile per row"
            )
            raise ValueError(
                f"`{name}` must be a non-empty {what}, got shape {array.shape}."
            )
        arrays[name] = array
    if not arrays:
        raise ValueError("Give at least one field to vary, e.g. sweep(D=[0.3, 0.5]).")
    if product:
        indices = np.meshgrid(
            *(np.arange(len(a)) for a in arrays.values()), indexing="ij"
        )
        arrays = {
            name: array[index.ravel()]
            for (name, array), index in zip(arrays.items(), indices)
        }
    lengths = {name: len(array) for name, array in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(
            f"The arrays must have one length (or pass product=True), got {lengths}."
        )
    (count,) = set(lengths.values())
    fields = {name: arrays.get(name, getattr(base, name)) for name in names}
    return _broadcast(container(**fields), count)


class Ensemble(eqx.Module):
    """The results of `ebm.ensemble`, each with a leading `member` axis.

    **Attributes:**

    - `params`: the members' parameters (`ebm.Params`, every field `(member,)`).
    - `result`: the batched result of the task (e.g. an `ebm.Equilibrium` whose `T`
        has shape `(member, lat)`). Floating-point outputs of failed members are NaN
        and their boolean outputs (e.g. `stable`) False: `ok` says which failed.
    - `gradient`: an `ebm.Params` of d `output` / d parameter per member (`None`
        without `gradient=`); NaN for failed members.
    - `output`: the name of the differentiated output (`None` without `gradient=`,
        `"output"` for a function).
    - `ok`: whether each member succeeded (converged, finite outputs and gradient).
    - `failure_reasons`: (member, why it failed) pairs; `failures` is the same as
        a dict.
    - `varying`: the parameter fields that differ between members.
    """

    params: Params
    result: PyTree
    gradient: Params | None
    output: str | None = eqx.field(static=True)
    ok: Bool[Array, " member"]
    failure_reasons: tuple[tuple[int, str], ...] = eqx.field(static=True)
    varying: tuple[str, ...] = eqx.field(static=True)

    @property
    def failures(self) -> dict[int, str]:
        """Member index -> why it failed, for the failed members."""
        return dict(self.failure_reasons)

    @property
    def num_members(self) -> int:
        return int(self.ok.shape[0])

    def _member_values(self, name: str) -> np.ndarray:
        if self.gradient is not None:
            for parameter in type(self.gradient).field_names():
                if name == f"d_{self.output}_d_{parameter}":
                    return np.asarray(getattr(self.gradient, parameter))
        if not hasattr(self.result, name):
            gradients = (
                f", nor d_{self.output}_d_<parameter> for the gradient"
                if self.gradient is not None
                else " (and no gradient was computed)"
            )
            raise ValueError(
                f"`{name}` is not a field of the ensemble's result{gradients}."
            )
        return np.asarray(getattr(self.result, name))

    def _succeeded(self, name: str) -> np.ndarray:
        values = self._member_values(name)[np.asarray(self.ok)]
        if values.shape[0] == 0:
            raise ValueError(
                f"No member succeeded, so `{name}` has no statistics: "
                f"{len(self.failures)} failures (see Ensemble.failures)."
            )
        return values

    def mean(self, name: str) -> tuple[np.ndarray, int]:
        """Mean over the members that succeeded of a result field (e.g. `"T"`, or
        `"d_global_mean_d_D"` for a gradient), and how many members that is."""
        values = self._succeeded(name)
        return values.mean(axis=0), int(values.shape[0])

    def std(self, name: str) -> tuple[np.ndarray, int]:
        """Standard deviation over the members that succeeded, and their count."""
        values = self._succeeded(name)
        return values.std(axis=0), int(values.shape[0])

    def quantile(self, name: str, q) -> tuple[np.ndarray, int]:
        """Quantiles `q` over the members that succeeded, and their count."""
        values = self._succeeded(name)
        return np.quantile(values, q, axis=0), int(values.shape[0])


def _check_options(task, on_failure: str, block_size: int, kwargs: dict):
    """The task's function and the keyword arguments it runs with (`throw=False`;
    an equilibrium does not look for folds, which inside `vmap` it could not warn
    of anyway).

    **Raises:**

    - `ValueError`: for a bad `on_failure`, `block_size`, `throw=True`, `saveat`
        with `steps=True`, or `task`.
    """
    if on_failure not in ON_FAILURE:
        raise ValueError(
            f"`on_failure` must be one of {ON_FAILURE}, got {on_failure!r}."
        )
    check_count("block_size", block_size, 1)
    if kwargs.get("throw", False):
        raise ValueError(
            "`throw` must be False in an ensemble: a failed member is reported "
            "(see `on_failure`) instead of stopping the others."
        )
    saveat = kwargs.get("saveat")
    if saveat is not None and getattr(saveat.subs, "steps", False):
        raise ValueError(
            "`saveat` with steps=True saves at each member's own steps, which differ "
            "between members; save at fixed times instead, SaveAt(ts=...)."
        )
    function = _task_function(task)
    if not callable(task):
        kwargs = {**kwargs, "throw": False}
    if task == "equilibrium":
        kwargs.setdefault("near_fold", None)
    return function, kwargs


def _report(failures: dict[int, str], count: int, on_failure: str) -> None:
    if failures and on_failure != "ignore":
        message = _failure_message(failures, count)
        if on_failure == "raise":
            raise RuntimeError(message)
        warnings.warn(message, EnsembleFailureWarning, stacklevel=3)


def ensemble(
    members,
    task="equilibrium",
    *,
    gradient: str | Callable | None = None,
    devices=None,
    mesh: Mesh | None = None,
    block_size: int = 256,
    on_failure: str = "warn",
    progress: bool | diffrax.AbstractProgressMeter = False,
    **kwargs,
) -> Ensemble:
    """Run `task` for every member of a batch of parameters, on every device.

    **Arguments:**

    - `members`: an `ebm.Params` whose fields are scalars (shared) or 1-d arrays of
        one length (see `ebm.sweep`), or a sequence of `ebm.Params`.
    - `task`: `"equilibrium"` (default), `"integrate"`, `"integrate_fixed"`,
        `"periodic_equilibrium"`, or a function `params -> result` (an equinox
        Module or pytree of arrays) built from them (pass `throw=False` to ebm's
        entry points inside it, or one failure raises for the whole block).
    - `gradient`: the name of a scalar output of the result (e.g. `"global_mean"`,
        `"ice_edge"`), or a function `result -> scalar`: its gradient with
        respect to every parameter of every member, by the task's own method
        (implicit for equilibria, the chosen adjoint for integrations).
    - `devices`: the devices to use: a number (the first that many of
        `jax.devices()`) or a sequence of devices (default: all of `jax.devices()`,
        which spans every host after `jax.distributed.initialize()`).
    - `mesh`: a one-dimensional `jax.sharding.Mesh` with the axis `"member"`,
        instead of `devices`.
    - `block_size`: members per compiled call (default 256, or all of them when
        fewer; memory grows with it: lower it for fine grids).
        Results are bit for bit the same for any number of devices at one
        `block_size`.
    - `on_failure`: `"warn"` (default: an `ebm.EnsembleFailureWarning` naming the
        failed members and why), `"raise"` (a `RuntimeError` with the same text) or
        `"ignore"`.
    - `progress`: `True` for a progress bar on stderr (the blocks of `block_size`
        members finished, on this process's devices), or any
        `diffrax.AbstractProgressMeter`, as for `ebm.integrate`. A batch of one
        block is one compiled call: its bar goes from 0 to 100% at once.
    - `kwargs`: passed to the task (e.g. `grid=`, `model=`, `years=`, `adjoint=`,
        `start=`). `throw` is always `False`: failures are reported per member.

    **Returns:**

    An `ebm.Ensemble`; `ebm.to_dataset` makes it an xarray Dataset with a
    `member` dimension.

    **Raises:**

    - `ValueError`: for bad `members`, `task`, `gradient` (not a scalar float
        output), `devices`, `mesh` (also one that leaves a process without a
        device), `block_size`, `on_failure`, `saveat` with `steps=True`, or
        `throw=True`.
    - `RuntimeError`: with `on_failure="raise"`, when any member failed.
    """
    function, kwargs = _check_options(task, on_failure, block_size, kwargs)
    params = _stack(members)
    _check_members(params)
    count = _num_members(params)
    layout = _layout(_mesh(devices, mesh), count, block_size)
    member = _Member(function, kwargs, gradient, gradient is not None)
    dispatched = _dispatch(member, _place(params, layout), layout)
    with HostProgress(progress, _num_blocks(dispatched), "block") as meter:
        outputs, raised = _finish(member, dispatched, layout, meter)
    result, grads = _assemble(outputs, layout)
    failures = _failures(result, grads, raised, count)
    ok = np.ones(count, bool)
    ok[list(failures)] = False
    ensemble = Ensemble(
        params=jax.tree.map(jnp.asarray, params),
        result=_mask(result, ok),
        gradient=None if grads is None else _mask(grads, ok),
        output=None
        if gradient is None
        else (gradient if isinstance(gradient, str) else "output"),
        ok=jnp.asarray(ok),
        failure_reasons=tuple(failures.items()),
        varying=_varying(params),
    )
    _report(failures, count, on_failure)
    return ensemble


def _failure_message(failures: dict[int, str], count: int, shown: int = 10) -> str:
    lines = [f"ebm.ensemble: {len(failures)} of {count} members failed:"]
    for member, reason in itertools.islice(failures.items(), shown):
        lines.append(f"  member {member}: {reason}")
    if len(failures) > shown:
        lines.append(f"  ... and {len(failures) - shown} more (see Ensemble.failures)")
    lines.append("Their outputs are NaN; Ensemble.mean/std/quantile skip them.")
    return "\n".join(lines)
