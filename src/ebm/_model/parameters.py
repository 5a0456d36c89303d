r"""Parameters, declared by the physical terms that use them.

A term of the energy budget (`ebm.AbstractLongwave` and the other bases) lists its
parameters once, as `ebm.Parameter` declarations in its class attribute
`parameters`. Each one holds the parameter's name, default, units (UDUNITS),
allowed range, the transform `ebm.fit` optimises it in, and a long name. Parameters
of several terms that depend on each other (the ice-free albedo `a0 + a2 P2` must
stay in [0, 1]) are an `ebm.Constraint`, listed in `constraints`.

Everything else is derived from those declarations:

- the parameter container, an `equinox.Module` with one float64 leaf per parameter,
    which `jax.grad`, `jax.jacfwd` and `jax.vmap` reach. `ebm.Params` holds the
    parameters of all of ebm's own terms. A model with a term of its own gets
    `model.Params`, which adds that term's parameters to them (see
    `ebm.EnergyBalanceModel.Params`);
- the checks: a `ValueError` at construction with the value, and `Params.check`
    inside jit with the same words;
- `ebm.fit`'s transforms to unconstrained coordinates;
- the names that `ebm.sweep`, `ebm.ensemble` and `ebm.sensitivity` take, the CLI's
    flags and their help, the netCDF attributes with units, and the docs' table.

Why one flat container of named parameters, and not one sub-Module per term: the
names users already know (`params.D`, `ebm.sweep(D=...)`, `ebm --D 0.3`) stay as
they are, and a parameter that two terms share (`S0` enters every insolation; `Tf`
both albedos and `ebm.ice_edge`) is one leaf, with one gradient. Two terms may
declare the same name only with the same declaration.
"""

import contextlib
import contextvars
import functools
from collections.abc import Sequence
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .._checks import known_value
from .._custom_types import Scalar
from .declarations import (
    Constraint,
    Parameter,
    _number,
    _range_of,
)


def _float_array(x):
    # A value that is not a real number is kept as given, so that `__check_init__`
    # can refuse it with the parameter's name (a converter does not know it): a
    # complex number, a string (numpy would parse "0.5") and a boolean (True would
    # be 1.0) included.
    if isinstance(x, (str, bytes, bool, np.bool_)):
        return x
    try:
        if jnp.iscomplexobj(x) or jnp.asarray(x).dtype == bool:
            return x
        return jnp.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return x


def _concrete(x) -> np.ndarray | None:
    """The value of `x` as numpy, or `None` when it is traced (inside jit or vmap)."""
    if isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x)


