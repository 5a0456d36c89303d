"""How an ensemble's members are laid out on the devices of a mesh and computed, in
blocks, asynchronously on every device of this process (see `ebm.ensemble`'s module
docstring), and gathered back to every process."""

import collections
import dataclasses
import functools
import math
import numbers

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._progress import HostProgress
from .._results import error_message
from .._zonal.params import Params
from .ensemble_members import _along_members, _block, _Member, _num_members, _reasons


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
    Each block is a call that dispatches it (`_finish` calls them), or `None` for
    padding alone, which is not computed."""
    starts = range(0, _num_members(shard), block_size)
    blocks = [jax.tree.map(lambda x: x[s : s + block_size], shard) for s in starts]
    calls = [
        functools.partial(_run_block, member, block) if start < live else None
        for start, block in zip(starts, blocks)
    ]
    return blocks, calls


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
    """Every block of this process's devices, ready to be dispatched: device ->
    (position, blocks, calls)."""
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


# Blocks in flight on each device at once: one running and one queued behind it,
# so that a device never waits for the host between blocks, and memory holds two
# blocks' work however many members there are.
_IN_FLIGHT = 2


def _finish(member: _Member, dispatched: dict, layout: _Layout, meter: HostProgress):
    """Dispatch every block, `_IN_FLIGHT` at a time on each device (the devices at
    once), and wait for each in turn (retrying one whose gradient raised when it
    ran), telling `meter` as each finishes: each device's outputs as one tree, and
    member -> why for the members whose gradient raised even on retry."""
    raised = {}
    done = 0
    template = None  # a computed block, whose shapes stand in for padding
    finished = {device: [] for device in dispatched}
    waiting = {device: collections.deque() for device in dispatched}
    queues = {
        device: collections.deque(enumerate(zip(blocks, calls)))
        for device, (_, blocks, calls) in dispatched.items()
    }

    def launch(device):
        while queues[device] and len(waiting[device]) < _IN_FLIGHT:
            index, (block, call) = queues[device].popleft()
            waiting[device].append((index, block, None if call is None else call()))

    for device in dispatched:
        launch(device)
    while any(waiting.values()):
        for device, (position, _, _) in dispatched.items():
            if not waiting[device]:
                continue
            index, block, output = waiting[device].popleft()
            if output is None:
                if template is None:  # this process has padding alone
                    template = eqx.filter_eval_shape(_block, member, block)
                zeros = lambda x: jnp.zeros(x.shape, x.dtype, device=device)  # noqa: E731
                finished[device].append(jax.tree.map(zeros, template))
                launch(device)
                continue
            output, retried = output
            try:
                output = jax.block_until_ready(output)
            except _RUNTIME_ERRORS as error:
                output, retried = _retry_or_raise(member, block, error)
            start = position * layout.shard_size + index * layout.block_size
            raised.update({start + int(i): why for i, why in retried.items()})
            finished[device].append(output)
            done += 1
            meter.step(done)
            template = output
            launch(device)
    outputs = {
        device: jax.tree.map(lambda *xs: jnp.concatenate(xs), *blocks)
        for device, blocks in finished.items()
    }
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
