import json
import re

import pytest

from ebm._cli.main import main


def _one_line(err: str) -> bool:
    """Whether stderr holds one line besides the compile notice (which a failure
    after a compilation of over a second follows)."""
    lines = [line for line in err.splitlines() if ": compiling (" not in line]
    return len(lines) == 1 and err.endswith("\n")


def test_equilibrium_json(capsys, tmp_path):
    plot, transport = tmp_path / "profile.png", tmp_path / "transport.png"
    argv = ["equilibrium", "--D", "0.4", "--json", "--plot", str(plot)]
    assert main([*argv, "--transport-plot", str(transport)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert transport.stat().st_size > 10_000
    assert report["params"]["D"] == 0.4
    assert report["stable"] and report["residual_W_m2"] < 1e-9
    assert 0 < report["ice_edge_degN"] < 90
    assert report["d_global_mean_d"]["D"] > 0  # more transport warms the poles' ice
    assert report["d_global_mean_d_units"]["D"] == "(K) (W m-2 K-1)-1"
    assert report["d_global_mean_d_units"]["eccentricity"] == "K"
    assert plot.stat().st_size > 10_000


def test_equilibrium_text(capsys):
    assert main(["equilibrium", "--no-plot", "--start", "cold"]) == 0
    out = capsys.readouterr().out
    assert "global mean temperature" in out and "d/dD" in out
    # Each derivative with its units.
    assert re.search(r"d/dS0 +\S+ \(K\) \(W m-2\)-1", out)


def test_other_subcommands_print_numbers_to_six_figures(capsys):
    # Not Python's reprs of dicts and floats (`fitted: {'D': 0.2999999999999923}`).
    argv = ["fit", "--n-lat", "12", "--no-plot", "--truth", "D=0.3"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "fitted: D 0.3" in lines and "initial: D 0.555" in lines
    assert not any("{" in line for line in lines)


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["equilibrium", "--no-plot", "--B", "0"], "`B` must be > 0"),
        (["equilibrium", "--no-plot", "--n-lat", "1"], "`n_lat` must be an integer"),
    ],
)
def test_bad_values_give_one_line(capsys, argv, expected):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and _one_line(err)


def test_abbreviated_flags_are_refused_and_the_version_is_printed(capsys):
    # `--ice` was read as `--ice-width`: a later `--ice-...` flag would change it.
    with pytest.raises(SystemExit) as info:
        main(["equilibrium", "--no-plot", "--ice", "0.5"])
    assert info.value.code == 2
    assert "unrecognized arguments: --ice 0.5" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("ebm ")