class AbstractParams(eqx.Module):
    """A container of declared parameters: one float array field per `Parameter`.

    Its final classes are made by `params_class` from declarations (`ebm.Params`,
    and `model.Params` for a model with terms of its own); see the module docstring.

    **Raises:**

    - `ValueError`: at construction, for a value outside its declared range (every
        parameter must be finite), a value that is not a real number, or an array
        of more than one dimension (a 1-d array is a batch of members, see
        `ebm.sweep`). Values traced under `jit`/`vmap`/`grad` are checked against
        the same ranges by `check`, which every entry point calls.
    """

    declarations: ClassVar[tuple[Parameter, ...]] = ()
    """Every parameter, in field order."""
    constraints: ClassVar[tuple[Constraint, ...]] = ()
    """The ranges that tie several parameters together."""
    ranges: ClassVar[tuple[Constraint, ...]] = ()
    """Every range checked, in order: each parameter's finiteness first (so that a
    NaN is reported as such), then each one's own range, then the constraints."""

    def __check_init__(self):
        for parameter in self.declarations:
            name, value = parameter.name, getattr(self, parameter.name)
            if not isinstance(value, jax.Array):
                raise ValueError(
                    f"`{name}` must be {_one_value(parameter)}, got {value!r}."
                )
            if value.ndim > parameter.ndim + 1:
                raise ValueError(
                    f"`{name}` must be {_one_value(parameter)} (or a batch of "
                    f"members along a first axis, see `ebm.sweep`), got shape "
                    f"{value.shape}."
                )
        for declared in self.ranges:
            values = [_concrete(getattr(self, name)) for name in declared.names()]
            if any(value is None for value in values):
                continue  # traced: `check` tests it inside the entry point
            if not np.all(declared.ok(*values)):
                raise ValueError(declared.message(values))

    def __repr__(self) -> str:
        # The values, as a user set them (`Params(A=210.0, B=2.0, ...)`), where
        # equinox would show only shapes (`A=f64[]`); traced values as equinox does.
        values = [_concrete(getattr(self, name)) for name in self.field_names()]
        if any(value is None for value in values):
            return super().__repr__()
        fields = ", ".join(
            f"{name}={_value_text(value)}"
            for name, value in zip(self.field_names(), values)
        )
        return f"{type(self).__name__}({fields})"

    def __getattr__(self, name: str):
        # Reached only for a name that is not a field: say where parameters come from.
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{type(self).__name__} has no parameter `{name}`. Parameters come from "
            "the model's terms: for a model with a term of your own, build them with "
            "`model.Params(...)`. Known here: "
            f"{', '.join(type(self).field_names())}."
        )

    def check(self):
        """These parameters, with their ranges checked.

        Construction checks concrete values; this checks them again (a value set
        by `eqx.tree_at` skips construction), and the values traced under the
        user's `jit`, `vmap` or `grad`, against the same ranges. Every entry point
        calls it first, outside its compiled program: values known now are checked
        on the host, so the program holds no check (and JAX's persistent cache can
        keep it); traced ones get an `eqx.error_if` in the caller's program. It is
        transparent to differentiation.

        **Returns:**

        `self`, with an `eqx.error_if` attached to every field where a value is
        traced.

        **Raises:**

        - `ValueError`: when a field is not one value (a scalar, or for a profile
            a 1-d array): a batch of parameters runs through `ebm.ensemble` or
            `jax.vmap`; when a value known now is outside its range, as at
            construction.
        - `EquinoxRuntimeError`: when a traced value is outside its range; the
            message names the parameter and the range.
        """
        for parameter in self.declarations:
            shape = jnp.shape(getattr(self, parameter.name))
            if len(shape) > parameter.ndim:
                raise ValueError(
                    f"`{parameter.name}` must be {_one_value(parameter)}, got shape "
                    f"{shape}: run a batch of parameters with `ebm.ensemble` or "
                    "`jax.vmap`."
                )
        known = [known_value(getattr(self, name)) for name in self.field_names()]
        if _CHECKED.get() and any(value is None for value in known):
            return self
        if not any(value is None for value in known):
            values = dict(zip(self.field_names(), known))
            for declared in self.ranges:
                field_values = [np.asarray(values[name]) for name in declared.names()]
                if not np.all(declared.ok(*field_values)):
                    raise ValueError(declared.message(field_values))
            return self
        failed = self._failed_ranges()
        return eqx.branched_error_if(
            self, jnp.any(failed), jnp.argmax(failed), _traced_messages(type(self))
        )

    def _failed_ranges(self) -> Bool[Array, " ranges"]:
        return jnp.stack(
            [
                ~jnp.all(declared.ok(*(getattr(self, n) for n in declared.names())))
                for declared in self.ranges
            ]
        )

    def on_grid(self, name: str, grid) -> Array:
        """Parameter `name` as one value per point of `grid`: a profile's value (a
        scalar broadcast), or a scalar's.

        **Raises:**

        - `ValueError`: (while tracing) when a profile's length is not that of
            `grid`'s bounds or cells, as its declaration says.
        """
        parameter = type(self).declaration(name)
        value = getattr(self, name)
        size = parameter.size(grid)
        if size is None:
            return value
        if jnp.shape(value) not in ((), (size,)):
            raise ValueError(
                f"`{name}` must be a scalar or one value per {parameter.point} of "
                f"the grid, shape ({size},) for {grid.n_lat} cells, got shape "
                f"{jnp.shape(value)}."
            )
        return jnp.broadcast_to(value, (size,))

    def in_range(self) -> Bool[Array, ""]:
        """Whether every parameter is in its declared range, traceably."""
        return ~jnp.any(self._failed_ranges())

    def out_of_range(self, name: str, value) -> str | None:
        """What `name` must be, if these parameters with `name` set to `value`
        (concrete) break a declared range; `None` if they do not, or if a value
        involved is traced."""
        for declared in self.ranges:
            if name not in declared.names():
                continue
            values = [
                _concrete(value) if field == name else _concrete(getattr(self, field))
                for field in declared.names()
            ]
            if any(v is None for v in values):
                continue
            if not np.all(declared.ok(*values)):
                return declared.allowed
        return None

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of every parameter, in declaration order."""
        return tuple(parameter.name for parameter in cls.declarations)

    @classmethod
    def declaration(cls, name: str) -> Parameter:
        """The declaration of parameter `name`.

        **Raises:**

        - `ValueError`: for a name that is not a parameter here.
        """
        for parameter in cls.declarations:
            if parameter.name == name:
                return parameter
        raise ValueError(
            f"`{name}` is not a parameter of {cls.__name__}; known: "
            f"{', '.join(cls.field_names())}."
        )

    @classmethod
    def allowed_range(cls, name: str) -> str:
        """What parameter `name` must be, in words (every declared range of it)."""
        return " and ".join(
            declared.allowed for declared in cls.ranges if declared.name == name
        )

    @classmethod
    def units(cls) -> dict[str, str]:
        """Each parameter's units (UDUNITS), by name."""
        return {parameter.name: parameter.units for parameter in cls.declarations}


_CHECKED = contextvars.ContextVar("ebm_params_checked", default=False)


