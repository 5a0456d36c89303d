"""The members of an ensemble: the batch of parameters, the function computed for
each (`_Member`: the task's result and, optionally, the gradient of one output) in
blocks, and why a member failed (see `ebm.ensemble`)."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._model.parameters import AbstractParams, params_checked
from .._results import RESULTS
from .._zonal.params import Params


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
    kinds = sorted({type(p).__name__ for p in members})
    if len(kinds) > 1:
        raise ValueError(
            "`members` must all be parameters of one model, of one class, got "
            f"{', '.join(kinds)}: run one ensemble per model."
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
