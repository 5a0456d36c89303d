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

import dataclasses
import itertools
import math
import numbers
import warnings
from collections.abc import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Array, Bool, PyTree

from .._checks import check_count
from .._model.parameters import AbstractParams, params_checked
from .._model.params import Params
from .._progress import HostProgress
from .._results import RESULTS, error_message


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


def _num_members(params: Params) -> int:
    """The length of the batch axis: the first axis of every field that has one
    more axis than one value of it (a scalar, or a profile)."""
    shapes = {
        p.name: np.shape(getattr(params, p.name)) for p in type(params).declarations
    }
    batched = {
        shapes[p.name][0]
        for p in type(params).declarations
        if len(shapes[p.name]) == p.ndim + 1
    }
    if len(batched) != 1:
        raise ValueError(
            "`members` must be an ebm.Params whose fields are one value each or "
            "batches of one length along a first axis (see ebm.sweep), got shapes "
            f"{shapes}."
        )
    return batched.pop()


def _broadcast(params: Params, count: int) -> Params:
    """`params` with every field batched along a first axis of `count` members (a
    field that is one value is repeated; a profile given as a scalar is one)."""
    fields = {}
    for parameter in type(params).declarations:
        value = np.asarray(getattr(params, parameter.name))
        if value.ndim <= parameter.ndim:
            value = np.broadcast_to(value, (count, *value.shape))
        fields[parameter.name] = value
    return type(params)(**fields)


def _stack(members) -> Params:
    """`members` as one `Params` with every field batched along a first axis."""
    if isinstance(members, AbstractParams):
        return _broadcast(members, _num_members(members))
    members = list(members)
    if not members or not all(isinstance(p, AbstractParams) for p in members):
        raise ValueError(
            "`members` must be a batched ebm.Params (see ebm.sweep; or a model's "
            "own parameters, `model.Params`) or a non-empty sequence of them."
        )

    def stack(*values):
        values = [np.asarray(value) for value in values]
        shape = np.broadcast_shapes(*(value.shape for value in values))
        return np.stack([np.broadcast_to(value, shape) for value in values])

    return jax.tree.map(stack, *members)


def _task_function(task) -> Callable:
    from .._steady.equilibrium import equilibrium
    from .._steady.seasonal import periodic_equilibrium
    from .._stepping.integrate import integrate, integrate_fixed

    tasks = {
        "equilibrium": equilibrium,
        "integrate": integrate,
        "integrate_fixed": integrate_fixed,
        "periodic_equilibrium": periodic_equilibrium,
    }
    if callable(task):
        return task
    if isinstance(task, str) and task in tasks:
        return tasks[task]
    raise ValueError(
        f"`task` must be one of {tuple(tasks)} or a function of ebm.Params, "
        f"got {task!r}."
    )


# Diagnostics computed under stop_gradient: their gradients would be zero.
_NOT_DIFFERENTIATED = ("leading_eigenvalue", "condition_number")


def _is_float_scalar(value) -> bool:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    return shape == () and dtype is not None and jnp.issubdtype(dtype, jnp.floating)


class _Member(eqx.Module):
    """One member's computation: the task, and the gradient of one output."""

    task: Callable = eqx.field(static=True)
    kwargs: dict
    output: str | Callable | None = eqx.field(static=True)
    differentiate: bool = eqx.field(static=True)

    def scalar(self, result):
        if callable(self.output):
            value = self.output(result)
        elif self.output in _NOT_DIFFERENTIATED:
            raise ValueError(
                f"`gradient={self.output!r}` is a diagnostic that is not "
                "differentiated; choose an output such as 'global_mean' or 'ice_edge'."
            )
        else:
            value = getattr(result, self.output, None)
        if not _is_float_scalar(value):
            fields = sorted(
                name
                for name, leaf in vars(result).items()
                if _is_float_scalar(leaf) and name not in _NOT_DIFFERENTIATED
            )
            raise ValueError(
                "`gradient` must name a scalar floating-point output of the result "
                f"(one of {fields}) or be a function returning one, got "
                f"{self.output!r}."
            )
        return value

    def __call__(self, params: Params):
        run = lambda p: self.task(p, **self.kwargs)  # noqa: E731
        if not self.differentiate:
            return run(params), None
        value = lambda p: (self.scalar(result := run(p)), result)  # noqa: E731
        (_, result), gradient = jax.value_and_grad(value, has_aux=True)(params)
        return result, gradient


