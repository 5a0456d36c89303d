r"""The sea-ice energy-balance model of Wagner & Eisenman (2015): the surface enthalpy
$E$ (W yr m-2) of one hemisphere, with sea ice that grows and melts and a seasonal
cycle.

The hemisphere is cut into `n` boxes of equal width $\Delta x = 1/n$ in
$x = \sin\phi$ (equal areas), from the equator to the pole. Where $E > 0$ the surface
is open water at $T = E / c_w$; where $E < 0$ it is sea ice of thickness
$h = -E / L_f$, whose surface temperature balances the conduction through the ice
against the surface's energy budget, transport included:

$$k\,\frac{T_m - T_0}{h} = -\left(a S - A - B T_0 + F + \mathcal{D}T\right),
\qquad T = \min(T_0, T_m),$$

with $T_m = 0$ degC (above it the ice surface melts at $T_m$). Insolation, co-albedo
and transport are

$$S(t, x) = S_0 - S_1 x \cos 2\pi t - S_2 x^2, \qquad
a = \begin{cases} a_0 - a_2 x^2 & E > 0 \\ a_i & E < 0 \end{cases}, \qquad
\mathcal{D}T = D\,\partial_x\!\left[(1 - x^2)\,\partial_x T\right],$$

($t$ in years from the winter solstice; no flux through the equator or the pole) and
the enthalpy changes as

$$\partial_t E = a S - A - B T + F + \mathcal{D}T + F_b.$$

**Differentiable switches.** The two switches are blended: the ice cover is
$w = \tfrac12(1 - \tanh(E / \Delta_E))$ (it weighs the co-albedo and the two
temperatures), the ice's enthalpy deficit is $e = \Delta_E \log(1 + e^{-E/\Delta_E})$
(the blended $\max(-E, 0)$, so that $h = e / L_f$), the open water's enthalpy is
$E + e$ (the blended $\max(E, 0)$), and
$\min(T_0, 0) \approx -\Delta_T \log(1 + e^{-T_0/\Delta_T})$:

$$T = (1 - w)\,\frac{E + e}{c_w} + w\,\mathrm{min}_{\Delta_T}\!\left(
\frac{(a S - A + F + \mathcal{D}T)\,e}{B e + k L_f},\ 0\right),$$

with the widths $\Delta_E$ = `enthalpy_width` (W yr m-2) and $\Delta_T$ =
`melt_width` (K). As both go to 0 this is Wagner & Eisenman's model; at 0 the
switches are their steps. Like theirs, $T$ never falls as $E$ rises (with $E / c_w$
in the water's part it would, just below $E = 0$ under a melting surface). $T$
depends on $\mathcal{D}T$, so it is found by Newton's method on a tridiagonal
system (`implicit_temperature`), whose Jacobian, because $T$ rises with $E$ and with
the budget, is an M-matrix (diagonally dominant, positive diagonal): the system has
one solution.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PyTree

from .._checks import as_python_number, known_value
from .._custom_types import Scalar
from .._model.declarations import Parameter
from .._model.parameters import AbstractParams, params_class
from .._model.protocol import AbstractModel, Coordinate, Variable
from .._numerics.tridiagonal import TridiagonalMatrix, probe_tridiagonal
from .stepper import SeaIceEuler
from .surface import (
    NEWTON_FAILED,
    NEWTON_STEPS,
    NEWTON_TOLERANCE,
    SMALLEST_STEP,
    below_melting,
    ice_cover,
    ice_enthalpy,
)


def _positive(name, default, units, long_name, open_=True):
    return Parameter(name, default, units, long_name, lower=0.0, lower_open=open_)


def _fraction(name, default, long_name):
    return Parameter(name, default, "1", long_name, lower=0.0, upper=1.0)


PARAMETERS = (
    _positive("D", 0.6, "W m-2 K-1", "diffusivity of heat transport", open_=False),
    Parameter("A", 193.0, "W m-2", "outgoing longwave radiation at 0 degC"),
    _positive("B", 2.1, "W m-2 K-1", "outgoing longwave radiation per kelvin"),
    _positive("cw", 9.8, "W yr m-2 K-1", "heat capacity of the ocean mixed layer"),
    _positive("S0", 420.0, "W m-2", "annual-mean insolation at the equator", False),
    _positive("S1", 338.0, "W m-2", "amplitude of the seasonal insolation", False),
    _positive("S2", 240.0, "W m-2", "decrease of insolation towards the pole", False),
    _fraction("a0", 0.7, "co-albedo of open water at the equator"),
    _fraction("a2", 0.1, "decrease of open water's co-albedo towards the pole"),
    _fraction("ai", 0.4, "co-albedo of sea ice"),
    Parameter("Fb", 4.0, "W m-2", "heat flux from the deep ocean into the mixed layer"),
    _positive("k", 2.0, "W m-1 K-1", "thermal conductivity of sea ice"),
    _positive("Lf", 9.5, "W yr m-3", "latent heat of fusion of sea ice per volume"),
    Parameter("F", 0.0, "W m-2", "radiative forcing"),
    _positive("enthalpy_width", 0.5, "W yr m-2", "width of the ice switch", False),
    _positive("melt_width", 0.05, "K", "width of the melting switch", False),
)

SeaIceParams = params_class(
    "SeaIceParams",
    PARAMETERS,
    doc=(
        "The parameters of `ebm.SeaIceModel`: Wagner & Eisenman's (2015) Table 1 "
        "and section 2d, and the widths of the blended switches (0: their steps)."
    ),
)


def _centres(n: int) -> np.ndarray:
    """The centres of `n` boxes of equal width on [0, 1]."""
    return (np.arange(n) + 0.5) / n


def with_ends(E) -> Float[Array, " n+2"]:
    """`E` with its values at the equator and the pole, extrapolated linearly from
    the two nearest boxes."""
    equator = E[:1] - 0.5 * (E[1:2] - E[:1])
    pole = E[-1:] + 0.5 * (E[-1:] - E[-2:-1])
    return jnp.concatenate([equator, E, pole])


class SeaIceModel(AbstractModel):
    """Wagner & Eisenman's (2015) sea-ice energy-balance model (see the module
    docstring).

    State: `{"E": surface enthalpy (x)}`, W yr m-2, on `n` boxes of equal width in
    `x = sin(latitude)` from the equator to the pole. The surface temperature
    depends on the time and the parameters as well as on `E`:
    `model.temperature(t, y, params)`. Parameters: `ebm.SeaIceParams`.

    **Arguments:**

    - `n`: the number of boxes (default 100; WE15's figures use 400).
    - `thermodynamics`: `False` removes the sea ice's thermodynamics, as WE15's
        simpler variants do: the surface is at `T = E / cw` everywhere, and ice
        (`E < 0`) only changes the co-albedo (the diffusive Budyko-Sellers model,
        with a seasonal cycle unless `S1 = 0`). Default `True`.
    """

    n: int = eqx.field(static=True, default=100, converter=as_python_number)
    thermodynamics: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        if not isinstance(self.thermodynamics, bool):
            raise ValueError(
                f"`thermodynamics` must be True or False, got {self.thermodynamics!r}."
            )
        if isinstance(self.n, bool) or not isinstance(self.n, int):
            raise ValueError(f"`n` must be an integer >= 2, got {self.n!r}.")
        if self.n < 2:
            raise ValueError(f"`n` must be an integer >= 2, got {self.n}.")

    @property
    def variables(self) -> tuple[Variable, ...]:
        x = tuple(float(v) for v in _centres(self.n))
        latitude = tuple(float(v) for v in np.degrees(np.arcsin(_centres(self.n))))
        coordinate = Coordinate("x", x, "1", "sine of latitude", latitude)
        return (Variable("E", "W yr m-2", "surface enthalpy", ("x",), (coordinate,)),)

    @property
    def diagnostic_variables(self) -> tuple[Variable, ...]:
        """The ice thickness (m; with the ice's thermodynamics) and the ice edge
        (degrees north)."""
        thickness = (
            (Variable("h", "m", "sea-ice thickness", ("x",)),)
            if self.thermodynamics
            else ()
        )
        return (
            *thickness,
            Variable("ice_edge", "degrees_north", "sea-ice edge latitude"),
        )

    def diagnostics(self, t, y: PyTree, params) -> dict[str, Array]:
        del t
        # (arcsin(1) = 90 without ice; files hold no derivatives.)
        values = {"ice_edge": jnp.degrees(jnp.arcsin(self.ice_edge(y)))}
        if self.thermodynamics:
            values["h"] = self.thickness(y, params)
        return values

    @property
    def Params(self) -> type[AbstractParams]:
        return SeaIceParams

    @property
    def x(self) -> Float[Array, " x"]:
        """The boxes' centres, `sin(latitude)`."""
        return jnp.asarray(_centres(self.n))

    @property
    def lat(self) -> Float[Array, " x"]:
        """The boxes' centres, degrees north."""
        return jnp.degrees(jnp.arcsin(self.x))

    def transport(self, T, params) -> Float[Array, " x"]:
        r"""$D\,\partial_x[(1 - x^2)\,\partial_x T]$ by centred differences, W m-2
        per box; no flux through the equator or the pole, so the boxes' mean is 0."""
        flux = self.conductance(params) * (T[1:] - T[:-1])
        zero = jnp.zeros(1, flux.dtype)
        return jnp.concatenate([flux, zero]) - jnp.concatenate([zero, flux])

    def conductance(self, params) -> Float[Array, " n-1"]:
        """`D (1 - x^2) / dx^2` at the boxes' inner bounds, W m-2 K-1."""
        x_bounds = jnp.arange(1, self.n, dtype=float) / self.n
        return params.D * (1.0 - x_bounds**2) * self.n**2

    def transport_matrix(self, params) -> TridiagonalMatrix:
        """`transport` as a tridiagonal matrix, W m-2 K-1."""
        conductance = self.conductance(params)
        zero = jnp.zeros(1, conductance.dtype)
        diagonal = -(
            jnp.concatenate([conductance, zero]) + jnp.concatenate([zero, conductance])
        )
        return TridiagonalMatrix(diagonal, conductance, conductance)

    def insolation(self, t, params) -> Float[Array, " x"]:
        """$S(t, x)$, W m-2 ($t$ in years from the winter solstice)."""
        x = self.x
        return params.S0 - params.S1 * x * jnp.cos(2 * jnp.pi * t) - params.S2 * x**2

    def coalbedo(self, E, params) -> Float[Array, " x"]:
        """The blended co-albedo: `a0 - a2 x^2` over open water, `ai` under ice."""
        water = params.a0 - params.a2 * self.x**2
        cover = ice_cover(E, params.enthalpy_width)
        return water + cover * (params.ai - water)

    def temperature_of(self, E, budget, params) -> Float[Array, " x"]:
        """The blended `T` of enthalpy `E` where the surface's budget, all but the
        outgoing longwave's `B T`, is `budget` (`a S - A + F + transport(T)`,
        W m-2), degC (`E / cw` without the ice's thermodynamics)."""
        if not self.thermodynamics:
            return E / params.cw
        cover = ice_cover(E, params.enthalpy_width)
        e = ice_enthalpy(E, params.enthalpy_width)
        T0 = budget * e / (params.B * e + params.k * params.Lf)
        ice = below_melting(T0, params.melt_width)
        # The open water's enthalpy is the blended `max(E, 0) = E + e`, as the
        # ice's is `e`: with `E` itself, the blend of a negative `E / cw` with a
        # melting surface's 0 would fall as `E` rises below 0.
        return (1.0 - cover) * (E + e) / params.cw + cover * ice

    def implicit_temperature(self, E, absorbed, params, dt=0.0):
        r"""The temperature `T` of the enthalpy that a backward-Euler step of `dt`
        from `E` reaches,

        $$T = \Theta\left(E + \Delta t\,(Q + \mathcal{D}T - B T + F_b),\
        Q + \mathcal{D}T\right)$$

        with `absorbed` $= Q$ (`a S - A + F`, W m-2) and $\Theta$ = `temperature_of`
        (`dt = 0`: the temperature of `E` itself), by Newton's method on its
        tridiagonal Jacobian from the temperature without transport (at most
        `NEWTON_STEPS` + `n` iterations, each step halved while it would increase
        the residual's sum of squares, stopping where no halving does),
        differentiated implicitly; and the largest residual left, K."""
        transport = self.transport_matrix(params)

        def arguments(T):
            divergence = transport.mv(T)
            change = absorbed + divergence - params.B * T + params.Fb
            return E + dt * change, absorbed + divergence

        def residual(T):
            return T - self.temperature_of(*arguments(T), params)

        def jacobian(T):
            E_new, budget = arguments(T)
            ones = jnp.ones_like(T)
            # temperature_of acts box by box: one product with ones is each
            # box's own derivative.
            _, by_E = jax.jvp(
                lambda E: self.temperature_of(E, budget, params), (E_new,), (ones,)
            )
            _, by_budget = jax.jvp(
                lambda b: self.temperature_of(E_new, b, params), (budget,), (ones,)
            )
            coupling = dt * by_E + by_budget
            return TridiagonalMatrix(
                1.0 + dt * by_E * params.B - coupling * transport.diagonal,
                -coupling[1:] * transport.lower,
                -coupling[:-1] * transport.upper,
            )

        def newton(f, T):
            def cond(carry):
                _, r, i, stalled = carry
                limit = NEWTON_STEPS + self.n
                unsolved = jnp.max(jnp.abs(r)) > NEWTON_TOLERANCE
                return unsolved & (i < limit) & ~stalled

            def body(carry):
                T, r, i, _ = carry
                step = jacobian(T).solve(r)
                size = jnp.sum(r**2)

                # Backtracking: where the full step leaves a larger residual (at
                # the ice edge's switches Newton's full steps can circle without
                # converging), halve it until the residual decreases.
                def larger(trial):
                    scale, _, r_new = trial
                    return ~(jnp.sum(r_new**2) < size) & (scale > SMALLEST_STEP)

                def halve(trial):
                    scale = 0.5 * trial[0]
                    T_new = T - scale * step
                    return scale, T_new, f(T_new)

                T_new = T - step
                trial = (jnp.ones((), T.dtype), T_new, f(T_new))
                _, T_new, r_new = jax.lax.while_loop(larger, halve, trial)
                # No step along Newton's direction reduces the residual: the next
                # iteration, from (nearly) here, would not either.
                stalled = ~(jnp.sum(r_new**2) < size)
                return T_new, r_new, i + 1, stalled

            start = (T, f(T), 0, jnp.array(False))
            T, r, _, _ = jax.lax.while_loop(cond, body, start)
            return T, jnp.max(jnp.abs(r))

        def tangent_solve(linear, value):
            return probe_tridiagonal(linear, self.n, value.dtype).solve(value)

        guess = self.temperature_of(E, absorbed, params)
        return jax.lax.custom_root(residual, guess, newton, tangent_solve, has_aux=True)

    def absorbed(self, t, E, params) -> Float[Array, " x"]:
        """`a S - A + F`, W m-2."""
        return (
            self.coalbedo(E, params) * self.insolation(t, params) - params.A + params.F
        )

    def diagnose(self, t, y: PyTree, params) -> tuple[Array, Array]:
        """`(T, largest residual)`: the surface temperature of state `y` at time `t`,
        degC, and what Newton's method left of its equations, K."""
        E = y["E"]
        return self.implicit_temperature(E, self.absorbed(t, E, params), params)

    def temperature(self, t, y: PyTree, params) -> Float[Array, " x"]:
        """The surface temperature of state `y` at time `t`, degC; NaN where Newton's
        method did not solve its equations (`diagnose`)."""
        T, residual = self.diagnose(t, y, params)
        return jnp.where(residual <= NEWTON_FAILED, T, jnp.nan)

    def mean_temperature(self, t, y: PyTree, params) -> Scalar:
        """The hemisphere's mean surface temperature (the boxes have equal areas)."""
        return jnp.mean(self.temperature(t, y, params))

    def __call__(self, t, y: PyTree, params) -> PyTree:
        E = y["E"]
        T = self.temperature(t, y, params)
        absorbed = self.absorbed(t, E, params)
        budget = absorbed - params.B * T + self.transport(T, params) + params.Fb
        return {"E": budget}

    def initial_state(self, params) -> PyTree:
        """WE15's start, `T = 7.5 + 20 (1 - 2 x^2)` degC of open water: ice-free
        but for the boxes poleward of about 56 degrees north."""
        T = 7.5 + 20.0 * (1.0 - 2.0 * self.x**2)
        return {"E": params.cw * T}

    @property
    def switch_widths(self) -> tuple[str, ...]:
        """`("enthalpy_width", "melt_width")`."""
        return ("enthalpy_width", "melt_width")

    def check_steady(self, params) -> None:
        """Refuse a steady state of a model whose insolation changes through the
        year (`S1 != 0`, where known): it would hold one day's sunlight.

        **Raises:**

        - `ValueError`: naming `S1` and the entry points for periodic states.
        """
        S1 = known_value(params.S1)
        if S1 is not None and float(S1) != 0.0:
            raise ValueError(
                "ebm.equilibrium, ebm.continuation and ebm.fold find steady states, "
                f"and with S1={float(S1)} W m-2 the sea-ice model's insolation changes "
                "through the year: its states are periodic (ebm.periodic_equilibrium"
                ", ebm.periodic_continuation). Set S1=0.0 for the paper's variant "
                "without a seasonal cycle."
            )

    def steady_state(self, params, t, start, **options):
        """`None` (Newton's method on the tendency) once `check_steady` holds."""
        del t, start, options
        self.check_steady(params)
        return None

    def walked_model(self, params, parameter: str, t, start):
        """`None` (the model's own tendency is walked) once `check_steady` holds."""
        del parameter, t, start
        self.check_steady(params)
        return None

    def default_stepper(self):
        """`ebm.SeaIceEuler()`: implicit in the temperature, O(n) per step."""
        return SeaIceEuler()

    def default_solver(self):
        """`diffrax.Kvaerno5()`: the transport is stiff."""
        import diffrax

        return diffrax.Kvaerno5()

    def shooting_tolerance(self) -> float:
        """1e-8 W yr m-2 (1e-9 K of open water): the floor of rounding error in a
        year of steps, where the diffusion's implicit solves amplify it."""
        return 1e-8

    def thickness(self, y: PyTree, params) -> Float[Array, " x"]:
        """The (blended) ice thickness `e / Lf`, m."""
        return ice_enthalpy(y["E"], params.enthalpy_width) / params.Lf

    def ice_edge(self, y: PyTree) -> Scalar:
        """The ice edge, `sin` of its latitude: where `E` first crosses 0 from open
        water to ice going poleward, interpolated linearly between the boxes'
        centres (and extrapolated linearly to the equator and the pole). 1 without
        ice, 0 under ice everywhere; continuous and differentiable as the edge
        moves through the boxes.

        **Raises:**

        - `ValueError`: for `y` that is not one state of the model (a batch of
            them: map over it, `jax.vmap(model.ice_edge)(states)`).
        """
        self.check_one_state(y, "y")
        E = with_ends(y["E"])
        x = jnp.concatenate([jnp.zeros(1), self.x, jnp.ones(1)])
        crossing = (E[:-1] > 0) & (E[1:] <= 0)
        fraction = E[:-1] / jnp.where(crossing, E[:-1] - E[1:], 1.0)
        position = x[:-1] + fraction * (x[1:] - x[:-1])
        first = jnp.argmax(crossing)
        edge = jnp.where(jnp.any(crossing), position[first], 1.0)
        return jnp.where(E[0] <= 0, 0.0, edge)

    @property
    def year_start(self) -> str:
        """Time 0 of the year: the insolation `S0 - S1 x cos(2 pi t)` is least at
        the pole then, the northern winter solstice."""
        return "the northern winter solstice"

    def check_one_state(self, y, name: str) -> None:
        """Refuse `y` that is not one state of the model, `{"E": (n,)}`.

        **Raises:**

        - `ValueError`: naming `name` and the shape given.
        """
        shape = np.shape(y["E"]) if isinstance(y, dict) and "E" in y else None
        if shape != (self.n,):
            got = f"shape {shape}" if shape is not None else repr(y)[:80]
            raise ValueError(
                f"`{name}` must be one state of the model, {{'E': shape ({self.n},)}}, "
                f"got {got}. For states along an axis (times, members), map over "
                "it: jax.vmap(model.ice_edge)(states)."
            )

    def ice_edge_latitude(self, t, y: PyTree, params: AbstractParams) -> Scalar:
        """The ice edge, degrees north (`ice_edge` is its sine)."""
        del t, params
        return jnp.rad2deg(jnp.arcsin(self.ice_edge(y)))

    def surface_temperature(self, y: PyTree):
        raise TypeError(
            "SeaIceModel's surface temperature depends on the time and the "
            "parameters as well as on the enthalpy: use "
            "model.temperature(t, y, params)."
        )

    def global_mean(self, y: PyTree):
        raise TypeError(
            "SeaIceModel's surface temperature depends on the time and the "
            "parameters as well as on the enthalpy: use "
            "model.mean_temperature(t, y, params)."
        )

    def toa_imbalance(self, t, y: PyTree, params) -> Scalar:
        """The hemisphere's mean net downward flux at the top of the atmosphere,
        `a S - A - B T + F`, W m-2 (without the deep ocean's `Fb`)."""
        E = y["E"]
        T = self.temperature(t, y, params)
        return jnp.mean(self.absorbed(t, E, params) - params.B * T)

    def heat_content(self, y: PyTree, params) -> Scalar:
        """The hemisphere's mean enthalpy, W yr m-2: it changes at the rate
        `toa_imbalance + Fb` (the flux from the deep ocean adds to it)."""
        del params
        return jnp.mean(y["E"])