@contextlib.contextmanager
def params_checked():
    """Inside: `AbstractParams.check` passes traced values as they are.

    For ebm's own compiled programs that call its entry points (a fold's starting
    equilibrium, an ensemble's members, a fit's loss): their caller checked the
    parameters before tracing them, and a check of traced values would compile to
    a host callback, which JAX's persistent cache refuses. Used while tracing only.
    """
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def with_values(params: AbstractParams, values: dict) -> AbstractParams:
    """`params` with the fields named in `values` replaced."""
    names = tuple(values)
    return eqx.tree_at(
        lambda p: tuple(getattr(p, name) for name in names),
        params,
        tuple(jnp.asarray(values[name], float) for name in names),
    )


def check_params(params, name: str = "params"):
    """`params.check()`, once `params` is a parameter container at all.

    **Raises:**

    - `TypeError`: when `params` is not an `ebm.AbstractParams` (a dict, `None`).
    - as `AbstractParams.check`.
    """
    if not isinstance(params, AbstractParams):
        raise TypeError(
            f"`{name}` must be a parameter container (`ebm.Params(...)`, or "
            f"`model.Params(...)` for a model with terms of its own), got "
            f"{type(params).__name__} {params!r:.80}."
        )
    return params.check()


def _value_text(value: np.ndarray) -> str:
    """A parameter's value for `repr`: `0.555`, or a profile or batch in brief."""
    if value.ndim == 0:
        return repr(float(value))
    return np.array2string(value, precision=6, threshold=8, separator=", ")


def _one_value(parameter: Parameter) -> str:
    if parameter.profile is None:
        return "a real scalar"
    return f"a real scalar or a 1-d profile, one value per {parameter.point}"


@functools.cache
def _traced_messages(cls) -> tuple[str, ...]:
    return tuple(declared.traced_message() for declared in cls.ranges)


def merge(
    declarations: Sequence[Parameter], owners: Sequence[str] | None = None
) -> tuple[Parameter, ...]:
    """`declarations` with repeats dropped, in first-seen order.

    **Raises:**

    - `ValueError`: when two declarations share a name but differ.
    """
    owners = ["a term"] * len(declarations) if owners is None else owners
    seen: dict[str, tuple[Parameter, str]] = {}
    for parameter, owner in zip(declarations, owners, strict=True):
        if parameter.name not in seen:
            seen[parameter.name] = (parameter, owner)
        elif seen[parameter.name][0] != parameter:
            first, first_owner = seen[parameter.name]
            raise ValueError(
                f"{owner} declares parameter `{parameter.name}` as {parameter}, but "
                f"{first_owner} declares it as {first}: two terms can share a "
                "parameter only with the same declaration; give yours another name."
            )
    return tuple(parameter for parameter, _ in seen.values())


def _default(parameter: Parameter) -> str:
    """The default, in words: `0.555`, or `0.555 on every cell bound` for a
    profile."""
    if parameter.profile is None:
        return _number(parameter.default)
    return f"{_number(parameter.default)} on every {parameter.point}"


def table(declarations: Sequence[Parameter]) -> str:
    """The declarations as a Markdown table (docstrings and the docs)."""
    rows = "\n".join(
        f"| `{p.name}` | {_default(p)} | {p.units} | {p.allowed} | "
        f"{p.transform} | {p.long_name} |"
        for p in declarations
    )
    return (
        "| name | default | units | allowed | fit transform | meaning |\n"
        "|---|---|---|---|---|---|\n" + rows
    )


def params_class(
    name: str,
    declarations: Sequence[Parameter],
    constraints: Sequence[Constraint] = (),
    base: type[AbstractParams] = AbstractParams,
    doc: str = "",
) -> type[AbstractParams]:
    """A final parameter container with `base`'s parameters and `declarations`.

    One float array field per new declaration (its default, converted to float64),
    after `base`'s fields; its ranges and constraints are checked at construction
    and by `check`. The docstring gets `doc` and the table of every parameter.
    """
    declarations = merge((*base.declarations, *declarations))
    new = declarations[len(base.declarations) :]
    constraints = (*base.constraints, *constraints)
    namespace = {
        "__annotations__": {
            p.name: Scalar if p.profile is None else Float[Array, " profile"]
            for p in new
        },
        **{p.name: eqx.field(default=p.default, converter=_float_array) for p in new},
        "__module__": base.__module__ if base is not AbstractParams else "ebm",
        "__doc__": f"{doc}\n\n{table(declarations)}\n" if doc else table(declarations),
        "declarations": declarations,
        "constraints": constraints,
        "ranges": (
            *(_range_of(p, finite=True) for p in declarations),
            *(
                _range_of(p, finite=False)
                for p in declarations
                if p.allowed != "finite"
            ),
            *constraints,
        ),
    }
    return type(base)(name, (base,), namespace)