@eqx.filter_jit
def _block(member: _Member, params: Params):
    # The members were checked on the host (`_check_members`).
    with params_checked():
        return jax.vmap(member)(params)


def _check_members(params: Params) -> None:
    """Every member's values against the declared ranges, on the host (an
    `eqx.tree_at` skips construction's check), so that the members' compiled
    program need hold no check.

    **Raises:**

    - `ValueError`: for a value out of its range, naming the member's index.
    """
    for declared in type(params).ranges:
        values = [np.asarray(getattr(params, name)) for name in declared.names()]
        if not np.all(declared.ok(*values)):
            raise ValueError(declared.message(values))


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


def _mesh(devices, mesh: Mesh | None) -> Mesh:
    if mesh is not None:
        if devices is not None:
            raise ValueError("Pass `devices` or `mesh`, not both.")
        if mesh.axis_names != ("member",):
            raise ValueError(
                "`mesh` must be one-dimensional with the axis name 'member', got "
                f"axes {mesh.axis_names}."
            )
        _check_every_process(mesh)
        return mesh
    if devices is None:
        devices = jax.devices()
    elif isinstance(devices, numbers.Integral) and not isinstance(devices, bool):
        devices = int(devices)
        available = jax.devices()
        if not 1 <= devices <= len(available):
            raise ValueError(
                f"`devices` must be between 1 and the {len(available)} devices "
                f"available, got {devices}."
            )
        devices = available[:devices]
    devices = list(devices)
    if not devices:
        raise ValueError("`devices` must name at least one device, got none.")
    mesh = Mesh(np.array(devices), ("member",))
    _check_every_process(mesh)
    return mesh


def _check_every_process(mesh: Mesh) -> None:
    """Every process must own a device of the mesh: each computes its own shards and
    all meet in the gather, so a process without one would leave the others waiting."""
    owners = {device.process_index for device in mesh.devices.flat}
    missing = sorted(set(range(jax.process_count())) - owners)
    if missing:
        raise ValueError(
            "The mesh's devices must include some of every process's: processes "
            f"{missing} have none (devices {[d.id for d in mesh.devices.flat]})."
        )


