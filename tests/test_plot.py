"""The plot helpers' one convention: the result positionally, then keyword-only
`params=`, `ax=` and `path=`; each draws into the user's axes when given them and
returns the Figure it drew on."""

import inspect

import diffrax
import jax.numpy as jnp
import pytest

import ebm


matplotlib = pytest.importorskip("matplotlib")
import matplotlib.pyplot as plt  # noqa: E402


GRID = ebm.Grid(6)
PARAMS = ebm.Params()
# Each helper and the number of panels it draws.
PANELS = {
    "plot_equilibrium": 1,
    "plot_heat_transport": 1,
    "plot_trajectory": 1,
    "plot_sensitivity": 1,
    "plot_seasonal_cycle": 2,
    "plot_branch": 2,
    "plot_fit": 2,
    "plot_memory_scaling": 2,
    "plot_run": 1,
    "plot_gregory": 1,
}


@pytest.fixture(scope="module")
def arguments():
    """The positional arguments of each helper, from small real results."""
    model = ebm.EnergyBalanceModel(grid=GRID)
    state = ebm.equilibrium(PARAMS, grid=GRID)
    trajectory = ebm.integrate(
        PARAMS,
        grid=GRID,
        years=0.2,
        saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 0.2, 4)),
    )
    cycle = ebm.seasonal_spinup(PARAMS, grid=GRID, years=1, steps_per_year=24)
    branch = ebm.continuation(ebm.Params(S0=1400.0), "S0", stop=1340.0, grid=GRID)
    start = ebm.Params(D=0.4)
    fit = ebm.fit(start, state.T, fit=("D",), grid=GRID, steps=2)
    sensitivity = ebm.sensitivity(PARAMS, "T", names=("D", "A"), grid=GRID)
    rows = [
        {"schedule": schedule, "steps": steps, "temporary_megabytes": megabytes}
        | ({"seconds": 0.01 * steps} if schedule == "forward" else {})
        for schedule in ("forward", "recursive")
        for steps, megabytes in ((10, 1.0), (100, 4.0))
    ]
    layers = ebm.TwoLayerModel()
    run = ebm.integrate(
        layers.Params(),
        model=layers,
        years=5.0,
        solver="exact",
        saveat=diffrax.SaveAt(ts=jnp.arange(6.0)),
    )
    return {
        "plot_run": (run,),
        "plot_gregory": (ebm.gregory(layers.Params(), layers),),
        "plot_equilibrium": (state,),
        "plot_heat_transport": (state, PARAMS, model),
        "plot_trajectory": (trajectory,),
        "plot_sensitivity": (sensitivity, PARAMS),
        "plot_seasonal_cycle": (cycle,),
        "plot_branch": (branch,),
        "plot_fit": (
            fit,
            state.T,
            ebm.equilibrium(start, grid=GRID),
            ebm.equilibrium(fit.params, grid=GRID),
        ),
        "plot_memory_scaling": (rows,),
    }


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("name", PANELS)
def test_options_are_keyword_only(name):
    parameters = inspect.signature(getattr(ebm, name)).parameters
    for option in ("ax", "path"):
        assert parameters[option].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters[option].default is None
    if "params" in parameters and name not in (
        "plot_sensitivity",
        "plot_heat_transport",
    ):
        # Only labels (the Tf line or contour): optional, and named.
        assert parameters["params"].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("name", PANELS)
def test_draws_into_the_users_axes_and_returns_their_figure(arguments, name):
    panels = PANELS[name]
    figure, axes = plt.subplots(1, panels)
    before = [len(ax.get_children()) for ax in figure.axes]
    returned = getattr(ebm, name)(*arguments[name], ax=axes)
    assert returned is figure
    # Something was drawn in every panel the user gave.
    after = [len(ax.get_children()) for ax in figure.axes[:panels]]
    assert all(a > b for a, b in zip(after, before))


@pytest.mark.parametrize("name", PANELS)
def test_makes_a_figure_and_saves_it(arguments, name, tmp_path):
    path = tmp_path / f"{name}.png"
    figure = getattr(ebm, name)(*arguments[name], path=path)
    assert isinstance(figure, matplotlib.figure.Figure)
    assert len(figure.axes) >= PANELS[name]
    assert path.stat().st_size > 1_000


@pytest.mark.parametrize("name", [name for name, n in PANELS.items() if n == 2])
def test_a_two_panel_figure_refuses_one_axes(arguments, name):
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="sequence of 2 matplotlib axes"):
        getattr(ebm, name)(*arguments[name], ax=ax)


def test_branches_overlay_on_the_first_ones_axes(arguments):
    (branch,) = arguments["plot_branch"]
    figure = ebm.plot_branch(branch, label="first")
    lines = len(figure.axes[0].get_lines())
    assert ebm.plot_branch(branch, ax=figure.axes, color="C1") is figure
    assert len(figure.axes) == 2
    assert len(figure.axes[0].get_lines()) > lines
