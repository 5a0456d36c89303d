"""`ebm run`: a time integration under a chosen adjoint (or fixed steps with a
checkpoint schedule), with the gradient of the final global mean; plots the
latitude-time (Hovmoller) diagram."""

import argparse

from . import common


NAME = "run"


def _checkpoint(text: str) -> str:
    """`--checkpoint` as given, once the library has read it as a schedule."""
    from .._stepping.checkpoints import resolve_checkpoint

    try:
        resolve_checkpoint(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_parser(subparsers) -> None:
    """`ebm run` and its flags, on `subparsers`."""
    from .._stepping.checkpoints import spellings
    from .._stepping.options import ADJOINTS
    from .._stepping.steppers import STEPPERS
    from .._zonal.start import STARTS

    parser = subparsers.add_parser(
        NAME,
        help="time integration and its gradient",
        description=(
            "Integrate for --years from --start and differentiate the final global "
            "mean with respect to every parameter, under --adjoint (adaptive "
            "diffrax) or, with --dt, fixed steps under --checkpoint."
        ),
    )
    parser.add_argument("--years", type=float, default=10.0, help="length (10)")
    parser.add_argument(
        "--start", default="present", choices=STARTS, help="initial profile (present)"
    )
    parser.add_argument(
        "--adjoint",
        default="recursive",
        choices=list(ADJOINTS),
        help="diffrax adjoint of the adaptive run (recursive)",
    )
    parser.add_argument(
        "--dt",
        type=float,
        default=None,
        help="fixed step, years: fixed-step run (no history, so no plot)",
    )
    parser.add_argument(
        "--stepper",
        default="imex",
        choices=list(STEPPERS),
        help="fixed-step stepper (imex)",
    )
    parser.add_argument(
        "--checkpoint",
        default="sqrt",
        type=_checkpoint,
        metavar="SCHEDULE",
        help="reverse-mode schedule of fixed steps: "
        f"{spellings(text=True)}, e.g. binomial-8 (sqrt)",
    )
    parser.add_argument(
        "--saves", type=int, default=50, help="saved times of the adaptive run (50)"
    )
    common.add_max_steps(
        parser, "step limit of the adaptive run (default: integrate's, from --years)"
    )
    common.add_progress(parser, "percent of --years integrated")
    common.add_common(parser, "run.png")


def run(arguments) -> dict:
    """The run, the gradient of its final global mean, and its plot."""
    import diffrax
    import jax
    import jax.numpy as jnp

    from .._stepping.integrate import integrate, integrate_fixed

    model, params = common.setup(arguments)
    progress = common.progress(arguments)
    years = arguments.years
    if arguments.saves < 2:
        raise ValueError(f"`--saves` must be at least 2, got {arguments.saves}.")
    if arguments.dt is None:
        saveat = diffrax.SaveAt(ts=jnp.linspace(0.0, arguments.years, arguments.saves))

        def solve(params, **kwargs):
            return integrate(
                params,
                years=arguments.years,
                model=model,
                T0=arguments.start,
                adjoint=arguments.adjoint,
                **common.limits(arguments),
                **kwargs,
            )

        trajectory = solve(params, saveat=saveat, progress=progress)
        differentiate = jax.jacfwd if arguments.adjoint == "forward" else jax.grad
        how = f"adjoint {arguments.adjoint}"
    else:
        if arguments.max_steps is not None:
            raise ValueError(
                f"`--max-steps` {arguments.max_steps} limits an adaptive run; a "
                "fixed-step run (--dt) takes exactly --years / --dt steps."
            )
        if not arguments.dt > 0:
            raise ValueError(f"`--dt` must be > 0 years, got {arguments.dt}.")
        steps = round(arguments.years / arguments.dt)
        if steps < 1 or abs(steps * arguments.dt - arguments.years) > 1e-9 * max(
            arguments.years, 1.0
        ):
            raise ValueError(
                f"`--years` {arguments.years} must be a whole number (>= 1) of "
                f"`--dt` {arguments.dt} steps."
            )
        years = steps * arguments.dt

        def solve(params):
            return integrate_fixed(
                params,
                dt=arguments.dt,
                steps=steps,
                model=model,
                T0=arguments.start,
                stepper=arguments.stepper,
                checkpoint=arguments.checkpoint,
            )

        trajectory = solve(params)
        differentiate = jax.grad
        how = (
            f"{steps} fixed {arguments.stepper} steps, checkpoint "
            f"{arguments.checkpoint}"
        )
    gradient = differentiate(lambda p: solve(p).global_mean)(params)
    report = {
        "n_lat": model.grid.n_lat,
        "years": years,
        "terms": common.term_names(arguments),
        "method": how,
        "params": common.floats(params),
        "global_mean_degC": float(trajectory.global_mean),
        "ice_edge_degN": float(trajectory.ice_edge),
        "ice_edge_south_degN": float(trajectory.ice_edge_south),
        "num_steps": int(trajectory.num_steps),
    }
    common.add_derivatives(report, "d_final_global_mean_d", gradient, "degC")

    def plot(path):
        from .._edges.plot import plot_trajectory

        plot_trajectory(trajectory, params=params, path=path)

    return common.finish(
        report,
        trajectory,
        params,
        arguments,
        plot
        if trajectory.Ts is not None
        else "fixed-step runs keep no history to plot (run without --dt)",
    )