def _names(names: list[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


# Coordinates: the same for every member, neither checked nor masked.
_COORDINATES = ("lat", "t", "ts")
# Also not checked: a diagnostic that is infinite, legitimately, exactly at a fold.
_NOT_CHECKED = (*_COORDINATES, "condition_number")


def _field(path) -> str:
    return jax.tree_util.keystr(path).lstrip(".")


def _name(path) -> str:
    return _field(path).rsplit(".", 1)[-1]


def _checked(path, leaf) -> bool:
    return _name(path) not in _NOT_CHECKED and np.issubdtype(leaf.dtype, np.floating)


def _one_member(tree, index: int, count: int):
    """Member `index` of a batched pytree, each leaf a 0-d array (as `RESULTS[...]`
    wants of an item, to give its message)."""
    return jax.tree.map(lambda x: np.asarray(np.asarray(x).reshape(count)[index]), tree)


def _reasons(result, gradient, count: int) -> dict[int, str]:
    """Why each member failed: its result code, and which outputs are not finite."""
    codes: dict[int, str] = {}
    code = getattr(result, "result", None)
    if isinstance(code, RESULTS):
        failed = np.asarray(code != RESULTS.successful).reshape(count)
        for member in np.flatnonzero(failed):
            codes[int(member)] = RESULTS[_one_member(code, int(member), count)]
    nonfinite: dict[tuple[int, str], list[str]] = {}
    for kind, tree in (("outputs", result), ("gradient", gradient)):
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
            leaf = np.asarray(leaf)
            if not _checked(path, leaf):
                continue
            finite = np.isfinite(leaf.reshape(count, -1)).all(axis=1)
            for member in np.flatnonzero(~finite):
                nonfinite.setdefault((int(member), kind), []).append(_field(path))
    reasons: dict[int, list[str]] = {m: [message] for m, message in codes.items()}
    for (member, kind), names in nonfinite.items():
        reasons.setdefault(member, []).append(f"non-finite {kind}: {_names(names)}")
    return {member: " | ".join(parts) for member, parts in sorted(reasons.items())}


def _mask(tree, ok: np.ndarray):
    """Results with NaN for the floating-point outputs of the members that failed,
    and False for their booleans (a failed member's `stable` is no claim)."""

    def mask(path, leaf):
        leaf = np.asarray(leaf)
        if _name(path) in _COORDINATES:
            return jnp.asarray(leaf)
        where = _along_members(ok, leaf.ndim)
        if np.issubdtype(leaf.dtype, np.floating):
            return jnp.asarray(np.where(where, leaf, np.nan))
        if leaf.dtype == np.bool_:
            return jnp.asarray(np.where(where, leaf, False))
        return jnp.asarray(leaf)

    return jax.tree_util.tree_map_with_path(mask, tree)


def _along_members(ok: np.ndarray, ndim: int) -> np.ndarray:
    """`ok` shaped to broadcast over the member axis of an array of `ndim` axes."""
    return ok.reshape((-1,) + (1,) * (ndim - 1))


class _Layout(eqx.Module):
    """How the members lie on the mesh: every device holds the same number of whole
    blocks, `shard_size` members; the padding past `count` repeats member 0 (valid
    parameters), and blocks of padding alone are not computed."""

    mesh: Mesh
    count: int
    block_size: int
    shard_size: int

    @property
    def sharding(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec("member"))

    @property
    def padded_count(self) -> int:
        return self.shard_size * self.mesh.devices.size


def _layout(mesh: Mesh, count: int, block_size: int) -> _Layout:
    num_devices = mesh.devices.size
    block_size = min(block_size, count)  # a property of the batch, not the devices
    blocks_per_device = math.ceil(math.ceil(count / block_size) / num_devices)
    return _Layout(mesh, count, block_size, blocks_per_device * block_size)


def _place(params: Params, layout: _Layout) -> Params:
    """The members, padded, as global arrays sharded over the mesh."""
    padded = jax.tree.map(
        lambda x: np.concatenate(
            [x, np.repeat(x[:1], layout.padded_count - layout.count, axis=0)]
        ),
        params,
    )
    return jax.tree.map(
        lambda x: jax.make_array_from_callback(
            x.shape, layout.sharding, lambda i: x[i]
        ),
        padded,
    )


def _local_shards(placed: Params, layout: _Layout):
    """`(position, device, shard)` for each of this process's devices: its position
    on the mesh, and the members it holds."""
    leaves, treedef = jax.tree.flatten(placed)
    for position, device in enumerate(layout.mesh.devices.flat):
        if device.process_index != jax.process_index():
            continue
        shard = treedef.unflatten(
            [
                next(s.data for s in leaf.addressable_shards if s.device == device)
                for leaf in leaves
            ]
        )
        yield position, device, shard


def _gather(array: jax.Array) -> np.ndarray:
    """A global array as numpy on this process (gathered from every host)."""
    if array.is_fully_addressable:
        return np.asarray(array)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(array, tiled=True))


_RUNTIME_ERRORS = (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError)


def _retry_or_raise(member: _Member, block: Params, error: Exception):
    """A block that raised: retried if it was its gradient (see `_retry_block`); a
    value that raises is not a member's failure but the task's, and propagates."""
    if not member.differentiate:
        raise error
    return _retry_block(member, block, error)


def _run_block(member: _Member, block: Params):
    """One block, dispatched (asynchronously); retried if its gradient raised.
    Returns the output and the reasons of members failed by a retry."""
    try:
        return _block(member, block), {}
    except _RUNTIME_ERRORS as error:
        return _retry_or_raise(member, block, error)


def _run_shard(member: _Member, shard: Params, block_size: int, live: int):
    """One device's shard, in blocks: `live` members are real, the rest padding.
    Blocks of padding alone are not computed (`None`)."""
    starts = range(0, _num_members(shard), block_size)
    blocks = [jax.tree.map(lambda x: x[s : s + block_size], shard) for s in starts]
    outputs = [
        _run_block(member, block) if start < live else None
        for start, block in zip(starts, blocks)
    ]
    return blocks, outputs


def _retry_block(member: _Member, block: Params, error: Exception):
    """A block whose gradient raised: recompute it with the failed members swapped for
    one that converged, so that one member's failure cannot stop the others. If the
    gradient raises even so, the block's gradients are NaN and its members failed."""
    values_only = dataclasses.replace(member, differentiate=False)
    result, _ = _block(values_only, block)
    count = _num_members(block)
    ok = np.ones(count, bool)
    for failed in _reasons(result, None, count):
        ok[failed] = False
    device = next(iter(jax.tree.leaves(block)[0].devices()))
    shapes = eqx.filter_eval_shape(_block, member, block)[1]
    nan_gradient = jax.tree.map(
        lambda s: jax.device_put(jnp.full(s.shape, np.nan, s.dtype), device), shapes
    )
    raised = f"the gradient raised: {error_message(error)}"
    if not ok.any():
        return (result, nan_gradient), {}
    first = int(np.flatnonzero(ok)[0])
    safe = jax.tree.map(lambda x: jnp.where(ok, x, x[first]), block)
    try:
        safe_result, gradient = jax.block_until_ready(_block(member, safe))
    except _RUNTIME_ERRORS as again:
        raised = f"the gradient raised: {error_message(again)}"
        return (result, nan_gradient), {i: raised for i in np.flatnonzero(ok)}
    gradient = jax.tree.map(
        lambda g, nan: jnp.where(_along_members(ok, g.ndim), g, nan),
        gradient,
        nan_gradient,
    )
    # Members that converged are unchanged by their neighbours: keep their values.
    result = jax.tree.map(
        lambda a, b: jnp.where(_along_members(ok, a.ndim), a, b),
        safe_result,
        result,
    )
    return (result, gradient), {}


def _dispatch(member: _Member, placed: Params, layout: _Layout) -> dict:
    """Every block of this process's devices, dispatched before any is waited for,
    so that the devices run at once: device -> (position, blocks, outputs)."""
    dispatched = {}
    for position, device, shard in _local_shards(placed, layout):
        live = layout.count - position * layout.shard_size
        blocks, outputs = _run_shard(member, shard, layout.block_size, live)
        dispatched[device] = (position, blocks, outputs)
    return dispatched


def _num_blocks(dispatched: dict) -> int:
    """The blocks computed (not padding alone) on this process's devices."""
    return sum(
        output is not None
        for _, _, pending in dispatched.values()
        for output in pending
    )


def _finish(member: _Member, dispatched: dict, layout: _Layout, meter: HostProgress):
    """Wait for every dispatched block (retrying one whose gradient raised when it
    ran), telling `meter` of each: each device's outputs as one tree, and member ->
    why for the members whose gradient raised even on retry."""
    outputs = {}
    raised = {}
    done = 0
    template = None  # a computed block, whose shapes stand in for padding
    for device, (position, blocks, pending) in dispatched.items():
        finished = []
        for index, (block, output) in enumerate(zip(blocks, pending)):
            if output is None:
                if template is None:  # this process has padding alone
                    template = eqx.filter_eval_shape(_block, member, block)
                zeros = lambda x: jnp.zeros(x.shape, x.dtype, device=device)  # noqa: E731
                finished.append(jax.tree.map(zeros, template))
                continue
            output, retried = output
            try:
                output = jax.block_until_ready(output)
            except _RUNTIME_ERRORS as error:
                output, retried = _retry_or_raise(member, block, error)
            start = position * layout.shard_size + index * layout.block_size
            raised.update({start + int(i): why for i, why in retried.items()})
            finished.append(output)
            done += 1
            meter.step(done)
            template = output
        outputs[device] = jax.tree.map(lambda *xs: jnp.concatenate(xs), *finished)
    return outputs, raised


def _assemble(outputs: dict, layout: _Layout):
    """The devices' outputs as global arrays, gathered to this process and cut to
    the members (the padding dropped): `(result, gradient)`."""
    local = next(iter(outputs.values()))
    flat_outputs = [jax.tree.leaves(outputs[d]) for d in outputs]
    gathered = []
    for index, leaf in enumerate(jax.tree.leaves(local)):
        shape = (layout.padded_count,) + leaf.shape[1:]
        array = jax.make_array_from_single_device_arrays(
            shape, layout.sharding, [flat[index] for flat in flat_outputs]
        )
        gathered.append(_gather(array)[: layout.count])
    return jax.tree.unflatten(jax.tree.structure(local), gathered)


def _failures(result, gradient, raised: dict[int, str], count: int) -> dict[int, str]:
    """Member -> why it failed, in order: its result code and non-finite outputs,
    or that its gradient raised."""
    failures = _reasons(result, gradient, count)
    for index, why in raised.items():
        if index < count:
            failures[index] = why
    return dict(sorted(failures.items()))


def _varying(params: Params) -> tuple[str, ...]:
    return tuple(
        name
        for name in type(params).field_names()
        if np.any(np.ptp(np.asarray(getattr(params, name)), axis=0) > 0)
    )


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