def test_bad_choice_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["equilibrium", "--start", "tropical"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and _one_line(err)


# The subcommands that solve the model (each takes the model's flags), and all.
MODEL_SUBCOMMANDS = [
    "equilibrium",
    "run",
    "fit",
    "sensitivity",
    "hysteresis",
    "seasonal",
    "memory",
]
# In `ebm --help`'s order; `transient` solves the global ocean-layer models, `seaice`
# the sea-ice model.
SUBCOMMANDS = [
    *MODEL_SUBCOMMANDS[:-1],
    "transient",
    "calibrate",
    "emulate",
    "project",
    "seaice",
    "memory",
    "cache",
]


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_has_help(capsys, command):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--json" in out
    if command in MODEL_SUBCOMMANDS:
        assert "--netcdf" in out and "--D X" in out
    elif command == "transient":
        assert "--netcdf" in out and "--feedback X" in out and "--kappa3 X" in out
    elif command == "seaice":
        assert "--netcdf" in out and "--enthalpy-width X" in out
    elif command == "calibrate":
        assert "--netcdf" in out and "--noise-correlation RHO" in out
    elif command == "emulate":
        assert "--table FILE.csv" in out and "--all" in out
    elif command == "project":
        assert "--netcdf" in out and "--draws FILE.nc" in out
    else:
        assert "--clear" in out


def test_the_subcommands_are_the_modules_listed_once():
    from ebm._cli.main import COMMANDS

    assert list(COMMANDS) == SUBCOMMANDS
    for name, command in COMMANDS.items():
        assert command.NAME == name and command.__name__ == f"ebm._cli.{name}"
        assert callable(command.add_parser) and callable(command.run)


def _text_spellings():
    """Every schedule spelling the library reads from text, from its table."""
    from ebm._stepping.checkpoints import CHECKPOINTS

    for name, schedule in CHECKPOINTS.items():
        yield name
        yield from (alias for alias, _ in schedule.aliases)
        if schedule.size_field is not None:
            yield from (f"{name}-3", f"{name}:3", f"{name}-default")


@pytest.mark.parametrize("spelling", list(_text_spellings()))
def test_run_checkpoint_takes_every_library_spelling(spelling):
    from ebm._cli.main import _parser

    arguments = _parser().parse_args(["run", "--checkpoint", spelling])
    assert arguments.checkpoint == spelling


def test_run_help_lists_every_schedule_and_a_bad_one_is_a_usage_error(capsys):
    from ebm._stepping.checkpoints import CHECKPOINTS

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for name, schedule in CHECKPOINTS.items():
        assert name in out
        assert all(alias in out for alias, _ in schedule.aliases)
    with pytest.raises(SystemExit) as info:
        main(["run", "--checkpoint", "revolve"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--checkpoint" in err and "`checkpoint` must be" in err and _one_line(err)


def test_name_choices_are_the_librarys_tables():
    from ebm import EnergyBalanceModel
    from ebm._cli.main import _parser
    from ebm._stepping.options import ADJOINTS
    from ebm._stepping.steppers import STEPPERS
    from ebm._zonal.start import STARTS

    def choices(command, option):
        subparsers = _parser()._subparsers._group_actions[0]
        (action,) = (
            action
            for action in subparsers.choices[command]._actions
            if option in action.option_strings
        )
        return list(action.choices)

    assert choices("run", "--stepper") == list(STEPPERS)
    assert choices("run", "--adjoint") == list(ADJOINTS)
    assert choices("sensitivity", "--output") == list(EnergyBalanceModel.outputs)
    for command in ("equilibrium", "run", "sensitivity", "hysteresis"):
        assert choices(command, "--start") == list(STARTS)


def test_run_with_a_sized_schedule_gives_the_default_schedules_gradient(capsys):
    argv = ["run", "--n-lat", "6", "--years", "1", "--dt", "0.05", "--no-plot"]
    sized = _json(capsys, [*argv, "--checkpoint", "binomial-4"])
    assert sized["method"] == "20 fixed imex steps, checkpoint binomial-4"
    default = _json(capsys, argv)
    assert default["method"].endswith("checkpoint sqrt")
    for name, value in default["d_final_global_mean_d"].items():
        assert sized["d_final_global_mean_d"][name] == pytest.approx(
            value, rel=1e-10, abs=1e-14
        )


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_run_writes_plot_and_netcdf(capsys, tmp_path):
    import ebm

    plot, netcdf = tmp_path / "run.png", tmp_path / "run.nc"
    argv = ["run", "--n-lat", "12", "--years", "1", "--saves", "5"]
    report = _json(capsys, [*argv, "--plot", str(plot), "--netcdf", str(netcdf)])
    assert report["method"] == "adjoint recursive"
    assert report["d_final_global_mean_d"]["A"] < 0
    assert plot.stat().st_size > 10_000
    dataset = ebm.load(netcdf)
    assert dataset["T_history"].dims == ("time", "lat")
    assert dataset.sizes["time"] == 5
    assert float(dataset["global_mean"]) == pytest.approx(report["global_mean_degC"])


def test_fit_recovers_a_synthetic_truth(capsys, tmp_path):
    argv = ["fit", "--n-lat", "12", "--truth", "D=0.4", "--no-plot"]
    report = _json(capsys, argv)
    assert report["fitted"]["D"] == pytest.approx(0.4, rel=1e-6)
    assert report["converged"]


def test_hysteresis_traces_the_whole_loop_by_default(capsys):
    # Without --S0 and --stop the walk starts ice-free at 2000 W m-2 and passes
    # all four folds of the snowball loop on its way to 1000 (from today's S0 it
    # would find only the snowball fold).
    report = _json(capsys, ["hysteresis", "--n-lat", "36", "--no-plot"])
    assert report["from"] == 2000.0 and report["stop"] == 1000.0
    assert len(report["folds"]) == 4


def test_hysteresis_and_seasonal_and_memory(capsys, tmp_path):
    import ebm

    netcdf = tmp_path / "branch.nc"
    report = _json(
        capsys,
        ["hysteresis", "--n-lat", "12", "--S0", "1500", "--stop", "1200"]
        + ["--no-plot", "--netcdf", str(netcdf)],
    )
    assert len(report["folds"]) >= 1
    assert ebm.load(netcdf)["fold_value"].size == len(report["folds"])
    netcdf = tmp_path / "cycle.nc"
    argv = ["seasonal", "--n-lat", "12", "--steps-per-year", "24", "--no-plot"]
    report = _json(capsys, [*argv, "--netcdf", str(netcdf)])
    assert report["residual_K"] < 1e-9
    assert report["stepper"] == "rosenbrock" and report["step_error_K"] < 10
    # One meaning for one name: the range is max - min, as in the library and the
    # file; the extremes are their own field.
    cycle = ebm.load(netcdf)
    for edge in ("ice_edge", "ice_edge_south"):
        low, high = report[f"{edge}_min_max_degN"]
        assert report[f"{edge}_range_deg"] == pytest.approx(high - low)
        assert float(cycle[f"{edge}_range"]) == pytest.approx(high - low)
    # The time-stepping check's tolerance, from the command line: refused, with
    # its numbers.
    assert main([*argv, "--error-tolerance", "1e-6"]) == 1
    # One line (after the compile notice, if there was one).
    failure = capsys.readouterr().err.strip().splitlines()[-1]
    assert failure.startswith("ebm: the solve failed:")
    assert "`error_tolerance` = 1e-06 K with Rosenbrock2" in failure
    assert ebm.load(netcdf)["T"].dims == ("time", "lat")
    netcdf = tmp_path / "memory.nc"
    argv = ["memory", "--n-lat", "12", "--steps", "50", "--repeats", "1"]
    report = _json(capsys, [*argv, "--no-plot", "--netcdf", str(netcdf)])
    assert {row["schedule"] for row in report["rows"]} >= {"none", "sqrt"}
    table = ebm.load(netcdf)
    # The forward pass first, then each schedule's gradient.
    assert list(table["schedule_name"].values) == ["forward", "none", "step", "sqrt"]
    assert (table["temporary_megabytes"].values > 0).all()


def test_fit_to_a_netcdf_target_and_scalar_sensitivity(capsys, tmp_path):
    truth = tmp_path / "truth.nc"
    argv = ["equilibrium", "--n-lat", "12", "--no-plot", "--netcdf", str(truth)]
    assert main(argv) == 0
    capsys.readouterr()
    # The grid comes from the target file (12 cells), not the default 60.
    report = _json(capsys, ["fit", "--target", str(truth), "--D", "0.4", "--no-plot"])
    assert report["n_lat"] == 12
    assert report["fitted"]["D"] == pytest.approx(0.555, rel=1e-6)
    argv = ["sensitivity", "--n-lat", "12", "--output", "global_mean", "--names", "D"]
    report = _json(capsys, [*argv, "--plot", str(tmp_path / "s.png")])
    assert report["jacobian"]["D"] > 0
    assert "only --output T" in report["no_plot"]


@pytest.mark.parametrize(
    "argv, status, expected",
    [
        (["fit", "--truth", "Q=1", "--no-plot"], 2, "`--truth` takes NAME=VALUE"),
        (["run", "--saves", "1", "--no-plot"], 2, "`--saves` must be at least 2"),
        (["run", "--dt", "0", "--no-plot"], 2, "`--dt` must be > 0"),
        (["run", "--years", "1", "--dt", "0.3", "--no-plot"], 2, "whole number"),
        (["memory", "--schedules", "binomial:x"], 2, "`--schedules` takes NAME"),
        (["memory", "--schedules", "binomial-0"], 2, "`--schedules` takes NAME"),
        (["memory", "--schedules", "zigzag", "--no-plot"], 2, "`checkpoint`"),
        (["equilibrium", "--netcdf", "/no/such/folder/x.nc"], 2, "folder"),
        (["hysteresis", "--parameter", "D", "--no-plot"], 2, "`--stop` is needed"),
        (
            ["run", "--n-lat", "12", "--years", "5", "--adjoint", "backsolve"]
            + ["--no-plot", "--no-progress"],
            1,
            "adjoint='backsolve' integrates the model backwards",
        ),
    ],
)
def test_failures_are_one_line(capsys, argv, status, expected):
    assert main(argv) == status
    err = capsys.readouterr().err
    assert expected in err and _one_line(err)


def test_fit_target_cut_to_fewer_latitudes_is_refused(capsys, tmp_path):
    import ebm

    grid = ebm.Grid(12)
    full = ebm.to_dataset(ebm.equilibrium(ebm.Params(), grid=grid), ebm.Params())
    cut = tmp_path / "cut.nc"
    # One latitude dropped: used to be fitted as an 11-cell pole-to-pole grid.
    ebm.save(full.isel(lat=slice(0, 11)), cut)
    assert main(["fit", "--target", str(cut), "--no-plot", "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert str(cut) in err and "regular pole-to-pole grid of 11 cells" in err
    assert _one_line(err)


def _unwritable_folder(tmp_path):
    import os

    if os.geteuid() == 0:
        # Root writes through permission bits; sysfs refuses new files even so.
        return "/sys"
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return str(folder)


@pytest.mark.parametrize("option", ["--plot", "--netcdf"])
def test_unwritable_output_is_refused_before_the_solve(
    capsys, tmp_path, monkeypatch, option
):
    import ebm._steady.equilibrium

    def no_solve(*args, **kwargs):
        raise AssertionError("the solve ran before the output path was checked")

    monkeypatch.setattr(ebm._steady.equilibrium, "equilibrium", no_solve)
    path = f"{_unwritable_folder(tmp_path)}/out.file"
    assert main(["equilibrium", "--n-lat", "6", option, path]) == 2
    err = capsys.readouterr().err
    assert f"`{option}` {path}: cannot write in the folder" in err
    assert _one_line(err)


def test_max_steps_reaches_the_solver(capsys):
    argv = ["--n-lat", "6", "--no-plot", "--json"]
    # One step cannot finish a year-long adaptive run, nor converge a root-find.
    assert (
        main(["run", "--years", "1", "--max-steps", "1", "--no-progress", *argv]) == 1
    )
    assert "maximum number of solver steps" in capsys.readouterr().err
    assert main(["equilibrium", "--max-steps", "1", *argv]) == 1
    capsys.readouterr()
    assert main(["run", "--dt", "0.1", "--years", "1", "--max-steps", "9", *argv]) == 2
    assert "`--max-steps` 9 limits an adaptive run" in capsys.readouterr().err


def test_cli_says_when_it_is_compiling(capsys):
    """A compilation that lasts past the delay is announced once on stderr; running
    a compiled program is not."""
    import jax
    import jax.numpy as jnp

    from ebm._cli.main import _CompileNotice

    def chain(x):
        # Each step uses the last once: tracing and compiling take a fraction of a
        # second, which the watcher, sampling every millisecond, sees.
        for k in range(300):
            x = jnp.sin(x) * (1.0 + k / 1000) + k
        return x

    fn = jax.jit(chain)
    with _CompileNotice("equilibrium", delay=0.0, interval=0.001) as notice:
        jax.block_until_ready(fn(jnp.linspace(0.0, 1.0, 16)))
    assert notice.said
    assert capsys.readouterr().err.startswith("ebm equilibrium: compiling")
    with _CompileNotice("equilibrium", delay=0.0, interval=0.001) as notice:
        for _ in range(200):
            jax.block_until_ready(fn(jnp.linspace(0.0, 2.0, 16)))
    assert not notice.said
    assert capsys.readouterr().err == ""


def test_term_names_are_derived_from_the_class_names():
    import ebm
    from ebm._zonal.catalogue import cli_name, selectable, term_classes

    assert cli_name(ebm.GreyBodyLongwave) == "grey-body"
    assert cli_name(ebm.CO2Forcing) == "co2"
    assert cli_name(ebm.SubgridIceAlbedo) == "subgrid-ice"
    assert cli_name(ebm.P2Insolation) == "p2"
    # Every final term that ebm exports is found by walking ebm._zonal.
    exported = {
        value
        for value in vars(ebm).values()
        if isinstance(value, type)
        and issubclass(value, ebm.AbstractTerm)
        and not value.__name__.startswith("Abstract")
    }
    assert exported <= set(term_classes())
    # Terms a name alone cannot build are found, but not offered.
    assert ebm.PrescribedAlbedo in term_classes()
    assert ebm.PrescribedAlbedo not in selectable("albedo").values()
    assert ebm.LandOceanHeatCapacity not in selectable("heat_capacity").values()


def _choices(command, option):
    from ebm._cli.main import _parser

    subparsers = _parser()._subparsers._group_actions[0]
    (action,) = (
        action
        for action in subparsers.choices[command]._actions
        if option in action.option_strings
    )
    return action


@pytest.mark.parametrize("command", MODEL_SUBCOMMANDS)
def test_help_lists_the_terms_and_their_parameters(capsys, command):
    from ebm._zonal.catalogue import selectable

    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag, kind in [("--longwave", "longwave"), ("--forcing-term", "forcing")]:
        assert f"{flag} NAME" in out
        assert list(_choices(command, flag).choices)[: len(selectable(kind))] == list(
            selectable(kind)
        )
    assert "grey-body (GreyBodyLongwave)" in out and "co2 (CO2Forcing)" in out
    assert "fixed (this model's equilibrium's albedo" in out
    # A parameter of a term that is not a default says its units and its term.
    assert "--CO2 X atmospheric CO2 concentration (280, ppm; in (0, 1e+06] ppm" in out
    assert "needs --forcing-term co2" in out
    assert "--emissivity X" in out and "needs --longwave grey-body" in out


def test_seasonal_defaults_to_the_daily_insolation():
    assert _choices("seasonal", "--insolation").default == "daily"
    assert _choices("equilibrium", "--insolation").default == "p2"


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--emissivity", "0.7"], "`--emissivity` needs --longwave grey-body"),
        (["--CO2", "560"], "`--CO2` needs --forcing-term co2: it is a parameter of"),
        (
            ["--longwave", "grey-body", "--B", "1.5"],
            "`--B` needs --longwave linear",
        ),
        (
            ["--obliquity", "30"],
            "`--obliquity` needs --insolation annual-mean or --insolation daily",
        ),
    ],
)
def test_a_parameter_of_a_term_not_selected_is_refused(capsys, flags, expected):
    assert main(["equilibrium", "--n-lat", "6", "--no-plot", *flags]) == 2
    err = capsys.readouterr().err
    assert expected in err and _one_line(err)


def test_options_take_hyphens_and_underscores(capsys):
    # Parameters were `--ice_width` (also `--ice-width`) but settings `--n-lat`
    # only: either spelling is read for every option now.
    argv = ["equilibrium", "--no-plot", "--ice_width", "0.5", "--water-depth=20"]
    report = _json(capsys, [*argv, "--n_lat", "6"])
    assert report["n_lat"] == 6
    assert report["params"]["ice_width"] == 0.5
    assert report["params"]["water_depth"] == 20.0
    with pytest.raises(SystemExit):
        main(["equilibrium", "--help"])
    assert "--ice-width X" in capsys.readouterr().out


def test_an_unknown_term_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["equilibrium", "--longwave", "cubic"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'cubic'" in err and "grey-body" in err and _one_line(err)


def test_grey_body_equilibrium_is_the_librarys(capsys, tmp_path):
    import jax
    import numpy as np

    import ebm

    netcdf = tmp_path / "grey.nc"
    argv = ["equilibrium", "--n-lat", "12", "--longwave", "grey-body"]
    argv += ["--emissivity", "0.68", "--no-plot", "--netcdf", str(netcdf)]
    report = _json(capsys, argv)
    model = ebm.EnergyBalanceModel(grid=ebm.Grid(12), longwave=ebm.GreyBodyLongwave())
    params = model.Params(emissivity=0.68)
    state = ebm.equilibrium(params, model=model)
    gradient = jax.grad(lambda p: ebm.equilibrium(p, model=model).global_mean)(params)
    assert report["terms"]["longwave"] == "grey-body"
    assert report["params"]["emissivity"] == 0.68 and report["params"]["tau"] == 0.95
    assert report["global_mean_degC"] == pytest.approx(
        float(state.global_mean), rel=0, abs=1e-10
    )
    for name in ("emissivity", "tau", "D"):
        assert report["d_global_mean_d"][name] == pytest.approx(
            float(getattr(gradient, name)), rel=1e-10
        )
    dataset = ebm.load(netcdf)
    assert dataset.attrs["param_emissivity"] == 0.68
    assert dataset.attrs["param_emissivity_units"] == "1"
    # The grey body's outgoing longwave, not the linear one, is written.
    olr = np.asarray(model.outgoing_longwave(state.T, params))
    assert dataset["outgoing_longwave"].values == pytest.approx(olr, rel=1e-12)


def test_sensitivity_reports_the_climate_sensitivity_per_doubling(capsys, tmp_path):
    import math

    import ebm

    argv = ["sensitivity", "--n-lat", "12", "--forcing-term", "co2", "--CO2", "400"]
    argv += ["--B", "1.6", "--no-plot"]
    # Albedo held at the equilibrium's: the no-feedback sensitivity, 5.35 ln 2 / B.
    netcdf = tmp_path / "co2.nc"
    held = _json(capsys, [*argv, "--albedo", "fixed", "--netcdf", str(netcdf)])
    per_doubling = held["climate_sensitivity_per_CO2_doubling_K"]
    assert per_doubling == pytest.approx(5.35 * math.log(2.0) / 1.6, rel=1e-9)
    assert per_doubling == pytest.approx(
        math.log(2.0) * 400 * held["d_global_mean_d_CO2_K_per_ppm"], rel=1e-12
    )
    assert not any(held["jacobian"]["a0"])  # the albedo does not move
    dataset = ebm.load(netcdf)
    assert dataset.attrs["param_CO2"] == 400.0
    assert dataset.attrs["param_CO2_units"] == "ppm"
    # With the ice-albedo feedback the ice retreats and the warming is larger.
    free = _json(capsys, [*argv, "--output", "global_mean", "--names", "CO2"])
    assert free["climate_sensitivity_per_CO2_doubling_K"] > 1.001 * per_doubling
    assert free["jacobian"]["CO2"] == free["d_global_mean_d_CO2_K_per_ppm"]


def test_no_per_doubling_sensitivity_without_a_co2_term(capsys):
    argv = ["sensitivity", "--n-lat", "6", "--output", "global_mean", "--names", "B"]
    report = _json(capsys, [*argv, "--no-plot"])
    assert "climate_sensitivity_per_CO2_doubling_K" not in report


def test_a_profile_parameter_takes_a_number_or_a_list():
    import argparse
    import dataclasses

    import numpy as np

    import ebm
    from ebm._cli.common import _parse_value

    @dataclasses.dataclass(frozen=True)
    class ProfileParameter(ebm.Parameter):
        ndim: int = 1

    profile = ProfileParameter("D_profile", 0.5, "W m-2 K-1", "a profile")
    assert _parse_value(profile)("0.3") == 0.3
    assert np.array_equal(_parse_value(profile)("0.1,0.2"), [0.1, 0.2])
    scalar = ebm.Parameter("D", 0.5, "W m-2 K-1", "a number")
    assert _parse_value(scalar)("0.3") == 0.3
    with pytest.raises(argparse.ArgumentTypeError, match="expected a number"):
        _parse_value(scalar)("0.1,0.2")


def test_memory_table_units_are_udunits(tmp_path):
    import ebm
    from ebm._cli.memory import _memory_netcdf

    rows = [
        {
            "schedule": "forward",
            "steps": 10,
            "temporary_megabytes": 0.5,
            "seconds": 1.0,
        },
        {"schedule": "sqrt", "steps": 10, "temporary_megabytes": 0.25, "seconds": 2.0},
    ]
    path = tmp_path / "memory.nc"
    _memory_netcdf(rows, ebm.Params(), path)
    table = ebm.load(path)
    # UDUNITS-2 names the byte only in full: "MB" would be a megabel.
    assert table["temporary_megabytes"].attrs["units"] == "megabyte"
    assert table["seconds"].attrs["units"] == "s"
    assert list(table["temporary_megabytes"].values[:, 0]) == [0.5, 0.25]


@pytest.mark.parametrize("command", ["run", "fit", "hysteresis", "seasonal"])
def test_long_subcommands_take_progress_flags(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "--progress" in text and "--no-progress" in text


def test_progress_goes_to_stderr_and_leaves_the_json_alone(capfd):
    argv = ["seasonal", "--n-lat", "12", "--steps-per-year", "24", "--no-plot"]
    assert main([*argv, "--json"]) == 0
    quiet = capfd.readouterr()
    assert "%|" not in quiet.err
    assert main([*argv, "--json", "--progress"]) == 0
    shown = capfd.readouterr()
    assert "100.00%|" in shown.err
    assert json.loads(shown.out) == json.loads(quiet.out)
